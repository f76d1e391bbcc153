// matmul (2-d and batched, with transposes and a broadcast 2-d operand), linear (x @ w^T + b, one gemm) and attention's
// per-head products over heads left in place (head_scores, head_context).
// Under a bf16 autocast scope (framework/autocast.h) they multiply bf16 copies of their operands into f32 results, and
// their backward rules keep only those copies (not the f32 activations), so the backward gemms run in bf16 too.
#include "framework/autocast.h"
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;
using detail::check_operand;
using detail::grad_target;
using detail::operand;
using detail::raw;

namespace {

struct MatDims {
  int64_t batch, rows, cols;  // the stored matrix is (rows, cols), repeated `batch` times
};

MatDims mat_dims(const Tensor& t, const char* op) {
  HR_CHECK(t.ndim() >= 2, std::string(op) + ": expected a matrix or a batch of matrices, got shape " +
                              shape_str(t.shape()));
  return {t.numel() / (t.dim(-2) * t.dim(-1)), t.dim(-2), t.dim(-1)};
}


// C = op(A) @ op(B) for contiguous row-major tensors, batch dims already checked; A and B f32 or bf16 (rounded here
// when either is bf16), C f32, or bf16 with `bf16_out` (rounded after the epilogue). bias (N) optional; `gelu`: C =
// gelu(C + bias), the gemm's epilogue. With `into`, C is that tensor and the product is added to it (a gradient
// buffer).
Tensor gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, const Shape& batch_shape, const float* bias = nullptr,
            const Tensor& into = Tensor(), bool gelu = false, bool bf16_out = false) {
  if (a.dtype() != b.dtype()) {
    const bool low = detail::low_precision({&a, &b});
    return gemm(operand(a, low), ta, operand(b, low), tb, batch_shape, bias, into, gelu, bf16_out);
  }
  const MatDims da = mat_dims(a, "matmul"), db = mat_dims(b, "matmul");
  GemmArgs g;
  g.M = ta ? da.cols : da.rows;
  g.K = ta ? da.rows : da.cols;
  g.N = tb ? db.rows : db.cols;
  const int64_t kb = tb ? db.cols : db.rows;
  HR_CHECK(g.K == kb, "matmul: inner dimensions differ: " + shape_str(a.shape()) + (ta ? "^T" : "") + " @ " +
                          shape_str(b.shape()) + (tb ? "^T" : ""));
  g.batch = std::max(da.batch, db.batch);
  g.transA = ta;
  g.transB = tb;
  g.inputs = a.dtype() == DType::BF16 ? GemmInputs::BF16 : GemmInputs::F32;
  g.A = raw(a);
  g.lda = da.cols;
  g.strideA = da.batch == 1 ? 0 : da.rows * da.cols;
  g.B = raw(b);
  g.ldb = db.cols;
  g.strideB = db.batch == 1 ? 0 : db.rows * db.cols;
  Shape out_shape = batch_shape;
  out_shape.push_back(g.M);
  out_shape.push_back(g.N);
  HR_CHECK(!bf16_out || !into.defined(), "internal: a bf16 gemm result cannot accumulate");
  Tensor c = into.defined() ? into : Tensor::empty(out_shape, a.device(), bf16_out ? DType::BF16 : DType::F32);
  HR_CHECK(c.shape() == out_shape, "internal: gemm into " + shape_str(c.shape()) + " for " + shape_str(out_shape));
  g.beta = into.defined() ? 1.f : 0.f;
  if (bf16_out) g.C16 = c.bf16();
  else g.C = c.data();
  g.ldc = g.N;
  g.strideC = g.M * g.N;
  g.bias = bias;
  g.gelu = gelu;
  if (c.numel() > 0) be(a).gemm(g);
  return c;
}

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// op(a) @ op(b) with the batch rules of matmul(); operands f32 or bf16. Not recorded.
Tensor product(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const Shape ba = batch_of(a), bb = batch_of(b);
  HR_CHECK(ba == bb || ba.empty() || bb.empty(),
           "matmul: batch dimensions differ: " + shape_str(a.shape()) + " @ " + shape_str(b.shape()));
  const Shape batch = ba.empty() ? bb : ba;
  if (bb.empty() && !ba.empty() && !ta) {
    // fold a's batch into its rows: one large gemm instead of a batch of small ones
    Shape s = batch;
    s.push_back(a.dim(-2));
    s.push_back(tb ? b.dim(0) : b.dim(1));
    return detail::view_as(gemm(detail::view_as(a, {a.numel() / a.dim(-1), a.dim(-1)}), false, b, tb, {}), s);
  }
  return gemm(a, ta, b, tb, batch);
}

// Where the (B, H) matrices of a head_scores / head_context operand lie: matrix (b, h) is (rows, cols) with rows `ld`
// apart, starting at b * outer + h * stride.
struct HeadLayout {
  int64_t rows, cols, ld, stride, outer;
};
// (B, T, H*Dh): head h is a block of Dh columns
HeadLayout heads_in_columns(int64_t T, int64_t H, int64_t Dh) { return {T, Dh, H * Dh, Dh, T * H * Dh}; }
// (B, H, R, C), contiguous
HeadLayout heads_first(int64_t H, int64_t R, int64_t C) { return {R, C, C, R * C, H * R * C}; }

// C[b, h] = op(A[b, h]) @ op(B[b, h]) for B sequences of H heads: one gemm with an outer batch; a and b f32 or bf16
// (the same), c f32.
void head_gemm(int64_t B, int64_t H, const Tensor& a, HeadLayout la, bool ta, const Tensor& b, HeadLayout lb, bool tb,
               Tensor& c, HeadLayout lc) {
  GemmArgs g;
  g.M = ta ? la.cols : la.rows;
  g.K = ta ? la.rows : la.cols;
  g.N = tb ? lb.rows : lb.cols;
  HR_CHECK(g.K == (tb ? lb.cols : lb.rows) && g.M == lc.rows && g.N == lc.cols && a.dtype() == b.dtype(),
           "internal: head_gemm operands do not match");
  if (c.numel() == 0) return;
  if (g.K == 0) return c.fill_(0.f);
  g.outer = B;
  g.batch = H;
  g.transA = ta;
  g.transB = tb;
  g.inputs = a.dtype() == DType::BF16 ? GemmInputs::BF16 : GemmInputs::F32;
  g.A = raw(a), g.lda = la.ld, g.strideA = la.stride, g.outerA = la.outer;
  g.B = raw(b), g.ldb = lb.ld, g.strideB = lb.stride, g.outerB = lb.outer;
  g.C = c.data(), g.ldc = lc.ld, g.strideC = lc.stride, g.outerC = lc.outer;
  be(a).gemm(g);
}

// c[b, h] = a[b, h] @ op(b[b, h]) for the heads of both ops below, recorded with its backward rule: da = g @ op(b)^T,
// db = a^T @ g (or g^T @ a when b is transposed), each written in its operand's own layout.
Tensor head_product(const char* op, int64_t B, int64_t H, const Tensor& a, HeadLayout la, const Tensor& b,
                    HeadLayout lb, bool tb, const Shape& out_shape, HeadLayout lc) {
  const bool low = detail::low_precision({&a, &b});
  const Tensor ain = operand(a, low), bin = operand(b, low);  // what the products read, forward and backward
  Tensor out = Tensor::empty(out_shape, a.device());
  head_gemm(B, H, ain, la, false, bin, lb, tb, out, lc);
  if (needs_grad({&a, &b})) {
    detail::record(op, out, [a = grad_target(a, ain), b = grad_target(b, bin), ain, bin, B, H, la, lb, tb,
                             lc](const Tensor& g) {
      const Tensor gin = operand(g, ain.dtype() == DType::BF16);  // in lc's layout
      if (a.requires_grad()) {
        Tensor ga = Tensor::empty(a.shape(), a.device());
        head_gemm(B, H, gin, lc, false, bin, lb, !tb, ga, la);
        accumulate_grad(a, ga, true);
      }
      if (b.requires_grad()) {
        Tensor gb = Tensor::empty(b.shape(), b.device());
        if (tb) head_gemm(B, H, gin, lc, true, ain, la, false, gb, lb);
        else head_gemm(B, H, ain, la, true, gin, lc, false, gb, lb);
        accumulate_grad(b, gb, true);
      }
    });
  }
  return out;
}

}  // namespace

Tensor head_scores(const Tensor& q, const Tensor& k, int64_t heads) {
  check_operand(q, "head_scores");
  check_operand(k, "head_scores");
  detail::check_same_device(q, k, "head_scores");
  HR_CHECK(q.ndim() == 3 && k.ndim() == 3 && q.dim(0) == k.dim(0) && q.dim(2) == k.dim(2) && heads > 0 &&
               q.dim(2) % heads == 0,
           "head_scores: q " + shape_str(q.shape()) + " and k " + shape_str(k.shape()) + " are not (B, T, H*Dh) for " +
               std::to_string(heads) + " heads");
  const int64_t B = q.dim(0), Tq = q.dim(1), Tk = k.dim(1), H = heads, Dh = q.dim(2) / heads;
  return head_product("head_scores", B, H, q, heads_in_columns(Tq, H, Dh), k, heads_in_columns(Tk, H, Dh), true,
                      {B, H, Tq, Tk}, heads_first(H, Tq, Tk));  // (Tq, Dh) @ (Dh, Tk)
}

Tensor head_context(const Tensor& probs, const Tensor& v) {
  check_operand(probs, "head_context");
  check_operand(v, "head_context");
  detail::check_same_device(probs, v, "head_context");
  HR_CHECK(probs.ndim() == 4 && v.ndim() == 3 && probs.dim(0) == v.dim(0) && probs.dim(3) == v.dim(1) &&
               probs.dim(1) > 0 && v.dim(2) % probs.dim(1) == 0,
           "head_context: probs " + shape_str(probs.shape()) + " is not (B, H, Tq, Tk) for v " + shape_str(v.shape()) +
               " (B, Tk, H*Dh)");
  const int64_t B = probs.dim(0), H = probs.dim(1), Tq = probs.dim(2), Tk = probs.dim(3), Dh = v.dim(2) / H;
  return head_product("head_context", B, H, probs, heads_first(H, Tq, Tk), v, heads_in_columns(Tk, H, Dh), false,
                      {B, Tq, H * Dh}, heads_in_columns(Tq, H, Dh));  // (Tq, Tk) @ (Tk, Dh)
}

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  check_operand(a, "matmul");
  check_operand(b, "matmul");
  detail::check_same_device(a, b, "matmul");
  mat_dims(a, "matmul");
  mat_dims(b, "matmul");
  const bool low = detail::low_precision({&a, &b});
  const Tensor ain = operand(a, low), bin = operand(b, low);  // what the products read, forward and backward
  Tensor out = product(ain, bin, ta, tb);

  if (needs_grad({&a, &b})) {
    detail::record("matmul", out, [a = grad_target(a, ain), b = grad_target(b, bin), ain, bin, ta,
                                   tb](const Tensor& g) {
      const Tensor gin = operand(g, ain.dtype() == DType::BF16);
      if (a.requires_grad()) {
        Tensor ga = ta ? product(bin, gin, tb, true) : product(gin, bin, false, !tb);
        accumulate_grad(a, sum_to(ga, a.shape()));
      }
      if (b.requires_grad()) {
        Tensor gb;
        if (batch_of(b).empty() && !batch_of(a).empty() && !ta) {
          // b was broadcast over a's batch: fold the batch into one gemm rather than summing per-batch products
          Tensor a2 = detail::view_as(ain, {a.numel() / a.dim(-1), a.dim(-1)});
          Tensor g2 = detail::view_as(gin, {g.numel() / g.dim(-1), g.dim(-1)});
          gb = tb ? product(g2, a2, true, false) : product(a2, g2, true, false);
        } else {
          gb = tb ? product(gin, ain, true, ta) : product(ain, gin, !ta, false);
        }
        accumulate_grad(b, sum_to(gb, b.shape()));
      }
    });
  }
  return out;
}

namespace {

// x @ w^T + bias (gelu of it with `gelu`: the gemm's epilogue) and the operands the product read, rounded to bf16
// under a bf16 scope, which the backward rule reuses; under a bf16 scope `bf16_for_product` makes the result bf16.
struct LinearForward {
  Tensor y;    // (..., out)
  Tensor xin;  // x as multiplied (its bf16 copy under a bf16 scope)
  Tensor x2;   // (rows, in): xin's values
  Tensor win;  // (out, in)
};

LinearForward linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, bool gelu, const char* op,
                             bool bf16_for_product = false) {
  check_operand(x, op);
  detail::check_f32(w, op);
  detail::check_same_device(x, w, op);
  HR_CHECK(w.ndim() == 2 && x.ndim() >= 1 && x.dim(-1) == w.dim(1), std::string(op) + ": input " +
                                                                        shape_str(x.shape()) + " does not match weight " +
                                                                        shape_str(w.shape()) + " (out, in)");
  if (bias.defined()) {
    detail::check_same_device(x, bias, op);
    HR_CHECK(bias.ndim() == 1 && bias.dim(0) == w.dim(0),
             std::string(op) + ": bias " + shape_str(bias.shape()) + " for weight " + shape_str(w.shape()));
  }
  const int64_t in = w.dim(1);
  const bool low = autocast::bf16();
  LinearForward f;
  f.xin = operand(x, low);
  f.x2 = detail::view_as(f.xin, {x.numel() / in, in});
  f.win = operand(w, low || x.dtype() == DType::BF16);
  Shape ys = x.shape();
  ys.back() = w.dim(0);
  const float* b = bias.defined() ? bias.data() : nullptr;
  f.y = detail::view_as(gemm(f.x2, false, f.win, true, {}, b, Tensor(), gelu, bf16_for_product && low), ys);
  return f;
}

}  // namespace

// With gradients the result stays f32: the backward rules of what reads it send their gradients to it.
Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& bias, bool bf16_for_product) {
  // GELU's backward needs its input, which the epilogue never writes: with gradients it runs as its own op
  if (needs_grad({&x, &w, &bias})) return gelu(linear(x, w, bias));
  return linear_forward(x, w, bias, true, "linear_gelu", bf16_for_product).y;
}

Tensor autocast_operand(const Tensor& x) {
  check_operand(x, "autocast_operand");
  Tensor c = operand(x, autocast::bf16());
  // on the tape when it is a copy, so that the products it feeds add their gradients into its buffer, which x adopts
  if (!c.same(x) && needs_grad({&x}))
    detail::record("autocast_operand", c, [x = x.grad_ref()](const Tensor& g) { accumulate_grad(x, g); });
  return c;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, bool bf16_for_product) {
  const bool grad = needs_grad({&x, &w, &bias});
  LinearForward f = linear_forward(x, w, bias, false, "linear", bf16_for_product && !grad);
  if (grad) {
    detail::record("linear", f.y, [x = grad_target(x, f.xin), x2 = f.x2, w = grad_target(w, f.win), win = f.win,
                                   bias = bias.defined() ? bias.grad_ref() : Tensor()](const Tensor& g) {
      Tensor g2 = detail::view_as(g, {g.numel() / w.dim(0), w.dim(0)});  // (rows, out)
      const Tensor gin = operand(g2, win.dtype() == DType::BF16);
      // (rows, in) +=, straight into x's gradient when it has one of its own (x feeds several linears: q, k, v)
      if (Tensor gx = grad_buffer(x); gx.defined()) gemm(gin, false, win, false, {}, nullptr, detail::view_as(gx, x2.shape()));
      else if (x.requires_grad()) accumulate_grad(x, detail::view_as(gemm(gin, false, win, false, {}), x.shape()), true);
      if (Tensor gw = grad_buffer(w); gw.defined()) gemm(gin, true, x2, false, {}, nullptr, gw);  // (out, in) +=
      else if (w.requires_grad()) accumulate_grad(w, gemm(gin, true, x2, false, {}));
      if (bias.defined() && bias.requires_grad()) accumulate_grad(bias, sum_to(g2, bias.shape()));
    });
  }
  return f.y;
}

}  // namespace hr
