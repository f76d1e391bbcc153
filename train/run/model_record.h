// What a checkpoint's weights mean beyond their shapes. Two models of the same tensor shapes can differ (2 heads of 16
// or 4 of 8, pre- or post-norm, the labels in another order): the trainer records the model: block its checkpoints
// were trained under and a digest of labels.txt in their metadata, and every load by a run directory compares them
// with the run's config.yaml and labels.txt, naming what differs.
#pragma once

#include <map>
#include <string>

#include "framework/config.h"

namespace hr {

struct ModelRecord {
  std::string model;   // the model: block as YAML, less what does not change the function (dropout, gate penalties)
  std::string labels;  // FNV-1a of the run's labels.txt, hex; empty without one
};

// The record of a run: its config's model: block and RUN/labels.txt.
ModelRecord model_record(const Config& model, const std::string& run_dir);

// Metadata entries of a checkpoint, and the check on load: a ConfigError naming `checkpoint`, each model key that
// differs (with both values) or labels.txt, unless `metadata` matches `now`. A checkpoint without a record (written
// by import-hf, prune or an earlier headroom) passes.
void add_model_record(std::map<std::string, std::string>& metadata, const ModelRecord& record);
void check_model_record(const std::map<std::string, std::string>& metadata, const std::string& checkpoint,
                        const ModelRecord& now);

}  // namespace hr
