// headroom train CONFIG | --resume RUN
#include <iostream>
#include <memory>

#include "train/cli/command.h"
#include "train/run/trainer.h"

namespace hr {

Command add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "train a model from a YAML config (the run directory keeps everything)");
  cmd->add_option("config", a->config_path, "model/training config (YAML)")->check(CLI::ExistingFile);
  cmd->add_option("--set", a->overrides, "override a config key: --set train.lr=3e-4 (repeatable)");
  cmd->add_option("--out", a->out_dir, "run directory (default runs/<config>-<date-time>)");
  cmd->add_option("--resume", a->resume_dir, "continue the run in this directory")->check(CLI::ExistingDirectory);
  cmd->add_flag("--quiet", a->quiet, "no progress output");
  return {cmd, [a] {
            if (a->config_path.empty() == a->resume_dir.empty()) {
              std::cerr << "train: give a CONFIG or --resume RUN_DIR (not both)\n";
              return 2;
            }
            return train_command(*a);
          }};
}

}  // namespace hr
