// The interface of a layer in the encoder stack, and what the stack passes from layer to layer.
#pragma once

#include <string>
#include <vector>

#include "framework/module.h"
#include "models/attention_heads.h"

namespace hr {

// What a forward pass through the stack carries besides the hidden states.
struct LayerContext {
  Tensor key_mask;          // (B, T) additive: 0 for a token, -1e9 for padding
  int64_t layer_index = 0;  // position of the running layer in the stack
  // Cross-layer attention: the previous attention layer's pre-softmax logits (B, h_prev, T, T), or undefined.
  Tensor prev_logits;
  // When set, attention layers append their attention weights (B, h, T, T) here (attention maps): softmax rows, for
  // talking heads those of the mixed logits, before the weights are mixed.
  std::vector<Tensor>* attention_maps = nullptr;
};

// Per-layer figures for `headroom info`: FLOPs are forward multiply-adds x2 per token at sequence length T.
struct LayerStats {
  std::string type;
  int64_t heads = 0, head_dim = 0, ffn_dim = 0;
  int64_t parameters = 0;
  bool passes_logits = false;  // its pre-softmax logits go on to the next layer (cross_layer), as ctx.prev_logits
  double attention_flops = 0;  // projections + scores + weighted sum (+ head mixing)
  double ffn_flops = 0;
};

class Layer : public Module {
 public:
  virtual Tensor forward(const Tensor& x, LayerContext& ctx) = 0;  // (B, T, D) -> (B, T, D)
  virtual LayerStats stats(int64_t seq_len) const = 0;
  // A term added to the training loss (the L0 gate penalty), or undefined.
  virtual Tensor penalty() const { return Tensor(); }
  // The layer's attention heads (gates, importance, pruning, attention maps), or null for a layer without heads.
  virtual AttentionHeads* heads() { return nullptr; }
  const AttentionHeads* heads() const { return const_cast<Layer*>(this)->heads(); }
};

}  // namespace hr
