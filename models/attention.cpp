#include "models/attention.h"

#include <cmath>

#include "kernels/base/error.h"

namespace hr {

Tensor mix_heads(const Tensor& x, const Tensor& m) {
  const int64_t B = x.dim(0), Hin = x.dim(1), T = x.dim(2), S = x.dim(3);
  // one gemm with m^T broadcast over the batch: (H_out, H_in) @ (B, H_in, T*S)
  Tensor y = matmul(m, reshape(x, {B, Hin, T * S}), true, false);
  return reshape(y, {B, m.dim(1), T, S});
}

namespace {

Tensor identity(int64_t n, Device d) {
  std::vector<float> v(static_cast<size_t>(n * n), 0.f);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + i)] = 1.f;
  return Tensor::from_vector(v, {n, n}, d);
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t d_model, const AttentionOptions& opt)
    : o(register_module("o", std::make_unique<Linear>(opt.heads * opt.head_dim, d_model))), opt_(opt) {
  HR_CHECK(opt.heads >= 0 && opt.head_dim > 0, "attention: heads must be >= 0 and head_dim > 0");
  const int64_t H = opt.heads, inner = H * opt.head_dim;
  if (H == 0) return;  // a fully pruned layer: only the output bias remains (the residual path)
  q = &register_module("q", std::make_unique<Linear>(d_model, inner));
  k = &register_module("k", std::make_unique<Linear>(d_model, inner));
  v = &register_module("v", std::make_unique<Linear>(d_model, inner));
  if (opt.talking_heads) {
    talk_logits = &register_parameter("talk.logits", {H, H}, Init::zeros());
    talk_weights = &register_parameter("talk.weights", {H, H}, Init::zeros());
    talk_logits->copy_from(identity(H, Device::CPU));  // starts as plain attention
    talk_weights->copy_from(identity(H, Device::CPU));
  }
  if (opt.gates) gates = &register_module("gates", std::make_unique<HardConcreteGates>(H, opt.gate));
  if (opt.cross_layer && opt.prev_heads > 0) {
    if (opt.prev_heads != H) {
      cross_map = &register_parameter("cross.map", {opt.prev_heads, H}, Init::zeros());
    } else if (opt.permute == "interleave" && opt.layer_index % 2 == 1) {
      // head i of this layer receives head perm[i] of the previous one: 0, H/2, 1, H/2+1, ...
      std::vector<float> p(static_cast<size_t>(H * H), 0.f);
      for (int64_t i = 0; i < H; ++i) {
        const int64_t src = (i % 2 == 0) ? i / 2 : (H + 1) / 2 + i / 2;
        p[static_cast<size_t>(src * H + i)] = 1.f;
      }
      head_permutation_ = Tensor::from_vector(p, {H, H});
    }
  }
}

Tensor MultiHeadAttention::forward(const Tensor& x, LayerContext& ctx) const {
  const int64_t B = x.dim(0), T = x.dim(1), H = opt_.heads, Dh = opt_.head_dim;
  if (H == 0) {
    ctx.prev_logits = Tensor();
    return add(Tensor::zeros(x.shape(), x.device()), o.bias);
  }
  auto heads_first = [&](const Tensor& t) { return permute(reshape(t, {B, T, H, Dh}), {0, 2, 1, 3}); };
  const Tensor qh = heads_first(q->forward(x));  // (B, H, T, Dh)
  const Tensor kh = heads_first(k->forward(x));  // (B, H, T, Dh)
  const Tensor vh = heads_first(v->forward(x));  // (B, H, T, Dh)
  const float s = 1.f / std::sqrt(static_cast<float>(Dh));

  Tensor probs;  // (B, H, T, T)
  const bool mixes_logits = talk_logits || opt_.cross_layer;
  if (!mixes_logits) {
    ctx.prev_logits = Tensor();  // a plain layer breaks the chain of residual logits
    probs = softmax(matmul(qh, kh, false, true), ctx.key_mask, s);  // scale + mask + softmax in one pass
  } else {
    Tensor logits = scale(matmul(qh, kh, false, true), s);  // (B, H, T, T)
    if (talk_logits) logits = mix_heads(logits, *talk_logits);
    if (opt_.cross_layer && ctx.prev_logits.defined()) {
      Tensor prev = ctx.prev_logits;
      if (cross_map) prev = mix_heads(prev, *cross_map);
      else if (head_permutation_.defined()) prev = mix_heads(prev, head_permutation_.to(x.device()));
      logits = add(logits, prev);
    }
    ctx.prev_logits = opt_.cross_layer ? logits : Tensor();  // only a cross-layer layer passes its logits on
    probs = softmax(logits, ctx.key_mask);
  }
  if (talk_weights) probs = mix_heads(probs, *talk_weights);
  if (ctx.attention_maps) ctx.attention_maps->push_back(probs.detach());
  probs = dropout(probs, opt_.dropout, training());

  Tensor heads = matmul(probs, vh);  // (B, H, T, Dh)
  if (gates) heads = mul(heads, reshape(gates->forward(), {1, H, 1, 1}));
  if (head_mask.defined()) heads = mul(heads, reshape(head_mask, {head_mask.ndim() == 2 ? B : 1, H, 1, 1}));
  return o.forward(reshape(permute(heads, {0, 2, 1, 3}), {B, T, H * Dh}));  // (B, T, H*Dh) -> (B, T, D)
}

LayerStats MultiHeadAttention::stats(int64_t T) const {
  LayerStats st;
  const double D = static_cast<double>(o.weight.dim(0)), H = static_cast<double>(opt_.heads),
               Dh = static_cast<double>(opt_.head_dim), L = static_cast<double>(T);
  st.heads = opt_.heads;
  st.head_dim = opt_.head_dim;
  st.parameters = num_parameters();
  st.passes_logits = opt_.cross_layer && opt_.heads > 0;
  st.attention_flops = 2.0 * (4.0 * D * H * Dh)  // q, k, v, o projections
                       + 2.0 * (2.0 * L * H * Dh);  // scores and weighted sum
  if (talk_logits) st.attention_flops += 2.0 * 2.0 * L * H * H;
  if (cross_map) st.attention_flops += 2.0 * L * static_cast<double>(opt_.prev_heads) * H;
  return st;
}

}  // namespace hr
