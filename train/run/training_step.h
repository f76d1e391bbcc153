// One optimizer step, defined once for the trainer, bench and the GPU parity test: zero the gradients, forward and
// backward over the micro-batches (each loss divided by their number), synchronise the gradients (the data-parallel
// hook; nothing in one process), skip the step when the loss or the gradient is not finite, clip to the global norm,
// and let the optimizer update the weights. Under bf16 the weights' bf16 copies live from one step to the next: the
// optimizer rewrites them as it updates the weights (framework/autocast.h, WeightCopies), so weights written between
// two runs other than by the optimizer (a checkpoint loaded into the model) need a new TrainingStep.
#pragma once

#include <functional>
#include <memory>

#include "framework/autocast.h"
#include "framework/flat_gradients.h"
#include "framework/module.h"
#include "framework/optim.h"

namespace hr {

struct LossReduction {
  double loss = 0;     // the global batch's loss (NaN when not every replica's was finite)
  bool finite = true;  // every replica's loss was finite
};

// Data-parallel training's part of a step (train/run/gradient_reducer.h): replicas agree on each
// micro-batch's loss and on whether it is finite, so that every replica skips the same steps, and sum their gradients
// (each weighted by its share of the global batch) before the norm, clipping and the optimizer see them.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // After a micro-batch's forward: this replica's loss already weighted by its share of the batch (0 without rows).
  virtual LossReduction reduce_loss(double share, bool finite) = 0;
  // Before the backward of the step's last micro-batch, when this replica has one: reduction may start during it.
  virtual void begin_last_backward() = 0;
  // After the last backward (every replica calls it, with or without rows): the summed gradients are in `grads`.
  virtual void finish(FlatGradients& grads) = 0;
};

struct StepOptions {
  int64_t grad_accum = 1;  // micro-batches per step
  float clip = 0.f;        // max global gradient norm; 0: no clipping
  Precision precision = Precision::F32;  // bf16: forward and backward matmuls (one bf16 copy of a weight per step)
};

struct StepResult {
  bool applied = false;  // false: a non-finite loss or gradient; no weight changed and the gradients are zero
  double loss = 0;       // mean over the micro-batches that ran (over all replicas)
  float grad_norm = 0;   // before clipping (NaN/inf when not applied for a gradient)
};

class TrainingStep {
 public:
  // The model's parameters get one flat gradient buffer (FlatGradients), made here: build the step after the model
  // has reached its device. `optimizer` holds the same parameters; `sync` may be null.
  TrainingStep(Module& model, Optimizer& optimizer, StepOptions options, GradientSync* sync = nullptr);
  // `loss_of(micro)`: the loss of micro-batch `micro` (0 .. grad_accum-1), regularisers included; with a sync, this
  // replica's share-weighted loss, or an undefined tensor when it holds no rows of that micro-batch. Runs the step at
  // learning rate lr.
  StepResult run(const std::function<Tensor(int64_t micro)>& loss_of, float lr);
  FlatGradients& gradients() { return grads_; }
  void set_sync(GradientSync* sync) { sync_ = sync; }  // a sync built over gradients(); nullptr: none
  Optimizer& optimizer() { return optimizer_; }

 private:
  Optimizer& optimizer_;
  StepOptions options_;
  GradientSync* sync_;
  std::vector<Tensor> weights_;  // the model's parameters, for the autocast scope
  WeightCopies bf16_weights_;    // their bf16 copies that the matmuls used, kept across steps
  int64_t copies_at_ = -1;       // the optimizer's step count when bf16_weights_ last matched the weights
  FlatGradients grads_;
};

}  // namespace hr
