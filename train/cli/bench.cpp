// headroom bench CONFIG
#include <filesystem>
#include <fstream>
#include <memory>

#include "train/cli/command.h"
#include "train/tools/bench.h"

namespace hr {

namespace {

// A run's config.yaml names neither its vocabulary nor its labels: the run's vocab.txt and labels.txt beside it give
// their sizes, unless --vocab / --classes say otherwise.
void take_run_sizes(BenchOptions& o, bool vocab_given, bool classes_given) {
  const std::filesystem::path config(o.config);
  if (config.filename() != "config.yaml") return;
  if (const int64_t v = vocab_given ? 0 : run_vocab_size(o.config); v > 0) o.vocab = v;
  std::ifstream labels(config.parent_path() / "labels.txt");
  int64_t n = 0;
  for (std::string line; std::getline(labels, line);) n += !line.empty();
  if (!classes_given && n > 0) o.classes = n;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "time training steps and inference on synthetic batches; f32 and bf16 gemm rates");
  cmd->add_option("config", o->config, "config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o->overrides, "override a config key (repeatable)");
  add_precision_option(cmd, o->overrides);
  cmd->add_option("--batch", o->batch, "batch size")->check(positive_number());
  cmd->add_option("--seq-len", o->seq_len, "sequence length (default model.max_len)")->check(positive_number());
  auto* vocab = cmd->add_option("--vocab", o->vocab, "vocabulary size (default: a run's vocab.txt, else 8000)")
                    ->check(positive_number());
  auto* classes = cmd->add_option("--classes", o->classes, "number of classes (default: a run's labels.txt, else 150)")
                      ->check(positive_number());
  cmd->add_option("--steps", o->steps, "timed steps")->check(positive_number());
  cmd->add_option("--warmup", o->warmup, "untimed warm-up steps")->check(non_negative_number());
  cmd->add_option("--inference-runs", o->inference_runs, "timed batch inference passes (default: --steps)")
      ->check(positive_number());
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_flag("--mlm-dense", o->mlm_dense, "an MLM model decodes every position (default: one in 7, as pretraining)");
  cmd->add_flag("--kernels", o->kernels, "also time elementwise, row and optimizer kernels alone on the config's shapes");
  cmd->add_flag("--attention", o->attention,
                "time only attention (fused kernel and unfused ops, f32 and bf16) on the first heads layer's shape");
  cmd->add_flag("--gemm-strides", o->gemm_strides,
                "time only the FFN's weight-gradient gemms (f32, CPU) with the activations at their 4 KB leading "
                "dimension, at a padded one, and as run by default, for narrow sides of 8 to 1024");
  return {cmd, [o, vocab, classes] {
            take_run_sizes(*o, vocab->count() > 0, classes->count() > 0);
            return bench_command(*o);
          }};
}

}  // namespace hr
