// The label vocabulary of a classification task: the distinct training labels, sorted by byte order so that ids do
// not depend on the order of the file; or a run's labels.txt, whose line number is the id (an imported checkpoint
// keeps its own label order).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hr {

struct TextExample;

class LabelSet {
 public:
  LabelSet() = default;
  explicit LabelSet(std::vector<std::string> labels);  // sorted and de-duplicated here
  static LabelSet from_examples(const std::vector<TextExample>& examples);
  // The labels in this order (ids 0, 1, ...); hr::Error naming `origin` on an empty or repeated label.
  static LabelSet in_order(std::vector<std::string> labels, const std::string& origin);

  int32_t id(const std::string& label) const;  // hr::Error for a label not in the set
  std::optional<int32_t> find(const std::string& label) const;
  const std::string& name(int32_t id) const;
  int32_t size() const { return static_cast<int32_t>(labels_.size()); }
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  std::vector<std::string> labels_;  // the id of a label is its index
  std::map<std::string, int32_t, std::less<>> ids_;
};

// A run's label file (labels.txt, tags.txt): one label a line, the line number its id. Written atomically; read only
// when it is a regular file of bounded size (hr::Error naming it otherwise), nullopt when there is none.
void write_label_file(const LabelSet& labels, const std::string& path);
std::optional<LabelSet> read_label_file(const std::string& path);

}  // namespace hr
