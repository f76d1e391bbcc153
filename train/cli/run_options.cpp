#include "train/cli/command.h"

namespace hr {

void add_run_options(CLI::App* cmd, std::string& run_dir, std::string& which) {
  cmd->add_option("--run", run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--checkpoint", which, "best | last")->check(CLI::IsMember({"best", "last"}));
}

}  // namespace hr
