#include "models/attention.h"

#include <cmath>

#include "framework/autocast.h"
#include "framework/autograd.h"
#include "kernels/backend.h"
#include "kernels/base/error.h"

namespace hr {

namespace {
bool fused_attention_on = true;  // UnfusedAttention turns it off for its scope
}  // namespace

UnfusedAttention::UnfusedAttention() : saved_(fused_attention_on) { fused_attention_on = false; }
UnfusedAttention::~UnfusedAttention() { fused_attention_on = saved_; }

Tensor mix_heads(const Tensor& x, const Tensor& m) {
  // f32 under bf16: the mixed logits feed a softmax, and an (H, H) mixing costs nothing next to the projections
  const AutocastOff f32;
  const int64_t B = x.dim(0), Hin = x.dim(1), T = x.dim(2), S = x.dim(3);
  // one gemm with m^T broadcast over the batch: (H_out, H_in) @ (B, H_in, T*S)
  Tensor y = matmul(m, reshape(x, {B, Hin, T * S}), true, false);
  return reshape(y, {B, m.dim(1), T, S});
}

MultiHeadAttention::MultiHeadAttention(int64_t d_model, const AttentionOptions& opt)
    : o(register_module("o", std::make_unique<Linear>(opt.heads * opt.head_dim, d_model))), opt_(opt) {
  HR_CHECK(opt.heads >= 0 && opt.head_dim > 0, "attention: heads must be >= 0 and head_dim > 0");
  const int64_t H = opt.heads, inner = H * opt.head_dim;
  if (H == 0) return;  // a fully pruned layer: only the output bias remains (the residual path)
  q = &register_module("q", std::make_unique<Linear>(d_model, inner));
  k = &register_module("k", std::make_unique<Linear>(d_model, inner));
  v = &register_module("v", std::make_unique<Linear>(d_model, inner));
  if (opt.talking_heads) {
    // identities: it starts as plain attention
    talk_logits = &register_parameter("talk.logits", {H, H}, Init::identity());
    talk_weights = &register_parameter("talk.weights", {H, H}, Init::identity());
  }
  if (opt.gates) gates = &register_module("gates", std::make_unique<HardConcreteGates>(H, opt.gate));
  if (opt.cross_layer && opt.prev_heads > 0) {
    if (opt.prev_heads != H) {
      cross_map = &register_parameter("cross.map", {opt.prev_heads, H}, Init::zeros());
    } else if (opt.permute == "interleave" && opt.layer_index % 2 == 1 && o.weight.has_values()) {
      // head i of this layer receives head perm[i] of the previous one: 0, H/2, 1, H/2+1, ... (a model of shapes
      // only, ShapesOnly, has no values to permute)
      std::vector<float> p(static_cast<size_t>(H * H), 0.f);
      for (int64_t i = 0; i < H; ++i) {
        const int64_t src = (i % 2 == 0) ? i / 2 : (H + 1) / 2 + i / 2;
        p[static_cast<size_t>(src * H + i)] = 1.f;
      }
      head_permutation_ = Tensor::from_vector(p, {H, H});
    }
  }
}

// The unfused path: the (B, H, T, T) weights as tensors, for what reads or mixes them.
Tensor MultiHeadAttention::unfused_heads(const Tensor& qx, const Tensor& kx, const Tensor& vx,
                                         LayerContext& ctx) const {
  const int64_t H = opt_.heads;
  const float s = 1.f / std::sqrt(static_cast<float>(opt_.head_dim));
  Tensor probs;  // (B, H, T, T)
  const bool mixes_logits = talk_logits || opt_.cross_layer;
  const bool fused = !mixes_logits && !ctx.attention_maps;  // the maps need the weights before dropout
  if (!mixes_logits) {
    ctx.prev_logits = Tensor();  // a plain layer breaks the chain of residual logits
    const Tensor scores = head_scores(qx, kx, H);
    // fused: scale + mask + softmax + dropout in one pass, written as head_context reads it (bf16 under a bf16 scope)
    probs = fused ? attention_weights(scores, ctx.key_mask, s, opt_.dropout, training())
                  : softmax(scores, ctx.key_mask, s);
  } else {
    Tensor logits = scale(head_scores(qx, kx, H), s);  // (B, H, T, T)
    if (talk_logits) logits = mix_heads(logits, *talk_logits);
    if (opt_.cross_layer && ctx.prev_logits.defined()) {
      Tensor prev = ctx.prev_logits;
      if (cross_map) prev = mix_heads(prev, *cross_map);
      else if (head_permutation_.defined()) prev = mix_heads(prev, head_permutation_.to(qx.device()));
      logits = add(logits, prev);
    }
    ctx.prev_logits = opt_.cross_layer ? logits : Tensor();  // only a cross-layer layer passes its logits on
    probs = softmax(logits, ctx.key_mask);
  }
  // the maps are distributions: with talking heads the softmax of each mixed head, before the weight mixing (whose
  // rows sum to talk_weights' column sums and may hold negative weights)
  if (ctx.attention_maps) ctx.attention_maps->push_back(probs.detach());
  if (talk_weights) probs = mix_heads(probs, *talk_weights);
  if (!fused) probs = dropout(probs, opt_.dropout, training());
  return head_context(probs, vx);  // (B, T, H*Dh)
}

const char* MultiHeadAttention::unfused_reason(bool attention_maps, Device d) const {
  if (talk_logits) return "talking heads mix the logits and weights of all heads";
  if (opt_.cross_layer) return "cross-layer logits are passed on to the next layer";
  if (attention_maps) return "weights are asked for (attention maps)";
  if (d == Device::CUDA && opt_.head_dim > kCudaFusedAttentionMaxHeadDim)
    return "heads are wider than the CUDA kernel's 256 dimensions";
  if (!fused_attention_on) return "fused kernel is switched off (UnfusedAttention)";
  return nullptr;
}

Tensor MultiHeadAttention::forward(const Tensor& x, LayerContext& ctx) const {
  const int64_t B = x.dim(0), T = x.dim(1), H = opt_.heads, Dh = opt_.head_dim;
  if (H == 0) {
    ctx.prev_logits = Tensor();
    return add(Tensor::zeros(x.shape(), x.device()), o.bias);
  }
  // the heads stay where the projections put them: head h is columns [h*Dh, (h+1)*Dh) (head_scores, head_context)
  const Tensor xin = autocast_operand(x);  // rounded once for the three projections under bf16
  // only the head products read them: bf16 straight from the gemm when nothing is recorded under a bf16 scope
  const Tensor qx = q->forward(xin, true);  // (B, T, H*Dh)
  const Tensor kx = k->forward(xin, true);  // (B, T, H*Dh)
  const Tensor vx = v->forward(xin, true);  // (B, T, H*Dh)
  const float s = 1.f / std::sqrt(static_cast<float>(Dh));

  Tensor heads;  // (B, T, H*Dh)
  if (unfused_reason(ctx.attention_maps != nullptr, x.device())) {
    heads = unfused_heads(qx, kx, vx, ctx);
  } else {
    ctx.prev_logits = Tensor();  // a plain layer breaks the chain of residual logits
    // in bf16 under a bf16 scope when only the output projection reads it (gates and head masks multiply it first)
    const bool only_product = !gates && !head_mask_.defined();
    heads = fused_attention(qx, kx, vx, H, ctx.key_mask, s, opt_.dropout, training(), only_product);
  }
  if (gates || head_mask_.defined()) {
    heads = reshape(heads, {B, T, H, Dh});
    if (gates) heads = mul(heads, reshape(gates->forward(), {1, 1, H, 1}));
    if (head_mask_.defined()) heads = mul(heads, reshape(head_mask_, {head_mask_.ndim() == 2 ? B : 1, 1, H, 1}));
    heads = reshape(heads, {B, T, H * Dh});
  }
  return o.forward(heads);  // (B, T, H*Dh) -> (B, T, D)
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


// ---- AttentionHeads

std::vector<float> MultiHeadAttention::gate_open_probability() const {
  NoGradGuard ng;
  return gates ? gates->open_probability().to_vector() : std::vector<float>{};
}

std::vector<float> MultiHeadAttention::gate_values() const {
  NoGradGuard ng;
  return gates ? gates->eval_z().to_vector() : std::vector<float>{};
}

// Talking heads: one index h plays three roles, the input logits of q_h/k_h, the mixed logits/weights of head h, and
// the value head h the gate acts on. Removing h is exact only when its value output is zero (closed gate) and its
// logits and weights reach no kept head: talk_logits[h, K] = 0 and talk_weights[h, K] = 0.
std::vector<int64_t> MultiHeadAttention::exact_closure(std::vector<int64_t> keep) const {
  if (!talk_logits) return keep;
  const int64_t H = opt_.heads;
  const std::vector<float> tl = talk_logits->to_vector(), tw = talk_weights->to_vector();  // (H, H) [in, out]
  std::vector<bool> kept(static_cast<size_t>(H), false);
  for (int64_t h : keep) kept[static_cast<size_t>(h)] = true;
  for (bool grew = true; grew;) {
    grew = false;
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t j = 0; j < H && !kept[static_cast<size_t>(h)]; ++j) {
        const size_t hj = static_cast<size_t>(h * H + j);
        if (kept[static_cast<size_t>(j)] && (tl[hj] != 0.f || tw[hj] != 0.f)) kept[static_cast<size_t>(h)] = grew = true;
      }
    }
  }
  keep.clear();
  for (int64_t h = 0; h < H; ++h)
    if (kept[static_cast<size_t>(h)]) keep.push_back(h);
  return keep;
}

void MultiHeadAttention::write_pruned_block(YAML::Node& layer_block, const std::vector<int64_t>& keep) const {
  YAML::Node a = layer_block["attention"];
  a["heads"] = static_cast<int64_t>(keep.size());
  a["pruned"] = true;  // allows 0 heads
  a.remove("gates");   // folded into the output projection
  YAML::Node original(YAML::NodeType::Sequence);
  original.SetStyle(YAML::EmitterStyle::Flow);
  for (int64_t h : keep) original.push_back(opt_.original_heads.empty() ? h : opt_.original_heads[static_cast<size_t>(h)]);
  a["original_heads"] = original;
}

namespace {

// Rows [h*Dh, (h+1)*Dh) of a (H*Dh, C) matrix (C = 1 for a bias) for each kept head h.
std::vector<float> head_rows(const std::vector<float>& w, int64_t cols, int64_t Dh, const std::vector<int64_t>& keep) {
  std::vector<float> out;
  for (int64_t h : keep) out.insert(out.end(), w.begin() + h * Dh * cols, w.begin() + (h + 1) * Dh * cols);
  return out;
}

// Columns of the kept heads' blocks of a (D, H*Dh) matrix, each block times its head's factor.
std::vector<float> head_cols(const std::vector<float>& w, int64_t rows, int64_t H, int64_t Dh,
                             const std::vector<int64_t>& keep, const std::vector<float>& factor) {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(rows * static_cast<int64_t>(keep.size()) * Dh));
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < keep.size(); ++k)
      for (int64_t d = 0; d < Dh; ++d) out.push_back(w[static_cast<size_t>(r * H * Dh + keep[k] * Dh + d)] * factor[k]);
  return out;
}

// m[rows, cols] of an (R, C) matrix.
std::vector<float> submatrix(const std::vector<float>& m, int64_t C, const std::vector<int64_t>& rows,
                             const std::vector<int64_t>& cols) {
  std::vector<float> out;
  for (int64_t r : rows)
    for (int64_t c : cols) out.push_back(m[static_cast<size_t>(r * C + c)]);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> MultiHeadAttention::pruned_parameters(
    const std::vector<int64_t>& keep, const std::vector<int64_t>& prev_keep) const {
  std::vector<std::pair<std::string, Tensor>> out;
  const int64_t H = opt_.heads, Dh = opt_.head_dim, D = o.weight.dim(0), kept = static_cast<int64_t>(keep.size());
  if (H == 0) return out;
  const auto own = named_parameters();
  auto put = [&](const Tensor& param, std::vector<float> values, Shape shape) {
    for (const auto& [name, t] : own)
      if (t.same(param)) out.emplace_back(name, Tensor::from_vector(values, shape));
  };
  const std::vector<float> z = gate_values();
  std::vector<float> fold(keep.size(), 1.f);  // each kept head's deterministic gate, folded into o
  for (size_t i = 0; i < keep.size() && !z.empty(); ++i) fold[i] = z[static_cast<size_t>(keep[i])];
  for (const Linear* proj : {q, k, v}) {
    put(proj->weight, head_rows(proj->weight.to_vector(), D, Dh, keep), {kept * Dh, D});
    put(proj->bias, head_rows(proj->bias.to_vector(), 1, Dh, keep), {kept * Dh});
  }
  put(o.weight, head_cols(o.weight.to_vector(), D, H, Dh, keep, fold), {D, kept * Dh});
  for (const Tensor* talk : {talk_logits, talk_weights})
    if (talk) put(*talk, submatrix(talk->to_vector(), H, keep, keep), {kept, kept});
  if (cross_map)
    put(*cross_map, submatrix(cross_map->to_vector(), H, prev_keep, keep), {static_cast<int64_t>(prev_keep.size()), kept});
  return out;
}

}  // namespace hr
