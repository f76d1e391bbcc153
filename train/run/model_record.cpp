#include "train/run/model_record.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "framework/regular_file.h"

namespace hr {

namespace {

// Keys that change training, not what the trained weights compute.
bool functional(const std::string& key, const std::string& parent) {
  if (key == "dropout" || key == "attention_dropout" || key == "activation_dropout") return false;
  return !(parent == "gates" && (key == "lambda" || key == "init_open"));
}

YAML::Node without_training_keys(const YAML::Node& n, const std::string& parent = "") {
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const YAML::Node& item : n) out.push_back(without_training_keys(item));
    return out;
  }
  if (!n.IsMap()) return n;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (functional(key, parent)) out[key] = without_training_keys(kv.second, key);
  }
  return out;
}

std::string flow(const YAML::Node& n) {
  if (!n.IsDefined()) return "absent";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

void differences(const YAML::Node& was, const YAML::Node& now, const std::string& path,
                 std::vector<std::string>& out) {
  // (a missing key is an invalid node, whose type cannot be asked)
  const bool both = was.IsDefined() && now.IsDefined();
  if (both && was.IsMap() && now.IsMap()) {
    for (const auto& kv : was) {
      const std::string key = kv.first.Scalar();
      differences(kv.second, now[key], path + "." + key, out);
    }
    for (const auto& kv : now)
      if (!was[kv.first.Scalar()]) out.push_back(path + "." + kv.first.Scalar() + ": absent in the checkpoint, " +
                                                 flow(kv.second) + " now");
    return;
  }
  if (both && was.IsSequence() && now.IsSequence() && was.size() == now.size()) {
    for (size_t i = 0; i < was.size(); ++i) differences(was[i], now[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (flow(was) != flow(now)) out.push_back(path + ": " + flow(was) + " in the checkpoint, " + flow(now) + " now");
}

std::string fnv1a(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

ModelRecord model_record(const Config& model, const std::string& run_dir) {
  ModelRecord r;
  YAML::Emitter e;
  e << without_training_keys(YAML::Load(model.dump()));
  r.model = e.c_str();
  const std::string labels = run_dir + "/labels.txt";
  if (regular_file_or_absent(labels)) r.labels = fnv1a(read_regular_file(labels, 64 << 20, "labels.txt"));
  return r;
}

void add_model_record(std::map<std::string, std::string>& metadata, const ModelRecord& record) {
  metadata["model"] = record.model;
  metadata["labels_fnv1a"] = record.labels;
}

void check_model_record(const std::map<std::string, std::string>& metadata, const std::string& checkpoint,
                        const ModelRecord& now) {
  const auto model = metadata.find("model");
  if (model == metadata.end()) return;
  std::vector<std::string> diff;
  differences(YAML::Load(model->second), YAML::Load(now.model), "model", diff);
  const auto labels = metadata.find("labels_fnv1a");
  if (labels != metadata.end() && labels->second != now.labels)
    diff.push_back(now.labels.empty() ? "labels.txt: gone" : "labels.txt: other labels or another order");
  if (diff.empty()) return;
  std::string list;
  for (const std::string& d : diff) list += "\n  " + d;
  throw ConfigError(checkpoint + " was trained as another model than the run's config.yaml and labels.txt describe "
                    "(the checkpoint's metadata 'model' holds its model: block):" + list +
                    "\nrestore them, or start a new run from it with train.init_from");
}

}  // namespace hr
