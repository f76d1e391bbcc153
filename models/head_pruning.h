// Pruning attention heads into a smaller model, through the AttentionHeads interface of each layer: the kept heads'
// parameters are sliced by the layer itself into a model whose config lists one layer group per layer with its own
// head count. L0 gates are folded into the output projection (each kept head's columns times its deterministic gate),
// so the pruned model has no gates. docs/heads.md says when the result is exact and why some heads must stay.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "models/encoder_model.h"

namespace hr {

// Per layer, one score per head (an empty row for a layer without attention heads).
using HeadScores = std::vector<std::vector<float>>;

struct PruneOptions {
  std::string by = "gates";  // gates | importance
  // Without `keep`: keep a head whose score is above this (gates: the deterministic gate z; importance: the
  // normalised importance). The default 0 with gates removes exactly the closed heads.
  float threshold = 0.f;
  int64_t keep = -1;  // >= 0: keep the `keep` best heads of the whole model (gates: by open probability)
};

struct PrunePlan {
  std::vector<bool> attention;             // per layer: a layer with attention heads before pruning
  std::vector<int64_t> heads;              // per layer: heads before pruning
  std::vector<std::vector<int64_t>> keep;  // per layer: the kept heads, ascending original indices
  std::vector<std::string> notes;          // heads kept for exactness, and heads removed while not closed
  bool exact = true;                       // no removed head had a gate above 0 (or no gate at all)
};

// Per layer: the gates' open probabilities P(z > 0) / deterministic values z; empty rows for ungated layers.
HeadScores gate_open_probabilities(const EncoderModel& model);
HeadScores gate_eval_values(const EncoderModel& model);

// Chooses the kept heads. `importance` (normalised per layer) is required with by = importance. Heads whose removal
// would change the outputs of kept heads are kept anyway (talking heads, residual logits), with a note.
PrunePlan plan_pruning(const EncoderModel& model, const PruneOptions& opt, const HeadScores* importance);

struct PrunedModel {
  std::string model_yaml;  // the new model: block, one layer group per layer
  std::unique_ptr<EncoderModel> model;  // on the CPU, its weights copied and gates folded
};

// The `model:` block with one layer group per layer (each group's `repeat` unrolled, `repeat` removed), `edit` called
// on each layer's block with the layer's index: how prune and allocate write per-layer head counts.
YAML::Node one_group_per_layer(const Config& model_block, const std::function<void(size_t, YAML::Node&)>& edit);

// "[0, 2, 5]": a list of head indices in messages and reports.
std::string head_list(const std::vector<int64_t>& heads);

// Builds the pruned model from the source model and its `model:` config block.
PrunedModel prune_model(const EncoderModel& model, const Config& model_block, const PrunePlan& plan);

}  // namespace hr
