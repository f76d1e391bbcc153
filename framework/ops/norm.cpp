// Layer normalisation over the last dim; mean and 1/std per row are saved for the backward pass.
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  detail::check_f32(x, "layer_norm");
  detail::check_f32(gamma, "layer_norm");
  detail::check_f32(beta, "layer_norm");
  detail::check_same_device(x, gamma, "layer_norm");
  detail::check_same_device(x, beta, "layer_norm");
  const int64_t n = x.dim(-1), rows = x.numel() / n;
  HR_CHECK(gamma.shape() == Shape{n} && beta.shape() == Shape{n},
           "layer_norm: gamma " + shape_str(gamma.shape()) + " / beta " + shape_str(beta.shape()) + " for input " +
               shape_str(x.shape()));
  Tensor y = Tensor::empty(x.shape(), x.device());
  Tensor mu = Tensor::empty({rows}, x.device()), rstd = Tensor::empty({rows}, x.device());
  be(x).layer_norm(x.data(), gamma.data(), beta.data(), y.data(), mu.data(), rstd.data(), rows, n, eps);
  if (needs_grad({&x, &gamma, &beta})) {
    detail::record("layer_norm", y, [x, gamma, beta, mu, rstd, rows, n](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      // the backend accumulates ggamma and gbeta: straight into the parameters' buffers when they have them
      Tensor own_g = grad_buffer(gamma), own_b = grad_buffer(beta);
      Tensor gg = own_g.defined() ? own_g : Tensor::zeros({n}, x.device());
      Tensor gb = own_b.defined() ? own_b : Tensor::zeros({n}, x.device());
      be(x).layer_norm_backward(x.data(), gamma.data(), mu.data(), rstd.data(), g.data(), gx.data(), gg.data(),
                                gb.data(), rows, n, false);
      if (x.requires_grad()) accumulate_grad(x, gx);
      if (!own_g.defined() && gamma.requires_grad()) accumulate_grad(gamma, gg);
      if (!own_b.defined() && beta.requires_grad()) accumulate_grad(beta, gb);
    });
  }
  return y;
}

}  // namespace hr
