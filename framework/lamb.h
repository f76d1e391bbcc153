// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes"): Adam's step with
// decoupled weight decay, rescaled per parameter tensor so that it moves by lr times its own norm. The worked example
// of docs/extending.md "Adding an optimizer": framework/lamb.cpp plus the line `r.add("lamb", make_lamb);` in
// framework/optimizer_registry.cpp.
#pragma once

#include <memory>

#include "framework/optimizer_registry.h"

namespace hr {

// train.optimizer: lamb, with train.adam_beta1, adam_beta2, adam_epsilon and weight_decay.
std::unique_ptr<Optimizer> make_lamb(OptimizerParams params, const OptimizerSettings& settings);

}  // namespace hr
