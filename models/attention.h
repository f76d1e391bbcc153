// Multi-head self-attention with its own head count and head dimension (head_dim is not tied to d_model / heads):
// Q/K/V project d_model -> heads * head_dim, the output projects back. All heads of the layer run in one batched
// matmul. Options: talking heads (Shazeer et al. 2020), L0 head gates, cross-layer residual logits.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/basic_layers.h"
#include "models/head_gates.h"
#include "models/layer.h"

namespace hr {

struct AttentionOptions {
  int64_t heads = 8, head_dim = 64;
  float dropout = 0.1f;  // on the attention weights
  bool talking_heads = false;
  bool gates = false;
  GateOptions gate;
  // Cross-layer head mixing: add the previous layer's pre-softmax logits (residual attention) when that layer is a
  // cross-layer one too (any other attention layer breaks the chain), through a fixed head permutation (`interleave`,
  // on odd layers) when the head counts match, else through a learned (h_prev, h) map.
  bool cross_layer = false;
  std::string permute = "none";  // none | interleave
  int64_t prev_heads = 0;        // heads of the logits the previous layer passes on (0: none, it is no cross-layer one)
  int64_t layer_index = 0;
  // After pruning: each head's index in the unpruned layer (pruning composes it), so that an export to a format that
  // numbers heads by the original layer (Hugging Face's pruned_heads) can name the removed ones. Empty: 0..heads-1.
  std::vector<int64_t> original_heads;
};

class MultiHeadAttention : public Module, public AttentionHeads {
 public:
  MultiHeadAttention(int64_t d_model, const AttentionOptions& opt);
  // x (B, T, D) -> (B, T, D); reads/writes ctx.prev_logits for cross-layer mixing, appends to ctx.attention_maps.
  Tensor forward(const Tensor& x, LayerContext& ctx) const;
  const AttentionOptions& options() const { return opt_; }
  LayerStats stats(int64_t seq_len) const;  // attention fields only

  Linear* q = nullptr;  // (H*Dh, D); null when the layer has no head left
  Linear* k = nullptr;
  Linear* v = nullptr;
  Linear& o;            // (D, H*Dh)
  Tensor* talk_logits = nullptr;   // (H, H) [h_in, h_out], mixes the scaled logits before mask and softmax
  Tensor* talk_weights = nullptr;  // (H, H) [h_in, h_out], mixes the attention weights after softmax
  Tensor* cross_map = nullptr;     // (h_prev, H) learned map of the previous layer's logits
  HardConcreteGates* gates = nullptr;

  // ---- AttentionHeads
  int64_t num_heads() const override { return opt_.heads; }
  int64_t head_dim() const override { return opt_.head_dim; }
  std::vector<float> gate_open_probability() const override;
  std::vector<float> gate_values() const override;
  std::vector<Tensor> gate_parameters() const override { return gates ? gates->parameters() : std::vector<Tensor>{}; }
  void set_head_mask(const Tensor& mask) override { head_mask_ = mask; }
  // talking heads and cross-layer logits mix or pass on the weights or logits of all heads, attention maps read the
  // weights, and CUDA's kernel takes heads of up to kCudaFusedAttentionMaxHeadDim; gates and head masks scale each
  // head's output after the product, so the fused kernel serves them
  const char* unfused_reason(bool attention_maps, Device d) const override;
  bool cross_layer() const override { return opt_.cross_layer; }
  std::vector<int64_t> exact_closure(std::vector<int64_t> keep) const override;
  void write_pruned_block(YAML::Node& layer_block, const std::vector<int64_t>& keep) const override;
  const Module& heads_module() const override { return *this; }
  std::vector<std::pair<std::string, Tensor>> pruned_parameters(const std::vector<int64_t>& keep,
                                                                const std::vector<int64_t>& prev_keep) const override;

 private:
  Tensor unfused_heads(const Tensor& qx, const Tensor& kx, const Tensor& vx, LayerContext& ctx) const;

  AttentionOptions opt_;
  Tensor head_mask_;         // (H) or (B, H) multipliers of the heads' outputs (head importance); usually undefined
  Tensor head_permutation_;  // (H, H) fixed permutation matrix (cross-layer `interleave`), or undefined
};

// For its scope, layers that the fused kernel would serve take the unfused path instead (tests and benchmarks compare
// the two). Not thread-safe: open it where no other thread runs a model.
class UnfusedAttention {
 public:
  UnfusedAttention();
  ~UnfusedAttention();
  UnfusedAttention(const UnfusedAttention&) = delete;
  UnfusedAttention& operator=(const UnfusedAttention&) = delete;

 private:
  bool saved_;
};

// y[b, o] = sum_i x[b, i] * m[i, o] over heads: x (B, H_in, T, S), m (H_in, H_out) -> (B, H_out, T, S). In f32 under
// a bf16 autocast scope (talking heads' and cross-layer mixing of logits and weights).
Tensor mix_heads(const Tensor& x, const Tensor& m);

}  // namespace hr
