// headroom sweep CONFIG --heads ...
#include <memory>

#include "train/cli/command.h"
#include "train/tools/sweep.h"

namespace hr {

Command add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "one run per head count (head_dim = d_model / heads), table and plots");
  cmd->add_option("config", a->config, "config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--heads", a->heads, "head counts, e.g. 1,2,4,8")
      ->required()
      ->delimiter(',')
      ->check(positive_number());
  cmd->add_option("--seeds", a->seeds, "runs per head count (seeds 0..N-1)")->check(positive_number());
  cmd->add_option("--head-dim", a->head_dim, "fixed head_dim instead of d_model / heads")->check(positive_number());
  cmd->add_option("--set", a->overrides, "override a config key in every run (repeatable)");
  cmd->add_option("--out", a->out_dir, "sweep directory (default sweeps/<config>)");
  cmd->add_flag("--remeasure", a->remeasure, "time every finished run again, back to back, for the table");
  return {cmd, [a] { return sweep_command(*a); }};
}

}  // namespace hr
