#include "train/tasks/task_registry.h"

#include <map>
#include <mutex>

#include "train/tasks/classification_task.h"
#include "train/tasks/qa_task.h"

namespace hr {

namespace {

std::map<std::string, TaskType>& table() {
  static std::map<std::string, TaskType> t;
  return t;
}

// The built-in tasks: one line each.
void register_builtin_tasks() {
  static std::once_flag once;
  std::call_once(once, [] {
    table().emplace("classification", TaskType{"encoder_classifier", make_classification_task, nullptr});
    table().emplace("squad", TaskType{"encoder_span_qa", make_qa_task, nullptr});
  });
}

std::string known_tasks() {
  std::string known;
  for (const auto& [name, t] : table()) known += (known.empty() ? "" : ", ") + name;
  return known;
}

}  // namespace

void register_task(const std::string& name, TaskType type) {
  register_builtin_tasks();
  if (type.head) register_head(type.model_type, type.head);
  table()[name] = std::move(type);
}

std::vector<std::string> registered_tasks() {
  register_builtin_tasks();
  std::vector<std::string> out;
  for (const auto& [name, t] : table()) out.push_back(name);
  return out;
}

std::unique_ptr<Task> make_task(const TaskContext& ctx) {
  register_builtin_tasks();
  const RunConfig& rc = ctx.config;
  if (!rc.data.present) throw ConfigError(rc.root.file() + ": the config has no data: block");
  const Config data = rc.root.child("data"), model = rc.root.child("model");
  auto it = table().find(rc.data.task);
  if (it == table().end()) data.fail("task", "unknown task '" + rc.data.task + "' (known: " + known_tasks() + ")");
  const std::string model_type = model.get<std::string>("type");
  if (model_type != it->second.model_type)
    model.fail("type", "'" + model_type + "' does not fit data.task '" + rc.data.task + "', which trains model.type '" +
                           it->second.model_type + "'");
  return it->second.make(ctx);
}

}  // namespace hr
