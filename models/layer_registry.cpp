#include "models/layer_registry.h"

#include <map>
#include <mutex>

#include "models/encoder_layer.h"

namespace hr {

namespace {

std::map<std::string, LayerFactory>& table() {
  static std::map<std::string, LayerFactory> t;
  return t;
}

// The built-in layer types: one line each.
void register_builtin_layers() {
  static std::once_flag once;
  std::call_once(once, [] {
    table().emplace("encoder", make_encoder_layer);
  });
}

}  // namespace

void register_layer(const std::string& type, LayerFactory factory) {
  register_builtin_layers();
  table()[type] = std::move(factory);
}

bool layer_registered(const std::string& type) {
  register_builtin_layers();
  return table().count(type) > 0;
}

std::vector<std::string> registered_layers() {
  register_builtin_layers();
  std::vector<std::string> out;
  for (const auto& [name, f] : table()) out.push_back(name);
  return out;
}

std::unique_ptr<Layer> build_layer(const std::string& type, const Config& block, const LayerDefaults& defaults) {
  register_builtin_layers();
  auto it = table().find(type);
  if (it == table().end()) {
    std::string known;
    for (const auto& [name, f] : table()) known += (known.empty() ? "" : ", ") + name;
    block.fail("type", "unknown layer type '" + type + "' (registered: " + known + ")");
  }
  return it->second(block, defaults);
}

}  // namespace hr
