#include "train/data/label_set.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "framework/atomic_file.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "train/data/classification_data.h"

namespace hr {

LabelSet::LabelSet(std::vector<std::string> labels) : labels_(std::move(labels)) {
  std::sort(labels_.begin(), labels_.end());
  labels_.erase(std::unique(labels_.begin(), labels_.end()), labels_.end());
  for (size_t i = 0; i < labels_.size(); ++i) ids_.emplace(labels_[i], static_cast<int32_t>(i));
}

LabelSet LabelSet::in_order(std::vector<std::string> labels, const std::string& origin) {
  LabelSet s;
  s.labels_ = std::move(labels);
  for (size_t i = 0; i < s.labels_.size(); ++i) {
    HR_CHECK(!s.labels_[i].empty(), origin + ": line " + std::to_string(i + 1) + " is an empty label");
    HR_CHECK(s.ids_.emplace(s.labels_[i], static_cast<int32_t>(i)).second,
             origin + ": label '" + s.labels_[i] + "' appears twice");
  }
  return s;
}

LabelSet LabelSet::from_examples(const std::vector<TextExample>& examples) {
  std::vector<std::string> labels;
  labels.reserve(examples.size());
  for (const TextExample& example : examples) labels.push_back(example.label);
  return LabelSet(std::move(labels));
}

std::optional<int32_t> LabelSet::find(const std::string& label) const {
  const auto it = ids_.find(label);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

int32_t LabelSet::id(const std::string& label) const {
  const std::optional<int32_t> found = find(label);
  HR_CHECK(found, "unknown label '" + label + "' (the label set has " + std::to_string(labels_.size()) + " labels)");
  return *found;
}

const std::string& LabelSet::name(int32_t id) const {
  HR_CHECK(id >= 0 && id < size(),
           "label id " + std::to_string(id) + " out of range [0, " + std::to_string(size()) + ")");
  return labels_[id];
}

void write_label_file(const LabelSet& labels, const std::string& path) {
  std::string text;
  for (const std::string& l : labels.labels()) text += l + "\n";
  write_text_atomically(path, text);
}

std::optional<LabelSet> read_label_file(const std::string& path) {
  if (!regular_file_or_absent(path)) return std::nullopt;
  const std::string name = std::filesystem::path(path).filename().string();
  std::istringstream f(read_regular_file(path, 64 << 20, name));
  std::vector<std::string> names;
  for (std::string line; std::getline(f, line);) names.push_back(line);
  return LabelSet::in_order(std::move(names), path);
}

}  // namespace hr
