#include "train/tools/measured_run.h"

#include <cmath>
#include <filesystem>
#include <iostream>

#include "kernels/base/error.h"
#include "train/tools/bench.h"

namespace fs = std::filesystem;

namespace hr {

void train_or_resume(const std::string& tool, const std::string& what, const std::string& dir,
                     const std::string& config, const std::vector<std::string>& overrides) {
  TrainArgs t;
  t.overrides = overrides;
  t.quiet = true;
  if (fs::exists(dir + "/checkpoint-last.safetensors")) {
    t.resume_dir = dir;  // interrupted earlier: continue it
  } else {
    fs::remove_all(dir);
    t.config_path = config;
    t.out_dir = dir;
  }
  std::cout << tool << ": training " << what << " -> " << dir << std::endl;
  const int rc = train_command(t);
  HR_CHECK(rc == 0, tool + ": the run " + dir + " failed (exit code " + std::to_string(rc) + ")");
}

void measure_timings(LoadedRun& run, RunMeasurement& m) {
  const int64_t T = run.model->max_len(), V = run.tokenizer->vocab().size();
  m.latency_b1_ms = forward_latency_ms(*run.model, 1, T, V, 100);
  m.latency_b32_ms = forward_latency_ms(*run.model, 32, T, V, 30);
  m.step_ms = median(time_training_steps(*run.model, run.config.train.batch_size, T, V, 3, 20).step_seconds) * 1e3;
}

void retime_run(const std::string& tool, const std::string& dir, RunMeasurement& m) {
  std::cout << tool << ": timing " << dir << std::endl;
  LoadedRun loaded = load_run(dir, "best", false);
  measure_timings(loaded, m);
}

RunMeasurement measure_run(LoadedRun& run) {
  const std::string split = run.task->has_split("test") ? "test" : "eval";
  const EvalResult r = run.task->evaluate(*run.model, split, run.config.train.device, 64);
  RunMeasurement m;
  m.parameters = run.model->num_parameters();
  m.metric = split + "_" + r.primary;
  m.value = r.primary_value();
  measure_timings(run, m);
  return m;
}

nlohmann::json to_json(const RunMeasurement& m) {
  return {{"parameters", m.parameters}, {"metric", m.metric},   {"value", m.value},
          {"step_ms", m.step_ms},       {"latency_b1_ms", m.latency_b1_ms}, {"latency_b32_ms", m.latency_b32_ms}};
}

RunMeasurement measurement_from_json(const nlohmann::json& j) {
  RunMeasurement m;
  m.parameters = j.at("parameters"), m.metric = j.at("metric"), m.value = j.at("value");
  m.step_ms = j.at("step_ms"), m.latency_b1_ms = j.at("latency_b1_ms"), m.latency_b32_ms = j.at("latency_b32_ms");
  return m;
}

MeanSd mean_sd(const std::vector<double>& v) {
  MeanSd s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(v.size() - 1));
  }
  return s;
}

SeedSummary summarize_seeds(const std::vector<const RunMeasurement*>& runs) {
  std::vector<double> v, step, l1, l32;
  for (const RunMeasurement* r : runs) {
    v.push_back(r->value);
    step.push_back(r->step_ms);
    l1.push_back(r->latency_b1_ms);
    l32.push_back(r->latency_b32_ms);
  }
  SeedSummary s;
  s.seeds = runs.size();
  s.value = mean_sd(v);
  s.step_ms = mean_sd(step).mean;
  s.latency_b1_ms = mean_sd(l1).mean;
  s.latency_b32_ms = mean_sd(l32).mean;
  return s;
}

}  // namespace hr
