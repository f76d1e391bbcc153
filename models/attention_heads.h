// What a layer with attention heads exposes, so that L0 gates, head importance, pruning and attention maps work on any
// layer type that implements it: by this interface, never by parameter names or concrete classes.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "framework/module.h"

namespace hr {

class AttentionHeads {
 public:
  virtual ~AttentionHeads() = default;
  virtual int64_t num_heads() const = 0;
  virtual int64_t head_dim() const = 0;

  // L0 gates, per head: P(z > 0) and the deterministic (evaluation) z; empty when the heads have no gates.
  virtual std::vector<float> gate_open_probability() const = 0;
  virtual std::vector<float> gate_values() const = 0;
  // The gates' trainable parameters (train.gate_lr gives them their own learning rate); empty without gates.
  virtual std::vector<Tensor> gate_parameters() const = 0;

  // Multipliers of the heads' outputs, (H) or (B, H), where gates act (head importance); undefined removes them.
  virtual void set_head_mask(const Tensor& mask) = 0;

  // Why the heads' attention takes the unfused path (the (B, H, T, T) weights as tensors) on device d, with or
  // without attention maps asked for, or null when the fused kernel (fused_attention) serves them (docs/DESIGN.md).
  virtual const char* unfused_reason(bool attention_maps, Device d) const = 0;

  // ---- pruning to a subset of heads
  // The heads add the previous heads layer's pre-softmax logits and pass theirs on (residual logits): removing a
  // head of either layer would change the other's logits.
  virtual bool cross_layer() const = 0;
  // The smallest superset of `keep` (ascending) whose removal leaves the kept heads' outputs unchanged once the
  // removed heads are closed (talking heads mix heads into each other).
  virtual std::vector<int64_t> exact_closure(std::vector<int64_t> keep) const = 0;
  // Edits the layer's YAML block (one layer group without `repeat`) to describe the layer with the heads `keep`
  // (ascending) only, no gates.
  virtual void write_pruned_block(YAML::Node& layer_block, const std::vector<int64_t>& keep) const = 0;
  // The module holding the heads' parameters, and those parameters for the kept heads (names as in that module's
  // named_parameters()), each gate folded into its head's output columns. `prev_keep`: the kept heads of the previous
  // heads layer (for maps of its logits).
  virtual const Module& heads_module() const = 0;
  virtual std::vector<std::pair<std::string, Tensor>> pruned_parameters(const std::vector<int64_t>& keep,
                                                                        const std::vector<int64_t>& prev_keep) const = 0;
};

}  // namespace hr
