// softmax / log_softmax over the last dim, with an optional additive mask shared by groups of rows and a scale
// folded in (attention: softmax(QK^T / sqrt(d) + mask) in one pass), and attention's weights: that softmax, its dropout
// and the rounding for the product with V in one pass.
#include "framework/autocast.h"
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

Tensor attention_weights(const Tensor& x, const Tensor& mask, float scale, float p, bool training) {
  detail::check_f32(x, "attention_weights");
  HR_CHECK(x.ndim() >= 1 && x.dim(-1) > 0, "attention_weights: empty last dimension");
  const int64_t n = x.dim(-1), rows = x.numel() / n, rpm = rows_per_mask(x, mask, "attention_weights");
  const detail::DropoutDraw d = detail::dropout_draw(x, p, training, "attention_weights");  // dropout()'s draws
  const float drop = d.p;
  const bool grad = needs_grad({&x}), low = autocast::bf16();
  Tensor out = Tensor::empty(x.shape(), x.device(), low ? DType::BF16 : DType::F32);
  // the probabilities softmax's backward rule reads; without dropout or rounding they are the output itself
  const bool same = !low && drop == 0.f;
  Tensor probs = same ? out.detach() : grad ? Tensor::empty(x.shape(), x.device()) : Tensor();
  void* o = same ? nullptr : low ? static_cast<void*>(out.bf16()) : static_cast<void*>(out.data());
  be(x).softmax_dropout(x.data(), mask.defined() ? mask.data() : nullptr, probs.defined() ? probs.data() : nullptr,
                        o, low, rows, n, scale, rpm, drop, d.seed, d.offset);
  if (grad) {
    // the dropped weights (kept by head_context's rule anyway) hold the mask; without dropout nothing more is read
    Tensor kept = drop > 0.f ? out.detach() : Tensor();
    detail::record("attention_weights", out, [x = x.grad_ref(), probs, kept, low, rows, n, scale,
                                              drop](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      const void* dropped = !kept.defined() ? nullptr
                            : low           ? static_cast<const void*>(kept.bf16())
                                            : static_cast<const void*>(kept.data());
      be(x).softmax_dropout_backward(probs.data(), dropped, low, g.data(), gx.data(), rows, n, scale, drop, false);
      accumulate_grad(x, gx);
    });
  }
  return out;
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
