// `headroom attention --run DIR --text "..."` (a pair's two texts as --text A --text B in the order of the task's
// input fields, e.g. premise then hypothesis; --question/--context also for QA runs): the attention weights of every
// layer and head for one input, as a grid of heatmaps (layers x heads, tokens on the axes), gated-off and pruned heads
// marked; with --layer/--head a single large map.
#pragma once

#include <string>
#include <vector>

#include "train/tools/plot.h"

namespace hr {

struct AttentionArgs {
  std::string run_dir, which = "best";
  std::vector<std::string> texts;  // one per input field of the run's task
  std::string question, context;   // a QA run's two fields by name
  int layer = -1, head = -1;  // both set: one map
  std::string out;            // PNG path (default <run>/attention.png)
};

int attention_command(const AttentionArgs& args);

struct LoadedRun;

// The grid attention_command draws for one input (`texts`: one per input field of the run's task; a usage error
// otherwise): layers x heads, or the one map of `layer` and `head` when both are >= 0. Titled with `title`.
HeatmapGrid attention_grid(LoadedRun& run, const std::vector<std::string>& texts, const std::string& title,
                           int layer = -1, int head = -1);

}  // namespace hr
