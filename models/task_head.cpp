#include "models/task_head.h"

#include <map>
#include <mutex>

#include "models/task_heads.h"

namespace hr {

namespace {

std::map<std::string, HeadFactory>& table() {
  static std::map<std::string, HeadFactory> t;
  return t;
}

// The built-in heads: one line each.
void register_builtin_heads() {
  static std::once_flag once;
  std::call_once(once, [] {
    table().emplace("encoder_classifier", make_sequence_classifier_head);
    table().emplace("encoder_span_qa", make_span_head);
  });
}

}  // namespace

void register_head(const std::string& model_type, HeadFactory factory) {
  register_builtin_heads();
  table()[model_type] = std::move(factory);
}

bool head_registered(const std::string& model_type) {
  register_builtin_heads();
  return table().count(model_type) > 0;
}

std::vector<std::string> registered_heads() {
  register_builtin_heads();
  std::vector<std::string> out;
  for (const auto& [name, f] : table()) out.push_back(name);
  return out;
}

std::unique_ptr<TaskHead> build_head(const Config& m, const std::string& model_type, const HeadSettings& s) {
  register_builtin_heads();
  auto it = table().find(model_type);
  if (it == table().end()) {
    std::string known;
    for (const auto& [name, f] : table()) known += (known.empty() ? "" : ", ") + name;
    m.fail("type", "unknown model type '" + model_type + "' (known: " + known + ")");
  }
  return it->second(m, s);
}

}  // namespace hr
