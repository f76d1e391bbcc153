#include "framework/flat_gradients.h"

#include <cmath>

#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

FlatGradients::FlatGradients(const std::vector<Tensor>& params) : params_(params) {
  HR_CHECK(!params_.empty(), "FlatGradients: no parameters");
  const Device d = params_[0].device();
  int64_t total = 0;
  for (const Tensor& p : params_) {
    HR_CHECK(p.device() == d, "FlatGradients: parameters on different devices");
    HR_CHECK(p.is_leaf() && p.requires_grad(), "FlatGradients: '" + p.name() + "' is not a trainable parameter");
    total += p.numel();
  }
  flat_ = Tensor::zeros({total}, d);
  int64_t at = 0;
  for (const Tensor& p : params_) {
    Tensor g = flat_.rows(at, p.numel());
    g.impl()->shape = p.shape();
    if (p.grad().defined()) g.copy_from(p.grad());
    p.impl()->grad = g;
    at += p.numel();
  }
}

void FlatGradients::zero() { flat_.fill_(0.f); }

float FlatGradients::norm() const {
  return static_cast<float>(std::sqrt(backend(flat_.device()).sum_squares(flat_.data(), flat_.numel())));
}

void FlatGradients::scale(float s) { scale_(flat_, s); }

}  // namespace hr
