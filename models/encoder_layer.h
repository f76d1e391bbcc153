// The transformer encoder layer (registry type `encoder`): self-attention and feed-forward blocks with residuals,
// pre-LN (x + f(LN(x))) or post-LN (LN(x + f(x))).
#pragma once

#include "framework/config.h"
#include "models/attention.h"
#include "models/layer_registry.h"

namespace hr {

class EncoderLayer : public Layer {
 public:
  // dropout: on each block's output before its residual; activation_dropout: on the feed-forward's hidden layer
  EncoderLayer(int64_t d_model, int64_t ffn_dim, const AttentionOptions& attn, float dropout, float activation_dropout,
               bool pre_norm, float ln_eps);
  Tensor forward(const Tensor& x, LayerContext& ctx) override;
  LayerStats stats(int64_t seq_len) const override;
  Tensor penalty() const override;
  AttentionHeads* heads() override { return &attn; }

  LayerNorm& ln1;
  MultiHeadAttention& attn;
  LayerNorm& ln2;
  FeedForward& ffn;

 private:
  float dropout_;
  bool pre_norm_;
};

// Reads `attention: {heads, head_dim, talking_heads, gates: {type: l0, ...}, cross_layer, permute}` and `ffn_dim`.
AttentionOptions read_attention_options(const Config& block, const LayerDefaults& defaults);
std::unique_ptr<Layer> make_encoder_layer(const Config& block, const LayerDefaults& defaults);

}  // namespace hr
