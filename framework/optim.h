// Optimizers behind one interface (AdamW with decoupled weight decay, SGD with momentum; LAMB in lamb.h; chosen by
// name from framework/optimizer_registry.h), global-norm gradient clipping and learning-rate schedules. An optimizer's
// state is a list of named tensors ("<param>.<slot>"), so the checkpoint code saves and restores it without knowing
// which optimizer it is.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/autocast.h"
#include "framework/tensor.h"

namespace hr {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Weight decay for matrices only: no decay on biases, LayerNorm and gate parameters (all 1-d).
std::vector<bool> matrix_decay_flags(const NamedTensors& params);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual const char* name() const = 0;  // recorded in checkpoints: a run resumes only with the same optimizer
  virtual void step(float lr) = 0;       // one update of every parameter from its gradient
  // step(lr) that also rewrites, from the updated weights, their bf16 copies in `copies` (the training step's); false
  // when this optimizer cannot, and the copies no longer match the weights.
  virtual bool step_and_round(float lr, WeightCopies& /*copies*/) {
    step(lr);
    return false;
  }
  int64_t steps() const { return steps_; }
  // Every state tensor as "<param name>.<slot>" (e.g. "layers.0.attn.q.weight.adam_m"), for the checkpoint.
  NamedTensors state() const;
  // Restores state() from a checkpoint's tensors: each one must be present with its shape (an error names it).
  void load_state(const NamedTensors& tensors, int64_t steps);

 protected:
  // `slots`: the suffixes of the per-parameter state tensors, each zero-initialised like its parameter.
  Optimizer(NamedTensors params, std::vector<std::string> slots);
  Tensor& slot(size_t s, size_t param) { return state_[s][param]; }
  NamedTensors params_;
  int64_t steps_ = 0;

 private:
  std::vector<std::string> slot_names_;
  std::vector<std::vector<Tensor>> state_;  // [slot][param]
};

struct AdamWOptions {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};

class AdamW : public Optimizer {
 public:
  // `decay[i]` says whether params[i] gets weight decay (the trainer exempts biases, LayerNorm and gates);
  // `lr_scale[i]` (default all 1) multiplies the learning rate of params[i] (the trainer's train.gate_lr).
  AdamW(NamedTensors params, std::vector<bool> decay, AdamWOptions opt, std::vector<float> lr_scale = {});
  const char* name() const override { return "adamw"; }
  void step(float lr) override { update(lr, nullptr); }  // every parameter in one backend call
  bool step_and_round(float lr, WeightCopies& copies) override {
    update(lr, &copies);  // the same call, rounding as it writes
    return true;
  }

 private:
  void update(float lr, WeightCopies* copies);
  std::vector<bool> decay_;
  std::vector<float> lr_scale_;
  AdamWOptions opt_;
};

// SGD with (heavy-ball, PyTorch-style) momentum, optionally Nesterov's, and L2 weight decay added to the gradient of
// `decay` parameters; `lr_scale` as AdamW's.
class SGD : public Optimizer {
 public:
  SGD(NamedTensors params, std::vector<bool> decay, float momentum = 0.f, float weight_decay = 0.f,
      bool nesterov = false, std::vector<float> lr_scale = {});
  const char* name() const override { return "sgd"; }
  void step(float lr) override;

 private:
  std::vector<bool> decay_;
  float momentum_, weight_decay_;
  bool nesterov_;
  std::vector<float> lr_scale_;
};

// The factor clipping multiplies the gradients by: min(1, max_norm / (norm + 1e-6)) for a finite norm.
float clip_factor(float norm, float max_norm);

// Linear warm-up to `peak` over `warmup` steps, then constant, linear or cosine decay to 0 at `total` steps.
struct LrSchedule {
  enum Decay { Constant, Linear, Cosine } decay = Linear;
  float peak = 1e-3f;
  int64_t warmup = 0, total = 1;
  float at(int64_t step) const;  // step is 0-based
};

}  // namespace hr
