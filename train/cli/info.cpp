// headroom info CONFIG: per-layer heads, parameters and FLOPs.
#include <filesystem>
#include <iostream>
#include <memory>

#include "train/cli/command.h"
#include "train/run/run_config.h"
#include "train/tasks/task_registry.h"
#include "train/tokenizer/vocab.h"
#include "train/tools/info.h"

namespace hr {

namespace {

int info_command(const std::string& config, const std::vector<std::string>& overrides, int64_t seq_len) {
  RunConfig rc = load_run_config(config, overrides);
  ModelDims dims{0, 1, 0};  // without data: one label
  // a run's config.yaml has the task's files (labels.txt) beside it; an imported run has no data files
  const std::string dir = std::filesystem::path(config).parent_path().string();
  if (rc.data.present) dims = make_task(rc.root, TaskContext{rc.data, dir, true, ""})->dims();
  if (!rc.tokenizer.vocab.empty()) dims.vocab_size = Vocab::load(rc.tokenizer.vocab).size();
  else if (const int64_t v = run_vocab_size(config); v > 0) dims.vocab_size = v;  // a run's config names none
  else dims.vocab_size = rc.tokenizer.vocab_size;
  auto model = build_model_shapes(rc.root.child("model"), dims);  // a model of any size, described, not allocated
  rc.root.check_all_read();  // the keys train would refuse (train.lerning_rate), refused here too
  std::cout << config << ": vocabulary " << dims.vocab_size << ", " << dims.num_labels << " labels\n";
  print_model_info(std::cout, *model, seq_len > 0 ? seq_len : model->max_len());
  return 0;
}

struct InfoArgs {
  std::string config;
  std::vector<std::string> overrides;
  int64_t seq_len = 0;
};

}  // namespace

Command add_info_command(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  auto* cmd = app.add_subcommand("info", "per-layer heads, parameters and FLOPs of a config");
  cmd->add_option("config", a->config, "config (YAML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set", a->overrides, "override a config key (repeatable)");
  cmd->add_option("--seq-len", a->seq_len, "sequence length for the FLOP counts (default model.max_len)")
      ->check(positive_number());
  return {cmd, [a] { return info_command(a->config, a->overrides, a->seq_len); }};
}

}  // namespace hr
