#include "train/data/label_set.h"

#include <algorithm>

#include "kernels/base/error.h"
#include "train/data/classification_data.h"

namespace hr {

LabelSet::LabelSet(std::vector<std::string> labels) : labels_(std::move(labels)) {
  std::sort(labels_.begin(), labels_.end());
  labels_.erase(std::unique(labels_.begin(), labels_.end()), labels_.end());
}

LabelSet LabelSet::from_examples(const std::vector<TextExample>& examples) {
  std::vector<std::string> labels;
  labels.reserve(examples.size());
  for (const TextExample& example : examples) labels.push_back(example.label);
  return LabelSet(std::move(labels));
}

std::optional<int32_t> LabelSet::find(const std::string& label) const {
  const auto it = std::lower_bound(labels_.begin(), labels_.end(), label);
  if (it == labels_.end() || *it != label) return std::nullopt;
  return static_cast<int32_t>(it - labels_.begin());
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

}  // namespace hr
