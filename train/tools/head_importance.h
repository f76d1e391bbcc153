// Head importance (Michel, Levy and Neubig 2019, "Are Sixteen Heads Really Better than One?"): each attention head's
// output is multiplied by a mask xi_h = 1, and the head's importance is the expected absolute sensitivity of the loss to
// it, I_h = E_x |dL(x)/dxi_h|, estimated over a data split. Scores are then normalised per layer by the L2 norm over
// that layer's heads, as in the paper, so heads of different layers can be ranked together.
#pragma once

#include <string>
#include <vector>

#include "models/encoder_model.h"
#include "models/head_pruning.h"
#include "train/tasks/task.h"

namespace hr {


struct ImportanceOptions {
  std::string split = "eval";  // train | eval | test
  int64_t batches = 0;         // 0: the whole split
  int64_t batch_size = 32;
  Device device = Device::CPU;
};

// Raw importance: the mean over examples of |dL(x)/dxi_h|. One backward pass per batch gives every example's own
// gradient: the mask is (B, H) per layer and the loss is the batch's sum of per-example losses. The model runs in eval
// mode (no dropout; gates at their deterministic value) and its parameter gradients are left cleared.
HeadScores head_importance(EncoderModel& model, const Task& task, const ImportanceOptions& opt);

// Divides each layer's scores by their L2 norm (layers whose scores are all zero stay zero).
HeadScores normalize_per_layer(const HeadScores& scores);

}  // namespace hr
