// Fused attention (Backend::attention): every head's dropout(softmax(scale * q k^T + mask)) v without the (B, H, Tq, Tk)
// weights, forward and backward. The unfused ops it replaces (head_scores, attention_weights, head_context) are its
// reference: the same operands, the same roundings under bf16 and the same dropout draws.
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads, const Tensor& mask,
                       float scale, float p, bool training, bool bf16_for_product) {
  const char* op = "fused_attention";
  for (const Tensor* t : {&q, &k, &v}) detail::check_operand(*t, op);
  detail::check_same_device(q, k, op);
  detail::check_same_device(q, v, op);
  HR_CHECK(q.ndim() == 3 && k.ndim() == 3 && k.shape() == v.shape() && q.dim(0) == k.dim(0) &&
               q.dim(2) == k.dim(2) && heads > 0 && q.dim(2) % heads == 0 && q.dim(2) > 0 && k.dim(1) > 0,
           std::string(op) + ": q " + shape_str(q.shape()) + ", k " + shape_str(k.shape()) + " and v " +
               shape_str(v.shape()) + " are not (B, Tq, H*Dh), (B, Tk, H*Dh) and (B, Tk, H*Dh) for " +
               std::to_string(heads) + " heads");
  const int64_t B = q.dim(0), Tq = q.dim(1), Tk = k.dim(1), H = heads, Dh = q.dim(2) / heads;
  if (mask.defined()) {
    detail::check_f32(mask, op);
    detail::check_same_device(q, mask, op);
    HR_CHECK(mask.shape() == Shape({B, Tk}),
             std::string(op) + ": mask " + shape_str(mask.shape()) + " is not (B, Tk) = " + shape_str({B, Tk}));
  }
  // the unfused weights' draws: the counters of a (B, H, Tq, Tk) tensor
  const detail::DropoutDraw d = detail::dropout_draw(Shape{B, H, Tq, Tk}, p, training, op);
  const bool low = detail::low_precision({&q, &k, &v});
  const Tensor qin = detail::operand(q, low), kin = detail::operand(k, low), vin = detail::operand(v, low);
  FusedAttentionArgs a;
  a.B = B, a.H = H, a.Tq = Tq, a.Tk = Tk, a.Dh = Dh;
  a.inputs = low ? GemmInputs::BF16 : GemmInputs::F32;
  a.q = detail::raw(qin), a.k = detail::raw(kin), a.v = detail::raw(vin);
  a.mask = mask.defined() ? mask.data() : nullptr;
  a.scale = scale;
  a.p_drop = d.p, a.seed = d.seed, a.offset = d.offset;
  // (B, Tq, H*Dh); in bf16 the tensor the next product reads and its backward rule keeps, so that this one keeps no
  // f32 copy besides
  const bool out_bf16 = bf16_for_product && autocast::bf16();
  Tensor out = Tensor::empty(q.shape(), q.device(), out_bf16 ? DType::BF16 : DType::F32);
  Tensor stats = Tensor::empty({B, H, Tq, 2}, q.device());
  be(q).attention(a, out_bf16 ? static_cast<void*>(out.bf16()) : static_cast<void*>(out.data()), out_bf16,
                  stats.data());
  if (needs_grad({&q, &k, &v})) {
    // all it keeps: the operands as multiplied (which the projections' rules hold anyway), the output and two floats a
    // row; the mask is the model input's
    detail::record(op, out, [q = detail::grad_target(q, qin), k = detail::grad_target(k, kin),
                             v = detail::grad_target(v, vin), qin, kin, vin, mask, saved = out.detach(), stats,
                             a, out_bf16](const Tensor& g) {
      Tensor gq = Tensor::empty(q.shape(), q.device()), gk = Tensor::empty(k.shape(), k.device()),
             gv = Tensor::empty(v.shape(), v.device());
      be(g).attention_backward(a, detail::raw(saved), out_bf16, stats.data(), g.data(), gq.data(), gk.data(),
                               gv.data());
      if (q.requires_grad()) accumulate_grad(q, gq, true);
      if (k.requires_grad()) accumulate_grad(k, gk, true);
      if (v.requires_grad()) accumulate_grad(v, gv, true);
    });
  }
  return out;
}

}  // namespace hr
