// The mlm task's own data: keys (train/tasks/task_options.h): the corpora, the token cache's folder, masking.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/data/mlm_masking.h"
#include "train/tasks/task_options.h"

namespace hr {

// The mlm task's data: keys.
class MlmOptions : public TaskOptions {
 public:
  static std::shared_ptr<const TaskOptions> read(const Config& data, bool check_files);  // the registry's reader

  // each a file, a list of files or a glob (data.train_path, eval_path, test_path)
  std::vector<std::string> train_files, eval_files, test_files;
  std::string cache_dir;      // data.cache_dir: where token caches go; empty: beside the corpus (token_cache.h)
  MlmMaskOptions mask;        // data.mlm.probability, mask, random, whole_word
  int64_t max_eval_rows = 0;  // data.mlm.max_eval_rows: evaluate on the first N packed rows; 0: all

  const std::vector<std::string>& files(const std::string& split) const;
  void require_train_data(const Config& data) const override;
  std::string row_length_problem(int64_t row_len) const override;
  std::vector<std::string> data_overrides(const std::string& split, const std::string& file) const override;
};

}  // namespace hr
