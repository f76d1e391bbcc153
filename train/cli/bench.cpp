// headroom bench CONFIG
#include <memory>

#include "train/cli/command.h"
#include "train/tools/bench.h"

namespace hr {

Command add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand("bench", "time training steps and inference on synthetic batches; f32 and bf16 gemm rates");
  cmd->add_option("config", o->config, "config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", o->overrides, "override a config key (repeatable)");
  add_precision_option(cmd, o->overrides);
  cmd->add_option("--batch", o->batch, "batch size")->check(positive_number());
  cmd->add_option("--seq-len", o->seq_len, "sequence length (default model.max_len)")->check(positive_number());
  cmd->add_option("--vocab", o->vocab, "vocabulary size")->check(positive_number());
  cmd->add_option("--classes", o->classes, "number of classes")->check(positive_number());
  cmd->add_option("--steps", o->steps, "timed steps")->check(positive_number());
  cmd->add_option("--warmup", o->warmup, "untimed warm-up steps")->check(non_negative_number());
  cmd->add_option("--inference-runs", o->inference_runs, "timed batch inference passes (default: --steps)")
      ->check(positive_number());
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_flag("--mlm-dense", o->mlm_dense, "an MLM model decodes every position (default: one in 7, as pretraining)");
  cmd->add_flag("--kernels", o->kernels, "also time elementwise, row and optimizer kernels alone on the config's shapes");
  cmd->add_flag("--attention", o->attention,
                "time only attention (fused kernel and unfused ops, f32 and bf16) on the first heads layer's shape");
  return {cmd, [o] { return bench_command(*o); }};
}

}  // namespace hr
