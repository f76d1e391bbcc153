// headroom eval --run RUN [--split eval|test] [--data FILE] [--json]
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "train/cli/command.h"
#include "train/run/trainer.h"

namespace hr {

namespace {

struct EvalArgs {
  std::string run_dir, which = "best", split = "test", data;
  std::vector<std::string> overrides;  // --precision
  bool json = false;
};

// --data FILE: evaluate on FILE (in the run's data format) as the test split.
int eval_command(const EvalArgs& a) {
  std::vector<std::string> overrides = a.overrides;
  const std::string& split = a.split;
  if (!a.data.empty()) {  // FILE replaces the file the split comes from; the split stays the one asked for
    const RunConfig rc = load_run_config(a.run_dir + "/config.yaml", {}, /*check_files=*/false);
    HR_CHECK(rc.data.present, a.run_dir + "/config.yaml has no data: block");
    for (std::string& o : rc.data.options->data_overrides(split, a.data)) overrides.push_back(std::move(o));
  }
  LoadedRun run = load_run(a.run_dir, a.which, true, overrides);
  HR_CHECK(run.task->has_split(split), "the run's data has no '" + split + "' split");
  EvalResult r = run.task->evaluate(*run.model, split, run.config.train.device, run.config.train.batch_size * 2);
  if (a.json) {
    nlohmann::json j = {{"run", a.run_dir}, {"checkpoint", a.which}, {"split", split}, {split, r.metrics}};
    if (!r.scorer.empty()) j["metric"] = r.scorer;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << a.run_dir << " (" << a.which << " checkpoint), " << split
              << (r.scorer.empty() ? "" : " (" + r.scorer + " metric)") << ":";
    for (const auto& [k, v] : r.metrics) std::cout << " " << k << " " << v;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "evaluate a run's checkpoint on a split");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--split", a->split, "eval | test")->check(CLI::IsMember({"eval", "test"}));
  cmd->add_option("--data", a->data, "take the split from this file (in the run's data format) instead")
      ->check(CLI::ExistingFile);
  add_precision_option(cmd, a->overrides);
  cmd->add_flag("--json", a->json, "one JSON object on stdout (metrics under the split's name, as metrics.jsonl)");
  return {cmd, [a] { return eval_command(*a); }};
}

}  // namespace hr
