#include "train/tools/heads_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "kernels/base/error.h"
#include "train/run/trainer.h"

namespace hr {

ValueHeatmap heads_heatmap(const HeadScores& scores, const PrunePlan& plan, const std::string& title) {
  ValueHeatmap t;
  t.title = title;
  t.rows = static_cast<int64_t>(plan.heads.size());
  t.cols = std::max<int64_t>(1, *std::max_element(plan.heads.begin(), plan.heads.end()));
  t.values.assign(static_cast<size_t>(t.rows * t.cols), std::numeric_limits<float>::quiet_NaN());
  t.marked.assign(t.values.size(), false);
  float hi = 0;
  for (int64_t i = 0; i < t.rows; ++i) {
    t.row_labels.push_back("layer " + std::to_string(i));
    const auto& keep = plan.keep[static_cast<size_t>(i)];
    for (int64_t h = 0; h < plan.heads[static_cast<size_t>(i)]; ++h) {
      const size_t cell = static_cast<size_t>(i * t.cols + h);
      const auto& row = scores[static_cast<size_t>(i)];
      if (!row.empty()) t.values[cell] = row[static_cast<size_t>(h)], hi = std::max(hi, t.values[cell]);
      t.marked[cell] = !std::binary_search(keep.begin(), keep.end(), h);
    }
  }
  for (int64_t h = 0; h < t.cols; ++h) t.col_labels.push_back("head " + std::to_string(h));
  t.lo = 0;
  t.hi = hi > 1.f ? hi : 1.f;
  return t;
}

int heads_command(const HeadsArgs& args) {
  LoadedRun run = load_run(args.run_dir, args.which);
  const HeadScores open = gate_open_probabilities(*run.model), z = gate_eval_values(*run.model);
  const bool gated = std::any_of(open.begin(), open.end(), [](const auto& r) { return !r.empty(); });
  PruneOptions popt = args.prune;
  if (popt.by.empty()) popt.by = gated ? "gates" : "importance";
  HR_CHECK(popt.by == "gates" || args.importance,
           std::string(gated ? "heads --by importance needs --importance" : "the model has no gates: pass --importance"));

  HeadScores importance;
  if (args.importance) {
    ImportanceOptions io = args.importance_options;
    io.device = run.config.train.device;
    io.batch_size = run.config.train.batch_size;
    importance = normalize_per_layer(head_importance(*run.model, *run.task, io));
  }
  const PrunePlan plan = plan_pruning(*run.model, popt, importance.empty() ? nullptr : &importance);

  std::printf("%-6s %-5s %10s %8s %11s  %s\n", "layer", "head", "open_prob", "gate_z", "importance", "pruned");
  for (size_t i = 0; i < plan.heads.size(); ++i) {
    for (int64_t h = 0; h < plan.heads[i]; ++h) {
      const size_t hh = static_cast<size_t>(h);
      auto cell = [&](const HeadScores& s) {
        char buf[16];
        if (s.empty() || s[i].empty()) return std::string("-");
        std::snprintf(buf, sizeof buf, "%.4f", s[i][hh]);
        return std::string(buf);
      };
      const bool pruned = !std::binary_search(plan.keep[i].begin(), plan.keep[i].end(), h);
      std::printf("%-6zu %-5lld %10s %8s %11s  %s\n", i, static_cast<long long>(h), cell(open).c_str(),
                  cell(z).c_str(), cell(importance).c_str(), pruned ? "yes" : "no");
    }
  }
  for (const auto& n : plan.notes) std::printf("note: %s\n", n.c_str());

  // short titles: the table image is only a few cells wide
  const std::string title = popt.by == "gates" ? "P(gate open); struck out: pruned" : "importance; struck out: pruned";
  const std::string png = args.png.empty() ? args.run_dir + "/heads.png" : args.png;
  write_value_heatmap_png(png, heads_heatmap(popt.by == "gates" ? open : importance, plan, title));
  std::cout << "heatmap written to " << png << "\n";
  return 0;
}

}  // namespace hr
