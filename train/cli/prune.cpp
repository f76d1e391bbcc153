// headroom prune --run RUN
#include <memory>

#include "train/cli/command.h"
#include "train/tools/prune.h"

namespace hr {

Command add_prune_command(CLI::App& app) {
  auto a = std::make_shared<PruneArgs>();
  auto* cmd = app.add_subcommand("prune", "remove attention heads: write a smaller model as a new run directory");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--out", a->out_dir, "new run directory (default <run>-pruned)");
  cmd->add_option("--by", a->options.by, "rank heads by gates | importance")
      ->check(CLI::IsMember({"gates", "importance"}));
  auto* threshold = cmd->add_option("--threshold", a->options.threshold, "keep heads scoring above this (default 0)")
                             ->check(finite_number());
  cmd->add_option("--keep", a->options.keep, "keep this many heads of the whole model")
      ->check(non_negative_number())
      ->excludes(threshold);
  cmd->add_option("--split", a->importance.split, "importance: data split (train | eval | test)")
      ->check(CLI::IsMember({"train", "eval", "test"}));
  cmd->add_option("--batches", a->importance.batches, "importance: batches to average over (0: all)")
      ->check(non_negative_number());
  return {cmd, [a] { return prune_command(*a); }};
}

}  // namespace hr
