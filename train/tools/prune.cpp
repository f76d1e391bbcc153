#include "train/tools/prune.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/atomic_file.h"
#include "train/run/checkpoint.h"
#include "train/run/new_out_dir.h"
#include "train/run/trainer.h"

namespace fs = std::filesystem;

namespace hr {

int prune_command(const PruneArgs& args) {
  const std::string out_dir = args.out_dir.empty() ? args.run_dir + "-pruned" : args.out_dir;
  require_new_or_empty_dir(out_dir);
  LoadedRun run = load_run(args.run_dir, args.which);
  HeadScores importance;
  if (args.options.by == "importance") {
    ImportanceOptions io = args.importance;
    io.device = run.config.train.device;
    io.batch_size = run.config.train.batch_size;
    importance = normalize_per_layer(head_importance(*run.model, *run.task, io));
  }
  const PrunePlan plan = plan_pruning(*run.model, args.options, importance.empty() ? nullptr : &importance);
  PrunedModel pruned = prune_model(*run.model, run.config.root.child("model"), plan);

  YAML::Node root = YAML::Load(run.config.root.dump());
  root["model"] = YAML::Load(pruned.model_yaml);
  YAML::Emitter emit;
  emit << root;
  fs::create_directories(out_dir);
  write_text_atomically(out_dir + "/config.yaml", std::string(emit.c_str()) + "\n");
  fs::copy_file(args.run_dir + "/vocab.txt", out_dir + "/vocab.txt", fs::copy_options::overwrite_existing);
  run.task->save(out_dir);  // the task's own files (labels.txt, a custom task's), not a list of names
  save_checkpoint(out_dir + "/checkpoint-best.safetensors", *pruned.model, nullptr, TrainState{});

  nlohmann::json layers = nlohmann::json::array();
  int64_t before = 0, after = 0;
  for (size_t i = 0; i < plan.keep.size(); ++i) {
    layers.push_back({{"heads_before", plan.heads[i]}, {"kept", plan.keep[i]}});
    before += plan.heads[i];
    after += static_cast<int64_t>(plan.keep[i].size());
  }
  nlohmann::json summary = {{"source", args.run_dir},
                            {"checkpoint", args.which},
                            {"by", args.options.by},
                            {"layers", layers},
                            {"heads_before", before},
                            {"heads_after", after},
                            {"parameters_before", run.model->num_parameters()},
                            {"parameters_after", pruned.model->num_parameters()},
                            {"exact", plan.exact},
                            {"notes", plan.notes}};
  if (args.options.keep >= 0) summary["keep"] = args.options.keep;
  else summary["threshold"] = args.options.threshold;
  write_text_atomically(out_dir + "/prune.json", summary.dump(2) + "\n");

  std::cout << "pruned " << args.run_dir << " (" << args.which << "): heads " << before << " -> " << after
            << ", parameters " << run.model->num_parameters() << " -> " << pruned.model->num_parameters() << "\n";
  for (size_t i = 0; i < plan.keep.size(); ++i)
    if (plan.attention[i] || plan.heads[i] > 0)
      std::cout << "  layer " << i << ": " << plan.heads[i] << " -> " << plan.keep[i].size() << " heads "
                << head_list(plan.keep[i]) << "\n";
  for (const auto& n : plan.notes) std::cout << "  note: " << n << "\n";
  std::cout << (plan.exact ? "the pruned model computes what the gated model computes in evaluation"
                           : "approximate: heads that were not closed were removed")
            << "\nwritten to " << out_dir << "\n";
  return 0;
}

}  // namespace hr
