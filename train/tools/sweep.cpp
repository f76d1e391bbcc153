#include "train/tools/sweep.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "framework/bounded_json.h"
#include "kernels/base/error.h"
#include "train/tools/plot.h"
#include "train/tools/run_report.h"
#include "train/run/trainer.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

std::string run_dir(const std::string& sweep_dir, int64_t heads, int64_t seed) {
  return sweep_dir + "/heads" + std::to_string(heads) + "-seed" + std::to_string(seed);
}

SweepResult measure_run(const std::string& dir, int64_t heads, int64_t head_dim, int64_t seed) {
  LoadedRun run = load_run(dir, "best");
  SweepResult s;
  static_cast<RunMeasurement&>(s) = measure_run(run);
  s.heads = heads;
  s.head_dim = head_dim;
  s.seed = seed;
  return s;
}

nlohmann::json to_json(const SweepResult& s) {
  nlohmann::json j = to_json(static_cast<const RunMeasurement&>(s));
  j["heads"] = s.heads, j["head_dim"] = s.head_dim, j["seed"] = s.seed;
  return j;
}

SweepResult from_json(const nlohmann::json& j) {
  SweepResult s;
  static_cast<RunMeasurement&>(s) = measurement_from_json(j);
  s.heads = j.at("heads"), s.head_dim = j.at("head_dim"), s.seed = j.at("seed");
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
     << "latency b32 ms | reports |\n|---:|---:|---:|---:|---:|---:|---:|---|\n";
  PlotSeries acc{metric, {}, {}, {}}, lat1{"batch 1", {}, {}, {}}, lat32{"batch 32", {}, {}, {}};
  for (const auto& [h, runs] : by_heads) {
    std::vector<const RunMeasurement*> seeds;
    for (const auto& r : runs) seeds.push_back(&r);
    const SeedSummary sum = summarize_seeds(seeds);
    const MeanSd sv = sum.value;
    csv << h << "," << runs[0].head_dim << "," << runs[0].parameters << "," << runs.size() << "," << sv.mean << ","
        << sv.sd << "," << sum.step_ms << "," << sum.latency_b1_ms << "," << sum.latency_b32_ms << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "| %lld | %lld | %lld | %.4f ± %.4f (%zu) | %.1f | %.2f | %.1f |",
                  static_cast<long long>(h), static_cast<long long>(runs[0].head_dim),
                  static_cast<long long>(runs[0].parameters), sv.mean, sv.sd, runs.size(), sum.step_ms,
                  sum.latency_b1_ms, sum.latency_b32_ms);
    std::string links;  // each seed's run report
    for (const auto& r : runs)
      if (const std::string l = report_link(dir, run_dir(dir, r.heads, r.seed), "seed " + std::to_string(r.seed));
          !l.empty())
        links += (links.empty() ? "" : ", ") + l;
    md << line << " " << links << " |\n";
    acc.x.push_back(static_cast<double>(h));
    acc.y.push_back(sv.mean);
    acc.y_err.push_back(sv.sd);
    lat1.x.push_back(static_cast<double>(h));
    lat1.y.push_back(sum.latency_b1_ms);
    lat32.x.push_back(static_cast<double>(h));
    lat32.y.push_back(sum.latency_b32_ms);
  }
  if (fs::exists(dir + "/report.html")) md << "\nAll runs compared: [report.html](report.html)\n";
  write_line_plot_png(dir + "/accuracy_vs_heads.png",
                      LinePlot{metric + " vs heads per layer (mean ± sd over seeds)", "heads per layer", metric, {acc},
                               true});
  write_line_plot_png(dir + "/latency_vs_heads.png",
                      LinePlot{"inference latency vs heads per layer", "heads per layer", "ms per forward pass",
                               {lat1, lat32}, true});
}

int sweep_command(const SweepArgs& args) {
  HR_CHECK(!args.heads.empty(), "sweep: --heads needs at least one head count");
  // a head count given twice would be one run directory reported as two
  std::set<int64_t> given;
  for (int64_t h : args.heads)
    if (!given.insert(h).second)
      throw UsageError("sweep: --heads lists " + std::to_string(h) + " twice; give each head count once");
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
        results.push_back(from_json(read_json_file(result_path, 64 << 20, "result file")));
        std::cout << "sweep: reusing " << run << "\n";
        continue;
      }
      std::vector<std::string> overrides = args.overrides;
      for (size_t g = 0; g < groups; ++g) {
        overrides.push_back("model.layers." + std::to_string(g) + ".attention.heads=" + std::to_string(h));
        overrides.push_back("model.layers." + std::to_string(g) + ".attention.head_dim=" + std::to_string(hd));
      }
      overrides.push_back("train.seed=" + std::to_string(seed));
      train_or_resume("sweep", std::to_string(h) + " heads x " + std::to_string(hd) + ", seed " + std::to_string(seed),
                      run, args.config, overrides);
      SweepResult r = measure_run(run, h, hd, seed);
      std::ofstream(result_path) << to_json(r).dump(2) << "\n";
      results.push_back(r);
    }
  }
  if (args.remeasure) {
    // timings taken while other work shared the machine are not comparable: take them all again, back to back
    for (SweepResult& r : results) {
      const std::string run = run_dir(dir, r.heads, r.seed);
      retime_run("sweep", run, r);
      std::ofstream(run + "/result.json") << to_json(r).dump(2) << "\n";
    }
  }
  std::vector<std::string> runs;
  for (const SweepResult& r : results) runs.push_back(run_dir(dir, r.heads, r.seed));
  write_run_reports("sweep", dir, runs);
  write_sweep_report(dir, results);
  std::ifstream md(dir + "/results.md");
  std::cout << md.rdbuf() << "sweep: wrote " << dir << "/results.csv, results.md, accuracy_vs_heads.png, "
            << "latency_vs_heads.png\n";
  return 0;
}

}  // namespace hr
