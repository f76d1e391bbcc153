// `headroom prune`: removes attention heads of a trained run (models/head_pruning.h) and writes the smaller model as a
// new run directory.
#pragma once

#include <string>

#include "models/head_pruning.h"
#include "train/tools/head_importance.h"

namespace hr {

struct PruneArgs {
  std::string run_dir, which = "best";
  std::string out_dir;  // empty: <run_dir>-pruned
  PruneOptions options;
  ImportanceOptions importance;  // with by = importance (batch size and device from the run's config)
};

// Writes a run directory (config.yaml, vocab.txt, labels.txt, checkpoint-best.safetensors without optimizer state,
// prune.json) that `headroom eval` and `train.init_from` accept. UsageError, before anything is read or written, when
// the output directory exists and is not empty (require_new_or_empty_dir).
int prune_command(const PruneArgs& args);

}  // namespace hr
