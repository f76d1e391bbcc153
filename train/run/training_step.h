// One optimizer step, defined once for the trainer, bench and the GPU parity test: zero the gradients, forward and
// backward over the micro-batches (each loss divided by their number), synchronise the gradients (the data-parallel
// hook; nothing in one process), skip the step when the loss or the gradient is not finite, clip to the global norm,
// and let the optimizer update the weights.
#pragma once

#include <functional>
#include <memory>

#include "framework/flat_gradients.h"
#include "framework/module.h"
#include "framework/optim.h"

namespace hr {

// Between backward and the gradient norm: where data-parallel training averages the gradients over replicas. Its
// verdict on finiteness must be shared, so that every replica skips the same steps.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void synchronize(FlatGradients& grads) = 0;
};

struct StepOptions {
  int64_t grad_accum = 1;  // micro-batches per step
  float clip = 0.f;        // max global gradient norm; 0: no clipping
};

struct StepResult {
  bool applied = false;  // false: a non-finite loss or gradient; no weight changed and the gradients are zero
  double loss = 0;       // mean over the micro-batches that ran
  float grad_norm = 0;   // before clipping (NaN/inf when not applied for a gradient)
};

class TrainingStep {
 public:
  // The model's parameters get one flat gradient buffer (FlatGradients), made here: build the step after the model
  // has reached its device. `optimizer` holds the same parameters; `sync` may be null.
  TrainingStep(Module& model, Optimizer& optimizer, StepOptions options, GradientSync* sync = nullptr);
  // `loss_of(micro)`: the loss of micro-batch `micro` (0 .. grad_accum-1), regularisers included. Runs the step at
  // learning rate lr.
  StepResult run(const std::function<Tensor(int64_t micro)>& loss_of, float lr);
  FlatGradients& gradients() { return grads_; }
  Optimizer& optimizer() { return optimizer_; }

 private:
  Optimizer& optimizer_;
  StepOptions options_;
  GradientSync* sync_;
  FlatGradients grads_;
};

}  // namespace hr
