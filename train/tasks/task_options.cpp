#include "train/tasks/task_options.h"

namespace hr {

SplitFiles SplitFiles::read(const Config& data, bool check_files) {
  SplitFiles f;
  f.train_path = data.get<std::string>("train_path", "");  // a run served without training (import-hf) has none
  f.eval_path = data.get<std::string>("eval_path", "");
  f.test_path = data.get<std::string>("test_path", "");
  for (const auto& [key, p] : {std::pair{"train_path", f.train_path}, {"eval_path", f.eval_path},
                               {"test_path", f.test_path}})
    if (check_files && !p.empty()) require_file(data, key, p);
  return f;
}

const std::string& SplitFiles::path(const std::string& split) const {
  if (split == "train") return train_path;
  if (split == "eval") return eval_path;
  HR_CHECK(split == "test", "unknown split '" + split + "' (train, eval or test)");
  return test_path;
}

void SplitFiles::require_train(const Config& data) const {
  if (!train_path.empty()) return;
  data.get<std::string>("train_path");  // missing: the required-key error, with the key that may be meant for it
  data.fail("train_path", "must name the training data file");
}

}  // namespace hr
