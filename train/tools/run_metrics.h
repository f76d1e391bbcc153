// A run's metrics.jsonl, read into what a report draws: the logged training rows, the evaluations (with the gates'
// open probabilities when the model has L0 gates), the skipped steps, the final test and each training session.
// Every line must be a JSON object with a "step"; another line is a UsageError naming file:line. Only a torn last
// line (no newline: the run was killed while writing it) is skipped, with a note.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hr {

struct TrainRow {
  int64_t step = 0, epoch = 0;
  double loss = 0, lr = 0, tokens_per_s = 0, step_ms = 0;
  // NaN where the run predates them
  double tokens = NAN, grad_norm = NAN, grad_norm_max = NAN, elapsed_s = NAN;
};

struct EvalRow {
  int64_t step = 0;
  std::map<std::string, double> metrics;
  std::string primary;  // the metric that picked the best checkpoint; empty where the run predates it
  double eval_s = NAN;
  std::vector<std::vector<float>> gate_open;  // per layer (empty for a layer without gates); empty without gates
};

struct TestRow {
  int64_t step = 0;
  std::map<std::string, double> metrics;
  std::string checkpoint;  // best | last
};

struct RunMetrics {
  std::string path;
  std::vector<nlohmann::json> sessions;  // the "session" objects, first to last (resumes add one each)
  std::vector<double> session_s;         // per session, the last elapsed_s any of its rows logged (NaN: none)
  std::vector<TrainRow> train;
  std::vector<EvalRow> evals;
  std::vector<int64_t> skipped;  // steps skipped for a non-finite loss or gradient
  std::optional<TestRow> test;
  bool done = false;  // the "done" row a run ends with was logged (none: running, stopped or killed)
  std::string note;  // e.g. the torn last line that was skipped

  // The evaluation metric that picks the best checkpoint: what the rows say, else accuracy, f1, masked_accuracy, else
  // the first metric logged; empty without evaluations.
  std::string primary() const;
  // The evaluation with the highest primary value (the first of equals), or null without evaluations.
  const EvalRow* best_eval() const;
  // Wall time: each session's last elapsed_s, summed; NaN where nothing logged it.
  double wall_s() const;
  // Tokens seen at `step`, interpolated between the logged rows (NaN without them).
  double tokens_at(int64_t step) const;
};

RunMetrics read_run_metrics(const std::string& path);

}  // namespace hr
