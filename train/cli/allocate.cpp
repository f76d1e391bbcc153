// headroom allocate CONFIG
#include <memory>

#include "train/cli/command.h"
#include "train/tools/allocate.h"

namespace hr {

Command add_allocate_command(CLI::App& app) {
  auto a = std::make_shared<AllocateArgs>();
  auto* cmd = app.add_subcommand("allocate", "L0 gates on a wide model size each layer's heads; compare with uniform "
                                             "models over seeds (table and plot)");
  cmd->add_option("config", a->config, "config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--wide-heads", a->wide_heads, "heads per layer of the gated search model (default 16)")
      ->check(positive_number());
  cmd->add_option("--wide-head-dim", a->wide_head_dim, "head_dim of the search model (default: the config's)")
      ->check(positive_number());
  cmd->add_option("--l0-lambda", a->l0_lambda, "L0 penalty per open gate (default: the config's gates.lambda)")
      ->check(non_negative_number());
  cmd->add_option("--allocation", a->allocation, "heads per layer, e.g. 8,8,4,4: no search, compare this split")
      ->delimiter(',')
      ->check(positive_number());
  cmd->add_option("--search-from", a->search_from, "dense: gates fine-tuned from the wide model trained without "
                                                   "them (default); scratch: gated from the first step")
      ->check(CLI::IsMember({"dense", "scratch"}));
  cmd->add_option("--match", a->match, "params: one head_dim matching the uniform attention parameters; layer: each "
                                       "layer keeps its width; none: keep the search (or config's) head_dim")
      ->check(CLI::IsMember({"params", "layer", "none"}));
  cmd->add_option("--baselines", a->baselines, "more uniform models: head counts, head_dim = d_model / heads")
      ->delimiter(',')
      ->check(positive_number());
  cmd->add_option("--seeds", a->seeds, "runs per compared model (seeds 0..N-1, default 3)")->check(positive_number());
  cmd->add_option("--set", a->overrides, "override a config key in every run (repeatable)");
  cmd->add_option("--out", a->out_dir, "allocation directory (default allocations/<config>)");
  cmd->add_flag("--remeasure", a->remeasure, "time every finished compare run again, back to back, for the table");
  return {cmd, [a] { return allocate_command(*a); }};
}

}  // namespace hr
