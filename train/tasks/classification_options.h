// The classification task's own data: keys (train/tasks/task_options.h): the format, its files or CLINC150 splits,
// the text and label fields.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/tasks/task_options.h"

namespace hr {

// The classification task's data: keys.
class ClassificationOptions : public TaskOptions {
 public:
  static std::shared_ptr<const TaskOptions> read(const Config& data, bool check_files);  // the registry's reader

  std::string format = "clinc150";  // clinc150 | csv | tsv | jsonl
  // clinc150: one file holding the splits, by name
  std::string path;
  std::string train_split = "train", eval_split = "val", test_split = "test";
  bool include_oos = false;
  SplitFiles files;  // every other format: one file per split
  // `text_field: name`, or `text_field: [first, second]` for sentence pairs (MNLI's premise and hypothesis: [CLS]
  // first [SEP] second [SEP], segments 0 and 1); pair_field is then the second, else empty
  std::string text_field = "text", pair_field, label_field = "label";

  bool has_split(const std::string& split) const { return format == "clinc150" || !files.path(split).empty(); }
  void require_train_data(const Config& data) const override;
  std::string row_length_problem(int64_t row_len) const override;
  std::vector<std::string> data_overrides(const std::string& split, const std::string& file) const override;
};

}  // namespace hr
