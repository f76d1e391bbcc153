#include "train/run/training_step.h"

#include <cmath>
#include <optional>

#include "framework/autograd.h"
#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

TrainingStep::TrainingStep(Module& model, Optimizer& optimizer, StepOptions options, GradientSync* sync)
    : optimizer_(optimizer), options_(options), sync_(sync), weights_(model.parameters()), grads_(weights_) {
  HR_CHECK(options_.grad_accum >= 1, "training step: grad_accum must be >= 1");
  HR_CHECK(options_.clip >= 0.f, "training step: clip must be >= 0");
}

StepResult TrainingStep::run(const std::function<Tensor(int64_t micro)>& loss_of, float lr) {
  StepResult r;
  grads_.zero();
  const float k = static_cast<float>(options_.grad_accum);
  bool finite = true;
  int64_t ran = 0;
  // the copies the last step left are current unless the optimizer has stepped (or was loaded) since
  if (optimizer_.steps() != copies_at_) bf16_weights_.current = false;
  std::optional<AutocastScope> autocast(std::in_place, options_.precision, weights_, &bf16_weights_);  // closed before the update
  for (int64_t micro = 0; micro < options_.grad_accum; ++micro) {
    const Tensor loss = loss_of(micro);
    HR_CHECK(loss.defined() || sync_, "training step: a micro-batch without a loss");
    LossReduction global{loss.defined() ? loss.item() : 0.0, true};
    global.finite = std::isfinite(global.loss);
    if (sync_) global = sync_->reduce_loss(global.loss, global.finite);
    ++ran;
    r.loss += global.loss;
    if (!global.finite) {
      finite = false;
      Tape::current().clear();  // frees this forward's activations
      break;
    }
    if (!loss.defined()) continue;
    if (sync_ && micro + 1 == options_.grad_accum) sync_->begin_last_backward();
    backward(scale(loss, 1.f / k));  // the mean over micro-batches: the same gradient as one batch of k*b
  }
  r.loss /= static_cast<double>(ran);
  autocast.reset();
  if (finite) {
    if (sync_) sync_->finish(grads_);
    r.grad_norm = grads_.norm();
    finite = std::isfinite(r.grad_norm);
  }
  copies_at_ = optimizer_.steps();  // closing the scope made the copies current
  if (!finite) {
    grads_.zero();
    return r;
  }
  if (options_.clip > 0.f)
    if (const float c = clip_factor(r.grad_norm, options_.clip); c != 1.f) grads_.scale(c);
  bf16_weights_.current = optimizer_.step_and_round(lr, bf16_weights_);
  copies_at_ = optimizer_.steps();
  r.applied = true;
  return r;
}

}  // namespace hr
