// headroom attention --run RUN --text ...
#include <memory>

#include "train/cli/command.h"
#include "train/tools/attention_maps.h"

namespace hr {

Command add_attention_command(CLI::App& app) {
  auto a = std::make_shared<AttentionArgs>();
  auto* cmd = app.add_subcommand("attention", "attention maps of a trained run for one input, as a PNG grid");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--text", a->texts, "input text; once per input of the run, in order (a pair: twice)");
  cmd->add_option("--question", a->question, "question (QA runs; same as --text QUESTION --text CONTEXT)");
  cmd->add_option("--context", a->context, "context (QA runs)");
  cmd->add_option("--layer", a->layer, "with --head: one large map (layers count from 0)")
      ->check(non_negative_number());
  cmd->add_option("--head", a->head, "with --layer: one large map (heads count from 0)")->check(non_negative_number());
  cmd->add_option("--out", a->out, "PNG path (default <run>/attention.png)");
  return {cmd, [a] { return attention_command(*a); }};
}

}  // namespace hr
