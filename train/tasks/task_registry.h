// The task registry: `data.task` -> how to build the task, and the model.type (task head) it trains. Adding a task is
// one file with its Task class, factory (and head, when it needs a new one) plus one register_task line in
// the built-in table `tasks()` (train/tasks/task_registry.cpp), or a register_task call from your own program. See
// README "Adding a task".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/task_head.h"
#include "train/run/run_config.h"
#include "train/tasks/task.h"

namespace hr {

struct TaskContext {
  const RunConfig& config;  // data: block read into config.data; a task may read more keys of config.root["data"]
  std::string run_dir;      // files the task saved there (labels.txt) are read back; empty for a config alone
  bool load_data = true;    // false: only what prediction needs (predict, attention maps), no dataset read
  std::string output_dir;   // where evaluation may write its outputs (the training run's directory), or empty
};

struct TaskType {
  std::string model_type;  // the model.type it trains: the registered head its model must have
  std::function<std::unique_ptr<Task>(const TaskContext&)> make;
  HeadFactory head;  // registered under model_type when set (a task that brings its own head)
};

void register_task(const std::string& name, TaskType type);
std::vector<std::string> registered_tasks();

// The config's task. A config error (naming file, line and key) when data.task is unknown or model.type is not the
// head the task trains.
std::unique_ptr<Task> make_task(const TaskContext& ctx);

}  // namespace hr
