// `headroom heads`: per layer and head, the gate's open probability (gated layers), the head importance (with
// --importance) and whether `headroom prune` with the same options would remove the head; printed as a table and drawn
// as a heatmap PNG of the ranking score with the removed heads struck out.
#pragma once

#include <string>

#include "train/tools/plot.h"
#include "train/tools/prune.h"

namespace hr {

struct HeadsArgs {
  std::string run_dir, which = "best";
  bool importance = false;
  ImportanceOptions importance_options;  // batch size and device from the run's config
  PruneOptions prune;                    // by: empty picks gates when the model has gates, else importance
  std::string png;                       // empty: <run_dir>/heads.png
};

// The heatmap: rows = layers, columns = heads (NaN where a layer has fewer heads), marked = removed by `plan`.
ValueHeatmap heads_heatmap(const HeadScores& scores, const PrunePlan& plan, const std::string& title);

int heads_command(const HeadsArgs& args);

}  // namespace hr
