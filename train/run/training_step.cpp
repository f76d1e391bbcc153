#include "train/run/training_step.h"

#include <cmath>

#include "framework/autograd.h"
#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

TrainingStep::TrainingStep(Module& model, Optimizer& optimizer, StepOptions options, GradientSync* sync)
    : optimizer_(optimizer), options_(options), sync_(sync), grads_(model.parameters()) {
  HR_CHECK(options_.grad_accum >= 1, "training step: grad_accum must be >= 1");
  HR_CHECK(options_.clip >= 0.f, "training step: clip must be >= 0");
}

StepResult TrainingStep::run(const std::function<Tensor(int64_t micro)>& loss_of, float lr) {
  StepResult r;
  grads_.zero();
  const float k = static_cast<float>(options_.grad_accum);
  bool finite = true;
  int64_t ran = 0;
  for (int64_t micro = 0; micro < options_.grad_accum; ++micro) {
    const Tensor loss = loss_of(micro);
    const float value = loss.item();
    ++ran;
    r.loss += value;
    if (!std::isfinite(value)) {
      finite = false;
      Tape::current().clear();  // frees this forward's activations
      break;
    }
    backward(scale(loss, 1.f / k));  // the mean over micro-batches: the same gradient as one batch of k*b
  }
  r.loss /= static_cast<double>(ran);
  if (finite) {
    if (sync_) sync_->synchronize(grads_);
    r.grad_norm = grads_.norm();
    finite = std::isfinite(r.grad_norm);
  }
  if (!finite) {
    grads_.zero();
    return r;
  }
  if (options_.clip > 0.f)
    if (const float c = clip_factor(r.grad_norm, options_.clip); c != 1.f) grads_.scale(c);
  optimizer_.step(lr);
  r.applied = true;
  return r;
}

}  // namespace hr
