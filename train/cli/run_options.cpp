#include <cmath>
#include <filesystem>

#include "train/cli/command.h"
#include "train/tokenizer/vocab.h"

namespace hr {

namespace {

CLI::Validator number_check(const std::string& what, bool (*ok)(double)) {
  return CLI::Validator(
      [what, ok](std::string& text) -> std::string {
        double v = 0;
        if (CLI::detail::lexical_cast(text, v) && std::isfinite(v) && ok(v)) return "";
        return "must be " + what + ", got '" + text + "'";
      },
      what);
}

}  // namespace

CLI::Validator positive_number() {
  return number_check("a number > 0", [](double v) { return v > 0; });
}
CLI::Validator non_negative_number() {
  return number_check("a number >= 0", [](double v) { return v >= 0; });
}
CLI::Validator finite_number() {
  return number_check("a finite number", [](double) { return true; });
}

void add_run_options(CLI::App* cmd, std::string& run_dir, std::string& which) {
  cmd->add_option("--run", run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--checkpoint", which, "best | last")->check(CLI::IsMember({"best", "last"}));
}

void add_precision_option(CLI::App* cmd, std::vector<std::string>& overrides) {
  cmd->add_option_function<std::string>(
         "--precision", [&overrides](const std::string& p) { overrides.push_back("train.precision=" + p); },
         "f32 | bf16: the matmuls' precision (default: the run's train.precision)")
      ->check(CLI::IsMember({"f32", "bf16"}));
}

int64_t run_vocab_size(const std::string& config) {
  const std::filesystem::path path(config), vocab = path.parent_path() / "vocab.txt";
  if (path.filename() != "config.yaml" || !std::filesystem::exists(vocab)) return 0;
  return static_cast<int64_t>(Vocab::load(vocab.string()).size());
}

}  // namespace hr
