// Elementwise ops: unary functions and broadcasting binary arithmetic, with sum_to as the broadcast's backward.
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

Shape broadcast_shape(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    HR_CHECK(da == db || da == 1 || db == 1,
             "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// Strides of `operand` (right-aligned against `out`), 0 along the dimensions it is broadcast over.
void broadcast_strides(const Shape& operand, const Shape& out, int64_t* strides) {
  const size_t off = out.size() - operand.size();
  const auto st = detail::strides_of(operand);
  for (size_t i = 0; i < out.size(); ++i)
    strides[i] = (i < off || operand[i - off] == 1) ? 0 : st[i - off];
}

Broadcast make_broadcast(const Shape& out, const Shape& a, const Shape& b) {
  HR_CHECK(static_cast<int>(out.size()) <= kMaxDims, "broadcast over more than 6 dimensions: " + shape_str(out));
  Broadcast p;
  p.ndim = static_cast<int>(out.size());
  for (int i = 0; i < p.ndim; ++i) p.shape[i] = out[static_cast<size_t>(i)];
  broadcast_strides(a, out, p.sa);
  broadcast_strides(b, out, p.sb);
  return p;
}

bool saves_input(Unary op) {
  return op == Unary::Log || op == Unary::Relu || op == Unary::Gelu || op == Unary::Square || op == Unary::Clamp ||
         op == Unary::Pow;
}

Tensor unary_op(const char* name, Unary op, const Tensor& x, float a = 0.f, float b = 0.f) {
  detail::check_f32(x, name);
  Tensor y = Tensor::empty(x.shape(), x.device());
  be(x).unary(op, x.data(), y.data(), x.numel(), a, b);
  if (needs_grad({&x})) {
    // keep only what the derivative reads: the input (relu, gelu, ...) or the output (exp, sigmoid, tanh, sqrt)
    Tensor saved = saves_input(op) ? x : y.detach();
    detail::record(name, y, [x = x.grad_ref(), saved, op, a, b](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      // the derivative of `op` reads only the tensor that was saved, so it is passed as both x and y
      be(x).unary_backward(op, saved.data(), saved.data(), g.data(), gx.data(), x.numel(), a, b, false);
      accumulate_grad(x, gx);
    });
  }
  return y;
}

Tensor binary_raw(Binary op, const Tensor& a, const Tensor& b, float scalar = 0.f) {
  const Shape out_shape = broadcast_shape(a.shape(), b.shape());
  Tensor out = Tensor::empty(out_shape, a.device());
  be(a).binary(op, make_broadcast(out_shape, a.shape(), b.shape()), a.data(), b.data(), out.data(), scalar);
  return out;
}

Tensor binary_op(const char* name, Binary op, const Tensor& a, const Tensor& b) {
  detail::check_f32(a, name);
  detail::check_f32(b, name);
  detail::check_same_device(a, b, name);
  Tensor out = binary_raw(op, a, b);
  if (needs_grad({&a, &b})) {
    Tensor saved_out = op == Binary::Div ? out.detach() : Tensor();
    // the values the derivatives read: both operands of mul, the divisor of div, neither of add and sub
    detail::record(name, out, [a = op == Binary::Mul ? a : a.grad_ref(),
                               b = op == Binary::Mul || op == Binary::Div ? b : b.grad_ref(), op,
                               saved_out](const Tensor& g) {
      const bool ga = a.requires_grad(), gb = b.requires_grad();
      switch (op) {
        case Binary::Add:
          if (ga) accumulate_grad(a, sum_to(g, a.shape()));
          if (gb) accumulate_grad(b, sum_to(g, b.shape()));
          break;
        case Binary::Sub:
          if (ga) accumulate_grad(a, sum_to(g, a.shape()));
          if (gb) accumulate_grad(b, neg(sum_to(g, b.shape())));
          break;
        case Binary::Mul:
          if (ga) accumulate_grad(a, sum_to(mul(g, b), a.shape()));
          if (gb) accumulate_grad(b, sum_to(mul(g, a), b.shape()));
          break;
        case Binary::Div:  // d(a/b)/db = -(a/b)/b
          if (ga) accumulate_grad(a, sum_to(div(g, b), a.shape()));
          if (gb) accumulate_grad(b, neg(sum_to(div(mul(g, saved_out), b), b.shape())));
          break;
        case Binary::MaskFill: break;
      }
    });
  }
  return out;
}

}  // namespace

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  HR_CHECK(broadcast_shape(shape, g.shape()) == g.shape(),
           "sum_to: " + shape_str(g.shape()) + " does not reduce to " + shape_str(shape));
  Broadcast p = make_broadcast(g.shape(), shape, g.shape());
  Tensor out = Tensor::empty(shape, g.device());
  be(g).sum_to(p, g.data(), out.data(), out.numel(), false);
  if (needs_grad({&g})) {
    detail::record("sum_to", out, [g = g.grad_ref(), p](const Tensor& go) {
      // the backward of a reduction is a broadcast: copy go along the reduced dims (stride 0)
      Tensor gx = Tensor::empty(g.shape(), g.device());
      const auto dst = detail::strides_of(g.shape());
      be(g).copy_strided(p.ndim, p.shape, go.data(), p.sa, gx.data(), dst.data(), false);
      accumulate_grad(g, gx);
    });
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary_op("add", Binary::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op("sub", Binary::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op("mul", Binary::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op("div", Binary::Div, a, b); }

Tensor mask_fill(const Tensor& x, const Tensor& mask, float value) {
  detail::check_f32(x, "mask_fill");
  detail::check_f32(mask, "mask_fill");
  detail::check_same_device(x, mask, "mask_fill");
  HR_CHECK(broadcast_shape(x.shape(), mask.shape()) == x.shape(),
           "mask_fill: mask " + shape_str(mask.shape()) + " does not broadcast to " + shape_str(x.shape()));
  Tensor out = binary_raw(Binary::MaskFill, x, mask, value);
  if (needs_grad({&x})) {
    detail::record("mask_fill", out, [x = x.grad_ref(), mask](const Tensor& g) {
      accumulate_grad(x, binary_raw(Binary::MaskFill, g, mask, 0.f));  // filled entries get no gradient
    });
  }
  return out;
}

Tensor scale(const Tensor& x, float s) { return unary_op("scale", Unary::Scale, x, s); }

void add_(Tensor& dst, const Tensor& src) {
  detail::check_same_device(dst, src, "add_");
  HR_CHECK(dst.shape() == src.shape(), "add_: " + shape_str(src.shape()) + " into " + shape_str(dst.shape()));
  be(dst).binary(Binary::Add, make_broadcast({dst.numel()}, {dst.numel()}, {dst.numel()}), dst.data(), src.data(),
                 dst.data(), 0.f);
}

void scale_(Tensor& x, float s) { be(x).unary(Unary::Scale, x.data(), x.data(), x.numel(), s, 0.f); }
Tensor add_scalar(const Tensor& x, float s) { return unary_op("add_scalar", Unary::AddScalar, x, s); }
Tensor neg(const Tensor& x) { return unary_op("neg", Unary::Neg, x); }
Tensor exp(const Tensor& x) { return unary_op("exp", Unary::Exp, x); }
Tensor log(const Tensor& x) { return unary_op("log", Unary::Log, x); }
Tensor sigmoid(const Tensor& x) { return unary_op("sigmoid", Unary::Sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary_op("tanh", Unary::Tanh, x); }
Tensor relu(const Tensor& x) { return unary_op("relu", Unary::Relu, x); }
Tensor gelu(const Tensor& x) { return unary_op("gelu", Unary::Gelu, x); }
Tensor sqrt(const Tensor& x) { return unary_op("sqrt", Unary::Sqrt, x); }
Tensor square(const Tensor& x) { return unary_op("square", Unary::Square, x); }
Tensor pow(const Tensor& x, float p) { return unary_op("pow", Unary::Pow, x, p); }
Tensor clamp(const Tensor& x, float lo, float hi) {
  HR_CHECK(lo <= hi, "clamp: lo > hi");
  return unary_op("clamp", Unary::Clamp, x, lo, hi);
}

}  // namespace hr
