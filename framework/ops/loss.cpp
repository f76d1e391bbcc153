// Cross-entropy with ignore_index and label smoothing (PyTorch's definition), mean over the rows not ignored.
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int32_t ignore_index, float smoothing) {
  detail::check_f32(logits, "cross_entropy");
  HR_CHECK(labels.defined() && labels.dtype() == DType::I32, "cross_entropy: labels must be an i32 tensor");
  detail::check_same_device(logits, labels, "cross_entropy");
  HR_CHECK(logits.ndim() == 2 && labels.ndim() == 1 && labels.dim(0) == logits.dim(0),
           "cross_entropy: logits " + shape_str(logits.shape()) + " must be (N, C) with labels (N), got labels " +
               shape_str(labels.shape()));
  HR_CHECK(smoothing >= 0.f && smoothing < 1.f, "cross_entropy: label smoothing must be in [0, 1)");
  const int64_t N = logits.dim(0), C = logits.dim(1);
  for (int32_t y : labels.to_ids())
    HR_CHECK(y == ignore_index || (y >= 0 && y < C),
             "cross_entropy: label " + std::to_string(y) + " out of range for " + std::to_string(C) + " classes");
  Tensor logp = Tensor::empty({N, C}, logits.device());
  Tensor row_loss = Tensor::empty({N}, logits.device());
  const int64_t valid =
      be(logits).cross_entropy(logits.data(), labels.ids(), logp.data(), row_loss.data(), N, C, ignore_index, smoothing);
  const float inv = valid > 0 ? 1.f / static_cast<float>(valid) : 0.f;
  Tensor loss;
  {
    NoGradGuard no_grad;
    loss = scale(sum(row_loss), inv);
  }
  if (needs_grad({&logits})) {
    detail::record("cross_entropy", loss, [logits = logits.grad_ref(), labels, logp, N, C, ignore_index, smoothing,
                                           inv](const Tensor& g) {
      Tensor gl = Tensor::empty({N, C}, logits.device());
      be(logits).cross_entropy_backward(logp.data(), labels.ids(), gl.data(), N, C, ignore_index, smoothing,
                                        g.item() * inv, false);
      accumulate_grad(logits, gl);
    });
  }
  return loss;
}

}  // namespace hr
