// `headroom sweep CONFIG --heads 1,2,4,8 [--seeds N]`: one training run per head count (and seed), keeping d_model and
// setting head_dim = d_model / heads in every layer group (or --head-dim), then a results table (results.csv,
// results.md) and plots (metric vs heads, latency vs heads) in the sweep directory. Finished runs are reused when the
// sweep is started again; an interrupted run is resumed from its last checkpoint. Timings (a training step at the run's
// batch size, forward latency at batch 1 and 32) are taken on synthetic batches right after each run, or for all runs
// back to back with --remeasure.
#pragma once

#include <string>
#include <vector>

#include "train/tools/measured_run.h"

namespace hr {

struct SweepArgs {
  std::string config;
  std::vector<int64_t> heads;
  int64_t seeds = 1;
  int64_t head_dim = 0;  // 0: d_model / heads
  std::vector<std::string> overrides;
  std::string out_dir;   // default sweeps/<config name>
  bool remeasure = false;  // time every finished run again, one after another (after training on a busy machine)
};

int sweep_command(const SweepArgs& args);

// One finished run of a sweep, as stored in its result.json.
struct SweepResult : RunMeasurement {
  int64_t heads = 0, head_dim = 0, seed = 0;
};
// Aggregates results (mean and sample standard deviation over seeds per head count) into results.csv, results.md and
// the two plots in `dir`.
void write_sweep_report(const std::string& dir, const std::vector<SweepResult>& results);

}  // namespace hr
