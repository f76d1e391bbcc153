// read_task_options for the fuzz build, whose parser library has no models, tasks, optimizers or kernels: the built-in
// tasks' option readers by name, as the registry (train/tasks/task_registry.cpp) holds them, so fuzz_config validates
// every task's data: keys with the code the binary runs; and the registered optimizers' names.
#include "framework/optimizer_registry.h"
#include "train/tasks/classification_options.h"
#include "train/tasks/mlm_options.h"
#include "train/tasks/qa_options.h"

namespace hr {

std::shared_ptr<const TaskOptions> read_task_options(const std::string& task, const Config& data, bool check_files) {
  if (task == "classification") return ClassificationOptions::read(data, check_files);
  if (task == "squad") return QaOptions::read(data, check_files);
  if (task == "mlm") return MlmOptions::read(data, check_files);
  if (task == "tagging") return std::make_shared<SplitFileOptions>(SplitFiles::read(data, check_files));
  data.fail("task", "unknown task '" + task + "' (known: classification, mlm, squad, tagging)");
}

// The built-in optimizers' names, as framework/optimizer_registry.cpp registers them (train.optimizer).
std::vector<std::string> registered_optimizers() { return {"adamw", "lamb", "sgd"}; }

}  // namespace hr
