#include "train/cli/command.h"

namespace hr {

void add_run_options(CLI::App* cmd, std::string& run_dir, std::string& which) {
  cmd->add_option("--run", run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--checkpoint", which, "best | last")->check(CLI::IsMember({"best", "last"}));
}

void add_precision_option(CLI::App* cmd, std::vector<std::string>& overrides) {
  cmd->add_option_function<std::string>(
         "--precision", [&overrides](const std::string& p) { overrides.push_back("train.precision=" + p); },
         "f32 | bf16: the matmuls' precision (default: the run's train.precision)")
      ->check(CLI::IsMember({"f32", "bf16"}));
}

}  // namespace hr
