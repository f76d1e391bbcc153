#include "models/layer_registry.h"

#include "framework/registry.h"
#include "models/encoder_layer.h"

namespace hr {

namespace {

// The built-in layer types: one line each.
Registry<LayerFactory>& layers() {
  static Registry<LayerFactory> r([](Registry<LayerFactory>& r) { r.add("encoder", make_encoder_layer); });
  return r;
}

}  // namespace

void register_layer(const std::string& type, LayerFactory factory) { layers().add(type, std::move(factory)); }
bool layer_registered(const std::string& type) { return layers().find(type) != nullptr; }

std::unique_ptr<Layer> build_layer(const std::string& type, const Config& block, const LayerDefaults& defaults) {
  const LayerFactory* f = layers().find(type);
  if (!f) block.fail("type", "unknown layer type '" + type + "' (registered: " + layers().known() + ")");
  return (*f)(block, defaults);
}

}  // namespace hr
