// Optimizers (AdamW with decoupled weight decay, SGD with momentum), global-norm gradient clipping and learning-rate
// schedules. Parameters without a gradient after backward (not reached by the loss) are left untouched.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "framework/tensor.h"

namespace hr {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct AdamWOptions {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};

// Weight decay for matrices only: no decay on biases, LayerNorm and gate parameters (all 1-d).
std::vector<bool> matrix_decay_flags(const NamedTensors& params);

class AdamW {
 public:
  // `decay[i]` says whether params[i] gets weight decay (the trainer exempts biases, LayerNorm and gates);
  // `lr_scale[i]` (default all 1) multiplies the learning rate of params[i] (the trainer's train.gate_lr).
  AdamW(NamedTensors params, std::vector<bool> decay, AdamWOptions opt, std::vector<float> lr_scale = {});
  void step(float lr);  // one update of every parameter that has a gradient, in one backend call
  int64_t steps() const { return step_; }
  // m and v of every parameter as "<name>.adam_m" / "<name>.adam_v" (checkpoint state) and the step counter.
  NamedTensors state() const;
  void load_state(const NamedTensors& state, int64_t steps);

 private:
  NamedTensors params_;
  std::vector<bool> decay_;
  std::vector<float> lr_scale_;
  std::vector<Tensor> m_, v_;
  AdamWOptions opt_;
  int64_t step_ = 0;
};

class SGD {
 public:
  SGD(std::vector<Tensor> params, float momentum = 0.f, float weight_decay = 0.f);
  void step(float lr);

 private:
  std::vector<Tensor> params_, velocity_;
  float momentum_, weight_decay_;
};

// Scales all gradients so their global L2 norm is at most max_norm; returns the norm before clipping.
float clip_grad_norm(const std::vector<Tensor>& params, float max_norm);
// The global L2 norm of all gradients (NaN/inf if any gradient is).
float grad_norm(const std::vector<Tensor>& params);

// Linear warm-up to `peak` over `warmup` steps, then constant, linear or cosine decay to 0 at `total` steps.
struct LrSchedule {
  enum Decay { Constant, Linear, Cosine } decay = Linear;
  float peak = 1e-3f;
  int64_t warmup = 0, total = 1;
  float at(int64_t step) const;  // step is 0-based
};

}  // namespace hr
