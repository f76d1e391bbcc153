#include "train/tasks/task_registry.h"

#include "framework/registry.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/qa_task.h"

namespace hr {

namespace {

// The built-in tasks: one line each.
Registry<TaskType>& tasks() {
  static Registry<TaskType> r([](Registry<TaskType>& r) {
    r.add("classification", TaskType{"encoder_classifier", make_classification_task, nullptr});
    r.add("squad", TaskType{"encoder_span_qa", make_qa_task, nullptr});
  });
  return r;
}

}  // namespace

void register_task(const std::string& name, TaskType type) {
  if (type.head) register_head(type.model_type, type.head);
  tasks().add(name, std::move(type));
}

std::vector<std::string> registered_tasks() { return tasks().names(); }

std::unique_ptr<Task> make_task(const TaskContext& ctx) {
  const RunConfig& rc = ctx.config;
  if (!rc.data.present) throw ConfigError(rc.root.file() + ": the config has no data: block");
  const Config data = rc.root.child("data"), model = rc.root.child("model");
  const TaskType* type = tasks().find(rc.data.task);
  if (!type) data.fail("task", "unknown task '" + rc.data.task + "' (known: " + tasks().known() + ")");
  const std::string model_type = model.get<std::string>("type");
  if (model_type != type->model_type)
    model.fail("type", "'" + model_type + "' does not fit data.task '" + rc.data.task + "', which trains model.type '" +
                           type->model_type + "'");
  return type->make(ctx);
}

}  // namespace hr
