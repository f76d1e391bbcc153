// The layer registry: YAML `type:` -> factory. A factory reads its own YAML block (a layer group from model.layers)
// and builds one layer. Adding a layer type is one new file with its class and factory, plus one line in
// the built-in table `layers()` (or a register_layer call from your own code). See docs/extending.md, "Adding a layer
// type".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "models/layer.h"

namespace hr {

// Model-wide settings a factory may use as defaults for its own block.
struct LayerDefaults {
  int64_t d_model = 256, ffn_dim = 1024;
  float dropout = 0.1f, attention_dropout = 0.1f, activation_dropout = 0.1f, layer_norm_eps = 1e-5f;
  bool pre_norm = true;
  int64_t layer_index = 0;   // position of the layer being built
  int64_t prev_heads = 0;    // heads of the logits the previous attention layer passes on (cross_layer), 0 for none
};

using LayerFactory = std::function<std::unique_ptr<Layer>(const Config& block, const LayerDefaults& defaults)>;

void register_layer(const std::string& type, LayerFactory factory);
bool layer_registered(const std::string& type);
// Builds a layer of `type` from its block; an unknown type is a ConfigError naming the block and the known types.
std::unique_ptr<Layer> build_layer(const std::string& type, const Config& block, const LayerDefaults& defaults);

}  // namespace hr
