#include "models/encoder_layer.h"

namespace hr {

EncoderLayer::EncoderLayer(int64_t d_model, int64_t ffn_dim, const AttentionOptions& attn_opt, float dropout,
                           float activation_dropout, bool pre_norm, float ln_eps)
    : ln1(register_module("ln1", std::make_unique<LayerNorm>(d_model, ln_eps))),
      attn(register_module("attn", std::make_unique<MultiHeadAttention>(d_model, attn_opt))),
      ln2(register_module("ln2", std::make_unique<LayerNorm>(d_model, ln_eps))),
      ffn(register_module("ffn", std::make_unique<FeedForward>(d_model, ffn_dim, activation_dropout))),
      dropout_(dropout),
      pre_norm_(pre_norm) {}

Tensor EncoderLayer::forward(const Tensor& x, LayerContext& ctx) {
  if (pre_norm_) {
    Tensor h = add(x, dropout(attn.forward(ln1.forward(x), ctx), dropout_, training()));
    return add(h, dropout(ffn.forward(ln2.forward(h)), dropout_, training()));
  }
  Tensor h = ln1.forward(add(x, dropout(attn.forward(x, ctx), dropout_, training())));
  return ln2.forward(add(h, dropout(ffn.forward(h), dropout_, training())));
}

LayerStats EncoderLayer::stats(int64_t seq_len) const {
  LayerStats st = attn.stats(seq_len);
  st.type = "encoder";
  st.ffn_dim = ffn.in.weight.dim(0);
  st.parameters = num_parameters();
  st.ffn_flops = 2.0 * 2.0 * static_cast<double>(ffn.in.weight.dim(0)) * static_cast<double>(ffn.in.weight.dim(1));
  return st;
}

Tensor EncoderLayer::penalty() const { return attn.gates ? attn.gates->penalty() : Tensor(); }

AttentionOptions read_attention_options(const Config& block, const LayerDefaults& d) {
  AttentionOptions a;
  if (!block.has("attention")) {  // the unknown-key check runs only after the build: point at a misspelt block here
    const std::string typo = did_you_mean("attention", block.keys());
    block.fail("missing required key 'attention'" + (typo.empty() ? "" : " (is '" + typo + "' a typo?)"));
  }
  const Config c = block.child("attention");
  // 0 heads only in a layer written by `headroom prune` (pruned: true): its attention keeps just the output bias
  const bool pruned = c.get<bool>("pruned", false);
  a.heads = pruned ? c.get<int64_t>("heads") : c.get_positive("heads");
  if (a.heads < 0) c.fail("heads", "expected a non-negative integer, got '" + std::to_string(a.heads) + "'");
  a.head_dim = c.get_positive("head_dim");
  a.original_heads = c.get<std::vector<int64_t>>("original_heads", {});
  if (!a.original_heads.empty()) {
    if (static_cast<int64_t>(a.original_heads.size()) != a.heads)
      c.fail("original_heads", "needs one index per head (" + std::to_string(a.heads) + "), got " +
                                   std::to_string(a.original_heads.size()));
    for (size_t i = 0; i < a.original_heads.size(); ++i)
      if (a.original_heads[i] < 0 || (i > 0 && a.original_heads[i] <= a.original_heads[i - 1]))
        c.fail("original_heads", "must be ascending non-negative head indices");
  }
  a.dropout = c.get_fraction("dropout", d.attention_dropout);
  a.talking_heads = c.get<bool>("talking_heads", false);
  if (auto g = c.optional_child("gates")) {
    g->get_choice("type", {"l0"});
    a.gates = true;
    a.gate.lambda = g->get<float>("lambda", a.gate.lambda);
    a.gate.init_open = g->get<float>("init_open", a.gate.init_open);
    a.gate.beta = g->get<float>("beta", a.gate.beta);
    a.gate.gamma = g->get<float>("gamma", a.gate.gamma);
    a.gate.zeta = g->get<float>("zeta", a.gate.zeta);
    if (a.gate.lambda < 0.f) g->fail("lambda", "must be >= 0");
    if (!(a.gate.init_open > 0.f && a.gate.init_open < 1.f)) g->fail("init_open", "must be in (0, 1)");
    if (!(a.gate.beta > 0.f)) g->fail("beta", "must be > 0");
    if (!(a.gate.gamma < 0.f)) g->fail("gamma", "must be < 0");
    if (!(a.gate.zeta > 1.f)) g->fail("zeta", "must be > 1");
  }
  const std::string cross = c.get_choice("cross_layer", {"none", "residual_logits"}, "none");
  a.cross_layer = cross == "residual_logits";
  a.permute = c.get_choice("permute", {"none", "interleave"}, "none");
  a.prev_heads = d.prev_heads;
  a.layer_index = d.layer_index;
  return a;
}

std::unique_ptr<Layer> make_encoder_layer(const Config& block, const LayerDefaults& d) {
  const AttentionOptions a = read_attention_options(block, d);
  const int64_t ffn_dim = block.get_positive("ffn_dim", d.ffn_dim);
  return std::make_unique<EncoderLayer>(d.d_model, ffn_dim, a, d.dropout, d.activation_dropout, d.pre_norm,
                                        d.layer_norm_eps);
}

}  // namespace hr
