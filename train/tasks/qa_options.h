// The QA task's own data: keys (train/tasks/task_options.h): SQuAD files or the recall generator, and windowing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/data/recall_data.h"
#include "train/tasks/task_options.h"

namespace hr {

// The QA task's data: keys.
class QaOptions : public TaskOptions {
 public:
  static std::shared_ptr<const TaskOptions> read(const Config& data, bool check_files);  // the registry's reader

  std::string format = "squad";  // squad: one file per split | recall: generated in memory from `recall`
  SplitFiles files;
  int64_t doc_stride = 128, max_query_len = 64, max_answer_len = 30;  // windowing
  std::string metric = "auto";  // auto | squad | cmrc (parse_qa_metric, squad_metric.h)
  RecallOptions recall;         // format recall: the generator's knobs (recall_data.h)

  void require_train_data(const Config& data) const override;
  std::string row_length_problem(int64_t row_len) const override;
  std::vector<std::string> data_overrides(const std::string& split, const std::string& file) const override;
};

}  // namespace hr
