// headroom heads --run RUN
#include <memory>

#include "train/cli/command.h"
#include "train/tools/heads_report.h"

namespace hr {

Command add_heads_command(CLI::App& app) {
  auto a = std::make_shared<HeadsArgs>();
  a->prune.by = "";
  auto* cmd = app.add_subcommand("heads", "per-head gate probabilities, importance and pruning; heatmap PNG");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_flag("--importance", a->importance, "score heads by loss sensitivity (Michel et al. 2019)");
  cmd->add_option("--split", a->importance_options.split, "importance: data split (train | eval | test)")
      ->check(CLI::IsMember({"train", "eval", "test"}));
  cmd->add_option("--batches", a->importance_options.batches, "importance: batches to average over (0: all)")
      ->check(non_negative_number());
  cmd->add_option("--by", a->prune.by, "pruning rule ranks by gates | importance (default: gates if gated)")
      ->check(CLI::IsMember({"gates", "importance"}));
  auto* threshold = cmd->add_option("--threshold", a->prune.threshold, "pruning threshold (default 0)")
                             ->check(finite_number());
  cmd->add_option("--keep", a->prune.keep, "prune to this many heads")
      ->check(non_negative_number())
      ->excludes(threshold);
  cmd->add_option("--png", a->png, "heatmap path (default <run>/heads.png)");
  return {cmd, [a] { return heads_command(*a); }};
}

}  // namespace hr
