// softmax / log_softmax over the last dim, with an optional additive mask shared by groups of rows and a scale
// folded in (attention: softmax(QK^T / sqrt(d) + mask) in one pass).
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

namespace {

// rows of x per mask row; checks the mask's shape
int64_t rows_per_mask(const Tensor& x, const Tensor& mask, const char* op) {
  const int64_t n = x.dim(-1), rows = x.numel() / n;
  if (!mask.defined()) return rows;
  detail::check_f32(mask, op);
  detail::check_same_device(x, mask, op);
  HR_CHECK(mask.ndim() == 2 && mask.dim(1) == n && mask.dim(0) > 0 && rows % mask.dim(0) == 0,
           std::string(op) + ": mask " + shape_str(mask.shape()) + " must be (M, " + std::to_string(n) +
               ") with M dividing the " + std::to_string(rows) + " rows of " + shape_str(x.shape()));
  return rows / mask.dim(0);
}

}  // namespace

Tensor softmax(const Tensor& x, const Tensor& mask, float scale) {
  detail::check_f32(x, "softmax");
  HR_CHECK(x.ndim() >= 1 && x.dim(-1) > 0, "softmax: empty last dimension");
  const int64_t n = x.dim(-1), rows = x.numel() / n, rpm = rows_per_mask(x, mask, "softmax");
  Tensor y = Tensor::empty(x.shape(), x.device());
  be(x).softmax(x.data(), mask.defined() ? mask.data() : nullptr, y.data(), rows, n, scale, rpm);
  if (needs_grad({&x})) {
    Tensor saved = y.detach();
    detail::record("softmax", y, [x = x.grad_ref(), saved, rows, n, scale](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      be(x).softmax_backward(saved.data(), g.data(), gx.data(), rows, n, scale, false);
      accumulate_grad(x, gx);
    });
  }
  return y;
}

Tensor log_softmax(const Tensor& x, const Tensor& mask) {
  detail::check_f32(x, "log_softmax");
  HR_CHECK(x.ndim() >= 1 && x.dim(-1) > 0, "log_softmax: empty last dimension");
  const int64_t n = x.dim(-1), rows = x.numel() / n, rpm = rows_per_mask(x, mask, "log_softmax");
  Tensor y = Tensor::empty(x.shape(), x.device());
  be(x).log_softmax(x.data(), mask.defined() ? mask.data() : nullptr, y.data(), rows, n, rpm);
  if (needs_grad({&x})) {
    Tensor saved = y.detach();
    detail::record("log_softmax", y, [x = x.grad_ref(), saved, rows, n](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      be(x).log_softmax_backward(saved.data(), g.data(), gx.data(), rows, n, false);
      accumulate_grad(x, gx);
    });
  }
  return y;
}

}  // namespace hr
