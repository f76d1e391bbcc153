// The data: block as tasks see it. run_config reads the keys every task shares (task, max_seq_len, on_error); the rest
// is the task's own: it reads and validates those keys itself (TaskType::read_options, task_registry.h) when the
// config is loaded, so a typo in any task's keys fails before work starts, and run_config knows no task by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "kernels/base/error.h"

namespace hr {

// A task's own data: keys.
class TaskOptions {
 public:
  virtual ~TaskOptions() = default;
  // Training reads data: a ConfigError naming the key when it is missing (an imported run that is only evaluated and
  // served has none).
  virtual void require_train_data(const Config& data) const = 0;
  // Why rows of `row_len` tokens cannot hold this task's inputs, or empty. Checked against model.max_len (or
  // data.max_seq_len) when the config is loaded.
  virtual std::string row_length_problem(int64_t row_len) const {
    (void)row_len;
    return "";
  }
  // The --set overrides that make `file` the data of `split` (`eval --data FILE`); UsageError when the task's data is
  // not read from a file.
  virtual std::vector<std::string> data_overrides(const std::string& split, const std::string& file) const = 0;
};

// One file per split: data.train_path, eval_path, test_path (train_path is required only to train).
struct SplitFiles {
  std::string train_path, eval_path, test_path;
  static SplitFiles read(const Config& data, bool check_files);
  const std::string& path(const std::string& split) const;  // "train" | "eval" | "test"
  void require_train(const Config& data) const;
};

// The options of a task that reads only its split files (the default of a task registered without read_options).
class SplitFileOptions : public TaskOptions {
 public:
  explicit SplitFileOptions(SplitFiles f) : files(std::move(f)) {}
  void require_train_data(const Config& data) const override { files.require_train(data); }
  std::vector<std::string> data_overrides(const std::string& split, const std::string& file) const override {
    return {"data." + split + "_path=" + file};
  }
  SplitFiles files;
};

// The task's own keys of the data: block (`data` is that block), read by the task registered as `task`
// (train/tasks/task_registry.cpp). A config error naming data.task when it is unknown.
std::shared_ptr<const TaskOptions> read_task_options(const std::string& task, const Config& data, bool check_files);

struct DataOptions {
  bool present = false;                 // the config has a data: block
  std::string task = "classification";  // a registered task (task_registry.h)
  // tokens of a row (squad: of a window), specials included; 0: model.max_len. Lets a pretrained model keep its 512
  // positions and still train on 128-token rows.
  int64_t max_seq_len = 0;
  std::string on_error = "skip";  // skip | fail: a malformed data row is reported and skipped, or stops the run
  std::shared_ptr<const TaskOptions> options;  // the task's own keys; null without a data: block

  // The task's options as its own type (a task reads only its own).
  template <class T>
  const T& as() const {
    const T* o = dynamic_cast<const T*>(options.get());
    HR_CHECK(o, "data: the options read are not those of the task asking for them (data.task " + task + ")");
    return *o;
  }
};

}  // namespace hr
