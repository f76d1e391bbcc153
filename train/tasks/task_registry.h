// The task registry: `data.task` -> how to build the task, and the model.type (task head) it trains. Adding a task is
// one file with its Task class, factory (and head, when it needs a new one) plus one register_task line in
// the built-in table `tasks()` (train/tasks/task_registry.cpp), or a register_task call from your own program. See
// README "Adding a task".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "models/task_head.h"
#include "train/tasks/task.h"
#include "train/tasks/task_options.h"

namespace hr {

struct TaskContext {
  const DataOptions& data;  // the data: block, the task's own keys read by its read_options
  std::string run_dir;      // files the task saved there (labels.txt) are read back; empty for a config alone
  bool load_data = true;    // false: only what prediction needs (predict, attention maps), no dataset read
  std::string output_dir;   // where evaluation may write its outputs (the training run's directory), or empty
};

// Reads and validates the task's own keys of the data: block when the config is loaded; `check_files` false skips
// checking that the files it names exist (a run directory served by predict needs none).
using TaskOptionsReader = std::function<std::shared_ptr<const TaskOptions>(const Config& data, bool check_files)>;

struct TaskType {
  std::string model_type;  // the model.type it trains: the registered head its model must have
  std::function<std::unique_ptr<Task>(const TaskContext&)> make;
  HeadFactory head;                // registered under model_type when set (a task that brings its own head)
  TaskOptionsReader read_options;  // unset: the task reads its split files (SplitFileOptions) and nothing else
};

void register_task(const std::string& name, TaskType type);
std::vector<std::string> registered_tasks();

// The config's task. A config error (naming file, line and key) when model.type is not the head the task trains.
// `root` is the whole config (its model: block names the head).
std::unique_ptr<Task> make_task(const Config& root, const TaskContext& ctx);

}  // namespace hr
