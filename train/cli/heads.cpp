// headroom heads --run RUN [--importance] [--roles]
#include <memory>

#include "train/cli/command.h"
#include "train/tools/head_roles.h"
#include "train/tools/heads_report.h"

namespace hr {

Command add_heads_command(CLI::App& app) {
  auto a = std::make_shared<HeadsArgs>();
  auto roles = std::make_shared<RolesArgs>();
  a->prune.by = "";
  auto* cmd = app.add_subcommand("heads", "per-head gate probabilities, importance and pruning; heatmap PNG");
  add_run_options(cmd, a->run_dir, a->which);
  auto* importance =
      cmd->add_flag("--importance", a->importance, "score heads by loss sensitivity (Michel et al. 2019)");
  auto* by_role = cmd->add_flag("--roles", roles->requested,
                                "what each head attends to: previous/next token, itself, [CLS], [SEP], entropy "
                                "(Clark et al. 2019); a heatmap PNG per statistic")
                      ->excludes(importance);
  cmd->add_option("--text-file", roles->text_file, "roles: measure on this plain text (one input a line, cut to "
                                                   "128 tokens) instead of the run's --split")
      ->needs(by_role);
  cmd->add_option("--split", a->importance_options.split, "importance, roles: data split (train | eval | test)")
      ->check(CLI::IsMember({"train", "eval", "test"}));
  cmd->add_option("--batches", a->importance_options.batches, "importance, roles: batches to average over (0: all)")
      ->check(non_negative_number());
  cmd->add_option("--by", a->prune.by, "pruning rule ranks by gates | importance (default: gates if gated)")
      ->check(CLI::IsMember({"gates", "importance"}));
  auto* threshold = cmd->add_option("--threshold", a->prune.threshold, "pruning threshold (default 0)")
                             ->check(finite_number());
  cmd->add_option("--keep", a->prune.keep, "prune to this many heads")
      ->check(non_negative_number())
      ->excludes(threshold);
  cmd->add_option("--png", a->png, "heatmap path (default <run>/heads.png; --roles: X.png "
                                   "becomes X-prev.png, ..., default <run>/roles-prev.png, ...)");
  return {cmd, [a, roles] {
            if (!roles->requested) return heads_command(*a);
            roles->split = a->importance_options.split;
            roles->batches = a->importance_options.batches;
            return head_roles_command(*a, *roles);
          }};
}

}  // namespace hr
