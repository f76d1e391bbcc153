#include "train/tools/sweep.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/base/error.h"
#include "train/tools/bench.h"
#include "train/tools/plot.h"
#include "train/run/trainer.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

std::string run_dir(const std::string& sweep_dir, int64_t heads, int64_t seed) {
  return sweep_dir + "/heads" + std::to_string(heads) + "-seed" + std::to_string(seed);
}

// Timings of a finished run's model, all on synthetic batches of its own shape so that runs compare fairly: a
// training step at the run's batch size and model.max_len, and eval-mode forward latency at batch 1 and 32.
void measure_timings(LoadedRun& run, SweepResult& s) {
  const int64_t T = run.model->max_len(), V = run.tokenizer->vocab().size();
  s.latency_b1_ms = forward_latency_ms(*run.model, 1, T, V, 100);
  s.latency_b32_ms = forward_latency_ms(*run.model, 32, T, V, 30);
  s.step_ms = median(time_training_steps(*run.model, run.config.train.batch_size, T, V, 3, 20).step_seconds) * 1e3;
}

SweepResult measure_run(const std::string& dir, int64_t heads, int64_t head_dim, int64_t seed) {
  LoadedRun run = load_run(dir, "best");
  const std::string split = run.task->has_split("test") ? "test" : "eval";
  const EvalResult r = run.task->evaluate(*run.model, split, run.config.train.device, 64);
  SweepResult s;
  s.heads = heads;
  s.head_dim = head_dim;
  s.seed = seed;
  s.parameters = run.model->num_parameters();
  s.metric = split + "_" + r.primary;
  s.value = r.primary_value();
  measure_timings(run, s);
  return s;
}

nlohmann::json to_json(const SweepResult& s) {
  return {{"heads", s.heads}, {"head_dim", s.head_dim}, {"seed", s.seed}, {"parameters", s.parameters},
          {"metric", s.metric}, {"value", s.value}, {"step_ms", s.step_ms}, {"latency_b1_ms", s.latency_b1_ms},
          {"latency_b32_ms", s.latency_b32_ms}};
}

SweepResult from_json(const nlohmann::json& j) {
  SweepResult s;
  s.heads = j.at("heads"), s.head_dim = j.at("head_dim"), s.seed = j.at("seed"), s.parameters = j.at("parameters");
  s.metric = j.at("metric"), s.value = j.at("value"), s.step_ms = j.at("step_ms");
  s.latency_b1_ms = j.at("latency_b1_ms"), s.latency_b32_ms = j.at("latency_b32_ms");
  return s;
}

struct Stat {
  double mean = 0, sd = 0;
};
Stat stat(const std::vector<double>& v) {
  Stat s;
  for (double x : v) s.mean += x / static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(v.size() - 1));
  }
  return s;
}

}  // namespace

void write_sweep_report(const std::string& dir, const std::vector<SweepResult>& results) {
  HR_CHECK(!results.empty(), "sweep: no finished runs to report");
  std::map<int64_t, std::vector<SweepResult>> by_heads;
  for (const auto& r : results) by_heads[r.heads].push_back(r);
  const std::string metric = results[0].metric;

  std::ofstream csv(dir + "/results.csv");
  csv << "heads,head_dim,parameters,seeds," << metric << "_mean," << metric
      << "_sd,train_ms_per_step,latency_b1_ms,latency_b32_ms\n";
  std::ofstream md(dir + "/results.md");
  md << "| heads | head_dim | parameters | " << metric << " (mean ± sd, seeds) | train step ms | latency b1 ms | "
     << "latency b32 ms |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  PlotSeries acc{metric, {}, {}, {}}, lat1{"batch 1", {}, {}, {}}, lat32{"batch 32", {}, {}, {}};
  for (const auto& [h, runs] : by_heads) {
    std::vector<double> v, step, l1, l32;
    for (const auto& r : runs) {
      v.push_back(r.value);
      step.push_back(r.step_ms);
      l1.push_back(r.latency_b1_ms);
      l32.push_back(r.latency_b32_ms);
    }
    const Stat sv = stat(v), ss = stat(step), s1 = stat(l1), s32 = stat(l32);
    csv << h << "," << runs[0].head_dim << "," << runs[0].parameters << "," << runs.size() << "," << sv.mean << ","
        << sv.sd << "," << ss.mean << "," << s1.mean << "," << s32.mean << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "| %lld | %lld | %lld | %.4f ± %.4f (%zu) | %.1f | %.2f | %.1f |\n",
                  static_cast<long long>(h), static_cast<long long>(runs[0].head_dim),
                  static_cast<long long>(runs[0].parameters), sv.mean, sv.sd, runs.size(), ss.mean, s1.mean, s32.mean);
    md << line;
    acc.x.push_back(static_cast<double>(h));
    acc.y.push_back(sv.mean);
    acc.y_err.push_back(sv.sd);
    lat1.x.push_back(static_cast<double>(h));
    lat1.y.push_back(s1.mean);
    lat32.x.push_back(static_cast<double>(h));
    lat32.y.push_back(s32.mean);
  }
  write_line_plot_png(dir + "/accuracy_vs_heads.png",
                      LinePlot{metric + " vs heads per layer (mean ± sd over seeds)", "heads per layer", metric, {acc},
                               true});
  write_line_plot_png(dir + "/latency_vs_heads.png",
                      LinePlot{"inference latency vs heads per layer", "heads per layer", "ms per forward pass",
                               {lat1, lat32}, true});
}

int sweep_command(const SweepArgs& args) {
  HR_CHECK(!args.heads.empty(), "sweep: --heads needs at least one head count");
  RunConfig base = load_run_config(args.config, args.overrides);
  const Config model = base.root.child("model");
  const int64_t d_model = model.get_positive("d_model");
  const size_t groups = model.child("layers").items().size();
  const std::string dir = args.out_dir.empty() ? "sweeps/" + base.name : args.out_dir;
  fs::create_directories(dir);

  std::vector<SweepResult> results;
  for (int64_t h : args.heads) {
    HR_CHECK(h > 0, "sweep: head counts must be positive");
    int64_t hd = args.head_dim;
    if (hd == 0) {
      if (d_model % h != 0)
        throw ConfigError("sweep: " + std::to_string(h) + " heads do not divide d_model " + std::to_string(d_model) +
                          " (head_dim = d_model / heads); pick a d_model every head count divides (384 serves 1, 2, "
                          "4, 8, 12, 16) or give --head-dim");
      hd = d_model / h;
    }
    for (int64_t seed = 0; seed < args.seeds; ++seed) {
      const std::string run = run_dir(dir, h, seed);
      const std::string result_path = run + "/result.json";
      if (fs::exists(result_path)) {
        std::ifstream f(result_path);
        results.push_back(from_json(nlohmann::json::parse(f)));
        std::cout << "sweep: reusing " << run << "\n";
        continue;
      }
      TrainArgs t;
      t.overrides = args.overrides;
      for (size_t g = 0; g < groups; ++g) {
        t.overrides.push_back("model.layers." + std::to_string(g) + ".attention.heads=" + std::to_string(h));
        t.overrides.push_back("model.layers." + std::to_string(g) + ".attention.head_dim=" + std::to_string(hd));
      }
      t.overrides.push_back("train.seed=" + std::to_string(seed));
      t.quiet = true;
      if (fs::exists(run + "/checkpoint-last.safetensors")) {
        t.resume_dir = run;  // interrupted earlier: continue it
      } else {
        fs::remove_all(run);
        t.config_path = args.config;
        t.out_dir = run;
      }
      std::cout << "sweep: training " << h << " heads x " << hd << ", seed " << seed << " -> " << run << std::endl;
      const int rc = train_command(t);
      HR_CHECK(rc == 0, "sweep: the run " + run + " failed (exit code " + std::to_string(rc) + ")");
      SweepResult r = measure_run(run, h, hd, seed);
      std::ofstream(result_path) << to_json(r).dump(2) << "\n";
      results.push_back(r);
    }
  }
  if (args.remeasure) {
    // timings taken while other work shared the machine are not comparable: take them all again, back to back
    for (SweepResult& r : results) {
      const std::string run = run_dir(dir, r.heads, r.seed);
      std::cout << "sweep: timing " << run << std::endl;
      LoadedRun loaded = load_run(run, "best", false);
      measure_timings(loaded, r);
      std::ofstream(run + "/result.json") << to_json(r).dump(2) << "\n";
    }
  }
  write_sweep_report(dir, results);
  std::ifstream md(dir + "/results.md");
  std::cout << md.rdbuf() << "sweep: wrote " << dir << "/results.csv, results.md, accuracy_vs_heads.png, "
            << "latency_vs_heads.png\n";
  return 0;
}

}  // namespace hr
