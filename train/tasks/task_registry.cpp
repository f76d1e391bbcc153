#include "train/tasks/task_registry.h"

#include "framework/registry.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/mlm_task.h"
#include "train/tasks/qa_task.h"
#include "train/tasks/tagging_task.h"

namespace hr {

namespace {

// A task and, when it brings one, its head.
void add(Registry<TaskType>& r, const std::string& name, TaskType type) {
  if (type.head) register_head(type.model_type, type.head);
  r.add(name, std::move(type));
}

// The built-in tasks: one line each.
Registry<TaskType>& tasks() {
  static Registry<TaskType> r([](Registry<TaskType>& r) {
    add(r, "classification", {"encoder_classifier", make_classification_task, nullptr, ClassificationOptions::read});
    add(r, "squad", {"encoder_span_qa", make_qa_task, nullptr, QaOptions::read});
    add(r, "mlm", {"encoder_mlm", make_mlm_task, nullptr, MlmOptions::read});
    add(r, "tagging", {"encoder_tagger", make_tagging_task, make_tagging_head, nullptr});
  });
  return r;
}

}  // namespace

void register_task(const std::string& name, TaskType type) { add(tasks(), name, std::move(type)); }

std::vector<std::string> registered_tasks() { return tasks().names(); }

std::shared_ptr<const TaskOptions> read_task_options(const std::string& task, const Config& data, bool check_files) {
  const TaskType* type = tasks().find(task);
  if (!type) data.fail("task", "unknown task '" + task + "' (known: " + tasks().known() + ")");
  if (type->read_options) return type->read_options(data, check_files);
  return std::make_shared<SplitFileOptions>(SplitFiles::read(data, check_files));
}

std::unique_ptr<Task> make_task(const Config& root, const TaskContext& ctx) {
  const DataOptions& d = ctx.data;
  if (!d.present) throw ConfigError(root.file() + ": the config has no data: block");
  const Config data = root.child("data"), model = root.child("model");
  const TaskType* type = tasks().find(d.task);
  if (!type) data.fail("task", "unknown task '" + d.task + "' (known: " + tasks().known() + ")");
  const std::string model_type = model.get<std::string>("type");
  if (model_type != type->model_type)
    model.fail("type", "'" + model_type + "' does not fit data.task '" + d.task + "', which trains model.type '" +
                           type->model_type + "'");
  return type->make(ctx);
}

}  // namespace hr
