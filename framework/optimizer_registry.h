// The optimizer registry: train.optimizer -> factory, as layer types, heads and tasks are chosen. Adding an optimizer
// is one file with its Optimizer subclass and factory plus one line in the built-in table `optimizers()`
// (framework/optimizer_registry.cpp), or a register_optimizer call from your own program. See docs/extending.md
// "Adding an optimizer" (the worked example is LAMB, framework/lamb.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/optim.h"

namespace hr {

// The optimizer keys of the train: block (read and validated by train/run/run_config.cpp); each optimizer takes what
// it uses.
struct OptimizerSettings {
  float weight_decay = 0.01f;                       // train.weight_decay, for parameters whose decay flag is set
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // train.adam_beta1, adam_beta2, adam_epsilon: AdamW, LAMB
  float momentum = 0.9f;                            // train.momentum: SGD
  bool nesterov = false;                            // train.nesterov: SGD
};

// What an optimizer updates.
struct OptimizerParams {
  NamedTensors params;
  std::vector<bool> decay;      // weight decay for params[i]; empty: matrices only (matrix_decay_flags)
  std::vector<float> lr_scale;  // multiplies the learning rate of params[i] (train.gate_lr); empty: all 1
};

using OptimizerFactory = std::function<std::unique_ptr<Optimizer>(OptimizerParams, const OptimizerSettings&)>;

void register_optimizer(const std::string& name, OptimizerFactory factory);
std::vector<std::string> registered_optimizers();
// The optimizer registered as `name` over `params` (an hr::Error naming the registered ones when there is none).
std::unique_ptr<Optimizer> build_optimizer(const std::string& name, OptimizerParams params, const OptimizerSettings& s);

}  // namespace hr
