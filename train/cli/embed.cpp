// headroom embed --run RUN [--pooling none|cls|mean] [--normalize] --out FILE.safetensors: the encoder's output for
// texts read from stdin (one a line, or JSONL {"text": ...} with --jsonl), as [CLS] text [SEP] truncated to the run's
// length (data.max_seq_len, else model.max_len). --pooling none writes last_hidden_state (N, T, D) with the rows padded
// to the longest; cls and mean (masked mean over [CLS] .. [SEP], as sentence-transformers pools) write embeddings
// (N, D). input_ids and attention_mask (N, T) are written beside either. Texts are encoded in batches of --batch-size,
// each padded to its own longest row, as a served model sees them.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "framework/autograd.h"
#include "framework/safetensors.h"
#include "kernels/base/error.h"
#include "train/cli/command.h"
#include "train/data/json_line.h"
#include "train/run/load_encoder.h"
#include "train/run/trainer.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

struct EmbedArgs {
  std::string run_dir, which = "best", pooling = "none", out;
  bool normalize = false, jsonl = false;
  int64_t batch_size = 32;
};

// The texts of stdin: every line, or with --jsonl each line's "text" (blank lines skipped). A line that is not a JSON
// object with a string "text" is a UsageError naming the line.
std::vector<std::string> read_texts(bool jsonl) {
  std::vector<std::string> texts;
  int64_t line_no = 0;
  for (std::string line; std::getline(std::cin, line);) {
    ++line_no;
    if (!jsonl) {
      texts.push_back(line);
    } else if (std::optional<std::string> text = stdin_jsonl_text(line, line_no)) {
      texts.push_back(std::move(*text));
    }
  }
  return texts;
}

int embed_command(const EmbedArgs& a) {
  LoadedEncoder enc = load_encoder(a.run_dir, a.which);
  EncoderModel& model = *enc.model;
  const Vocab& vocab = enc.tokenizer->vocab();
  const int64_t max_len = enc.config.data.max_seq_len > 0 ? enc.config.data.max_seq_len : model.max_len();
  const std::vector<std::string> texts = read_texts(a.jsonl);
  HR_CHECK(!texts.empty(), "embed: no texts on stdin");

  std::vector<std::vector<int32_t>> rows;
  int64_t truncated = 0, T = 0;
  for (const auto& text : texts) {
    std::vector<int32_t> ids = enc.tokenizer->encode(text).ids;
    if (static_cast<int64_t>(ids.size()) > max_len - 2) {
      ids.resize(static_cast<size_t>(max_len - 2));
      ++truncated;
    }
    ids.insert(ids.begin(), vocab.cls_id());
    ids.push_back(vocab.sep_id());
    T = std::max<int64_t>(T, static_cast<int64_t>(ids.size()));
    rows.push_back(std::move(ids));
  }
  if (truncated > 0) std::cerr << "note: " << truncated << " texts truncated to " << max_len << " tokens\n";

  const int64_t N = static_cast<int64_t>(rows.size()), D = model.d_model();
  const bool pooled = a.pooling != "none";
  std::vector<float> out(static_cast<size_t>(pooled ? N * D : N * T * D), 0.f);
  std::vector<int64_t> ids(static_cast<size_t>(N * T), vocab.pad_id()), mask(static_cast<size_t>(N * T), 0);
  model.eval();
  NoGradGuard no_grad;
  for (int64_t b0 = 0; b0 < N; b0 += a.batch_size) {
    const int64_t b1 = std::min(N, b0 + a.batch_size);
    const std::vector<std::vector<int32_t>> batch(rows.begin() + b0, rows.begin() + b1);
    const EncoderInput in = make_encoder_input(batch, vocab.pad_id(), enc.config.train.device);
    const int64_t Tb = in.ids.dim(1);
    const std::vector<float> h = model.hidden_states(in).to_vector();  // (B, Tb, D)
    for (int64_t r = b0; r < b1; ++r) {
      const auto& row = rows[static_cast<size_t>(r)];
      const int64_t len = static_cast<int64_t>(row.size());
      for (int64_t t = 0; t < len; ++t) {
        ids[static_cast<size_t>(r * T + t)] = row[static_cast<size_t>(t)];
        mask[static_cast<size_t>(r * T + t)] = 1;
      }
      const float* hr = h.data() + (r - b0) * Tb * D;
      if (!pooled) {
        std::copy(hr, hr + len * D, out.begin() + r * T * D);  // the padding's rows stay 0
        continue;
      }
      float* e = out.data() + r * D;
      if (a.pooling == "cls") {
        std::copy(hr, hr + D, e);
      } else {  // mean over the row's tokens, in double as the sums of long rows lose digits in float
        for (int64_t d = 0; d < D; ++d) {
          double s = 0;
          for (int64_t t = 0; t < len; ++t) s += hr[t * D + d];
          e[d] = static_cast<float>(s / static_cast<double>(len));
        }
      }
      if (a.normalize) {
        double n = 0;
        for (int64_t d = 0; d < D; ++d) n += static_cast<double>(e[d]) * e[d];
        const double scale = 1.0 / std::max(std::sqrt(n), 1e-12);
        for (int64_t d = 0; d < D; ++d) e[d] = static_cast<float>(e[d] * scale);
      }
    }
  }
  SafeTensorsFile f;
  f.metadata["pooling"] = a.pooling;
  f.metadata["normalize"] = a.normalize ? "true" : "false";
  f.metadata["run"] = a.run_dir;
  if (pooled)
    f.tensors["embeddings"] = from_f32({N, D}, out.data());
  else
    f.tensors["last_hidden_state"] = from_f32({N, T, D}, out.data());
  f.tensors["input_ids"] = from_i64({N, T}, ids.data());
  f.tensors["attention_mask"] = from_i64({N, T}, mask.data());
  write_safetensors(a.out, f);
  std::cerr << "embedded " << N << " texts (" << (pooled ? a.pooling + " pooling" : "last_hidden_state, T = " +
                                                                std::to_string(T)) << ") into " << a.out << "\n";
  return 0;
}

}  // namespace

Command add_embed_command(CLI::App& app) {
  auto a = std::make_shared<EmbedArgs>();
  auto* cmd = app.add_subcommand("embed", "the encoder's hidden states or sentence embeddings of texts on stdin, as "
                                          "a safetensors file");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--pooling", a->pooling,
                  "none: last_hidden_state (N, T, D); cls: the [CLS] state; mean: the mean over the tokens (N, D)")
      ->check(CLI::IsMember({"none", "cls", "mean"}));
  cmd->add_flag("--normalize", a->normalize, "L2-normalise the pooled embeddings (sentence-transformers' Normalize)");
  cmd->add_flag("--jsonl", a->jsonl, "stdin is JSONL {\"text\": ...} (default: one text a line)");
  cmd->add_option("--batch-size", a->batch_size, "texts per forward pass (each batch padded to its longest)")
      ->check(positive_number());
  cmd->add_option("--out", a->out, "the safetensors file to write")->required();
  return {cmd, [a] {
            if (a->normalize && a->pooling == "none") throw UsageError("embed: --normalize needs --pooling cls|mean");
            return embed_command(*a);
          }};
}

}  // namespace hr
