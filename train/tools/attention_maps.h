// `headroom attention --run DIR --text "..."` (or --question/--context for QA runs): the attention weights of every
// layer and head for one input, as a grid of heatmaps (layers x heads, tokens on the axes), gated-off and pruned heads
// marked; with --layer/--head a single large map.
#pragma once

#include <string>

namespace hr {

struct AttentionArgs {
  std::string run_dir, which = "best";
  std::string text, question, context;
  int layer = -1, head = -1;  // both set: one map
  std::string out;            // PNG path (default <run>/attention.png)
};

int attention_command(const AttentionArgs& args);

}  // namespace hr
