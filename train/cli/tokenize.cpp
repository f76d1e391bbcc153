// headroom tokenize --run RUN [--special] [--jsonl]: the run's tokenizer on texts read from stdin (one a line, or
// JSONL {"text": ...}), one JSON object a line: {"ids": [...], "tokens": [...]}. Word pieces only, untruncated;
// --special adds [CLS] and [SEP] around them as a single text is fed to the model.
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "kernels/base/error.h"
#include "train/cli/command.h"
#include "train/data/json_line.h"
#include "train/run/run_config.h"
#include "train/tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

struct TokenizeArgs {
  std::string run_dir;
  bool special = false, jsonl = false;
};

int tokenize_command(const TokenizeArgs& a) {
  const std::string& dir = a.run_dir;
  HR_CHECK(fs::exists(dir + "/config.yaml"), dir + " is not a headroom run directory (no config.yaml)");
  const RunConfig rc = load_run_config(dir + "/config.yaml", {}, /*check_files=*/false);
  HR_CHECK(fs::exists(dir + "/vocab.txt"), dir + "/vocab.txt is missing: the run's vocabulary cannot be rebuilt");
  const Tokenizer tok(Vocab::load(dir + "/vocab.txt"), BasicTokenizer(rc.tokenizer.lower_case, rc.tokenizer.strip_accents));
  const Vocab& vocab = tok.vocab();
  int64_t line_no = 0;
  for (std::string line; std::getline(std::cin, line);) {
    ++line_no;
    std::string text = line;
    if (a.jsonl) {
      std::optional<std::string> t = stdin_jsonl_text(line, line_no);
      if (!t) continue;
      text = std::move(*t);
    }
    std::vector<int32_t> ids = tok.encode(text).ids;
    if (a.special) {
      ids.insert(ids.begin(), vocab.cls_id());
      ids.push_back(vocab.sep_id());
    }
    nlohmann::json tokens = nlohmann::json::array();
    for (int32_t id : ids) tokens.push_back(vocab.token(id));
    std::cout << nlohmann::json{{"ids", ids}, {"tokens", tokens}}.dump(-1, ' ', false,
                                                                      nlohmann::json::error_handler_t::replace)
              << "\n";
  }
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  auto* cmd = app.add_subcommand("tokenize", "a run's WordPiece ids and tokens of texts on stdin, one JSON line each");
  cmd->add_option("--run", a->run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_flag("--special", a->special, "add [CLS] and [SEP] around each text's pieces");
  cmd->add_flag("--jsonl", a->jsonl, "stdin is JSONL {\"text\": ...} (default: one text a line)");
  return {cmd, [a] { return tokenize_command(*a); }};
}

}  // namespace hr
