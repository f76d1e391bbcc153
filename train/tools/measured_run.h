// The runs that comparison tools (sweep, allocate) train and tabulate: each in its own directory, trained once,
// resumed from checkpoint-last when interrupted, then scored on its test split (eval without one) and timed on
// synthetic batches of its own shape, so that runs of different models compare fairly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/run/trainer.h"

namespace hr {

struct RunMeasurement {
  int64_t parameters = 0;
  std::string metric;  // "<split>_<primary metric>", e.g. test_accuracy
  double value = 0, step_ms = 0, latency_b1_ms = 0, latency_b32_ms = 0;
};

// Trains `dir` from `config` with `overrides` (quiet), or resumes it when it holds checkpoint-last; whatever else is
// there is removed first. `tool` prefixes the progress line ("sweep: training <what> -> <dir>"). A failed run throws.
void train_or_resume(const std::string& tool, const std::string& what, const std::string& dir,
                     const std::string& config, const std::vector<std::string>& overrides);

// A training step at the run's batch size and model.max_len, eval-mode forward latency at batch 1 and 32.
void measure_timings(LoadedRun& run, RunMeasurement& m);
// The timings of the finished run in `dir` taken again (its best checkpoint), for tables whose runs were trained while
// other work shared the machine; `tool` prefixes the progress line.
void retime_run(const std::string& tool, const std::string& dir, RunMeasurement& m);
// Parameters, the primary metric on the test split (eval without one), and the timings.
RunMeasurement measure_run(LoadedRun& run);

nlohmann::json to_json(const RunMeasurement& m);
RunMeasurement measurement_from_json(const nlohmann::json& j);  // the keys to_json writes

struct MeanSd {
  double mean = 0, sd = 0;  // sd: sample standard deviation (0 for one value)
};
MeanSd mean_sd(const std::vector<double>& v);

// One table row over the seeds of one model: the metric's mean and sd, mean timings.
struct SeedSummary {
  size_t seeds = 0;
  MeanSd value;
  double step_ms = 0, latency_b1_ms = 0, latency_b32_ms = 0;
};
SeedSummary summarize_seeds(const std::vector<const RunMeasurement*>& runs);

}  // namespace hr
