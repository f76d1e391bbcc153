// headroom curves RUN [RUN ...] --metric NAME [--x step|tokens] --out FILE.png: one metric of one or more runs'
// metrics.jsonl against training steps or tokens seen, one line per run (the pretraining curves of docs/).
// NAME is a logged key ("loss", "lr") or an evaluation's ("eval.masked_accuracy", "eval.perplexity").
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "kernels/base/error.h"
#include "train/cli/command.h"
#include "train/data/json_line.h"
#include "train/run/run_config.h"
#include "train/tools/plot.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

struct CurvesArgs {
  std::vector<std::string> runs;
  std::string metric, x = "step", out, title;
};

// Tokens a step trains on when every row is full (pretraining's packed rows), or 0 when rows vary.
double tokens_per_step(const RunConfig& rc) {
  if (rc.data.task != "mlm") return 0;
  const int64_t row = rc.data.max_seq_len > 0 ? rc.data.max_seq_len : rc.root.child("model").get<int64_t>("max_len");
  return static_cast<double>(rc.train.batch_size * rc.train.grad_accum * row);
}

int curves_command(const CurvesArgs& a) {
  const bool eval = a.metric.rfind("eval.", 0) == 0;
  const std::string key = eval ? a.metric.substr(5) : a.metric;
  LinePlot plot;
  plot.title = a.title.empty() ? a.metric : a.title;
  plot.x_label = a.x == "tokens" ? "tokens seen (millions)" : "step";
  plot.y_label = a.metric;
  for (const std::string& run : a.runs) {
    const std::string metrics = run + "/metrics.jsonl";
    HR_CHECK(fs::is_regular_file(metrics), run + " is not a run directory with a metrics.jsonl");
    const RunConfig rc = load_run_config(run + "/config.yaml", {}, /*check_files=*/false);
    const double per_step = tokens_per_step(rc);
    if (a.x == "tokens" && per_step == 0)
      throw UsageError(run + ": --x tokens needs full rows of a known length (a data.task mlm run); use --x step");
    PlotSeries s;
    s.name = fs::path(run).filename().string();
    std::ifstream f(metrics);
    int64_t line_no = 0;
    for (std::string line; std::getline(f, line);) {
      ++line_no;
      const nlohmann::json j = parse_json_line(line).value;
      if (!j.is_object() || !j.contains("step")) continue;  // a torn last line of a killed run
      const nlohmann::json* row = &j;
      if (eval) {
        if (!j.contains("eval") || !j["eval"].is_object()) continue;
        row = &j["eval"];
      }
      if (!row->contains(key) || !(*row)[key].is_number()) continue;
      const double step = j["step"].get<double>();
      s.x.push_back(a.x == "tokens" ? step * per_step / 1e6 : step);
      s.y.push_back((*row)[key].get<double>());
    }
    if (s.x.empty()) throw UsageError(metrics + " has no '" + a.metric + "' values");
    plot.series.push_back(std::move(s));
  }
  write_line_plot_png(a.out, plot);
  std::cout << "wrote " << a.out << "\n";
  return 0;
}

}  // namespace

Command add_curves_command(CLI::App& app) {
  auto a = std::make_shared<CurvesArgs>();
  CLI::App* cmd = app.add_subcommand("curves", "plot a logged metric of runs against steps or tokens (PNG)");
  cmd->add_option("runs", a->runs, "run directories")->required();
  cmd->add_option("--metric", a->metric, "a logged key (loss, lr) or eval.NAME (eval.masked_accuracy)")->required();
  cmd->add_option("--x", a->x, "x axis")->check(CLI::IsMember({"step", "tokens"}));
  cmd->add_option("--title", a->title, "plot title (default: the metric)");
  cmd->add_option("--out", a->out, "the PNG to write")->required();
  return {cmd, [a] { return curves_command(*a); }};
}

}  // namespace hr
