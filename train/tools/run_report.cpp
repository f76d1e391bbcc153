#include "train/tools/run_report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "framework/atomic_file.h"
#include "framework/config.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "models/head_pruning.h"
#include "train/run/trainer.h"
#include "train/tools/attention_maps.h"
#include "train/tools/heads_report.h"
#include "train/tools/html.h"
#include "train/tools/plot.h"
#include "train/tools/run_metrics.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

// Figures are drawn at about the width they are shown at on a laptop (two to a row); CSS scales them down.
constexpr int kFigureWidth = 620, kFigureHeight = 360, kFigureLegend = 190;
constexpr int kAttentionMaxSide = 1500;

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Four significant digits, or from 1000 on a whole number with thousands separated by narrow no-break spaces.
std::string number(double v) {
  if (!std::isfinite(v)) return "–";
  char buf[64];
  if (std::fabs(v) >= 1000) {
    std::string digits = std::to_string(static_cast<long long>(std::llround(std::fabs(v))));
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += "\u202f";
      out += digits[i];
    }
    return (v < 0 ? "-" : "") + out;
  }
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A metric's value: four decimals below 10 (accuracies, F1 fractions, losses), else two (percentages, perplexity).
std::string metric_value(double v) { return fixed(v, std::fabs(v) < 10 ? 4 : 2); }

std::string duration(double s) {
  if (!std::isfinite(s)) return "–";
  const auto t = static_cast<long long>(std::llround(s));
  char buf[64];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lld h %02lld min %02lld s", t / 3600, (t / 60) % 60, t % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lld min %02lld s", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// ---- one run as the report sees it

struct RunView {
  std::string dir, label, id;  // id: the prefix of the run's anchors
  RunMetrics metrics;
  std::string config_text;
  YAML::Node config;
  std::optional<RunConfig> rc;          // the config as training read it, when it still reads
  std::optional<LoadedRun> run;         // the model (and with --no-eval or unreadable data, no data)
  std::string checkpoint;               // best | last | empty: none
  bool data_loaded = false;
  std::vector<std::string> notes;       // what could not be loaded, and why
  std::vector<BreakdownTable> breakdown;
  std::string breakdown_note;
};

std::string yaml_scalar(const YAML::Node& root, std::initializer_list<const char*> path, const std::string& fallback) {
  YAML::Node n = YAML::Clone(root);
  for (const char* key : path) {
    if (!n.IsMap() || !n[key]) return fallback;
    n = n[key];
  }
  return n.IsScalar() ? n.as<std::string>() : fallback;
}

void load_model(RunView& v, const ReportArgs& a) {
  const bool best = fs::exists(v.dir + "/checkpoint-best.safetensors");
  v.checkpoint = best ? "best" : fs::exists(v.dir + "/checkpoint-last.safetensors") ? "last" : "";
  if (v.checkpoint.empty()) {
    v.notes.push_back("no checkpoint in " + v.dir + ": the model, gates at the end and attention maps are missing");
    return;
  }
  // as configured, then on the CPU (a GPU run read where there is none); with the data, then without it
  const bool on_cpu = !v.rc || v.rc->train.device == Device::CPU;
  std::vector<std::pair<bool, std::vector<std::string>>> tries;
  for (const bool data : a.evaluate ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
    tries.push_back({data, {}});
    if (!on_cpu) tries.push_back({data, {"train.device=cpu", "train.precision=f32"}});
  }
  for (const auto& [data, overrides] : tries) {
    try {
      v.run.emplace(load_run(v.dir, v.checkpoint, data, overrides));
      v.data_loaded = data;
      if (!overrides.empty()) v.notes.push_back("the model ran on the CPU here (the run trained on " +
                                                std::string(device_name(v.rc->train.device)) + ")");
      return;
    } catch (const std::exception& e) {
      v.notes.push_back(std::string("could not load the run") + (data ? " with its data" : "") +
                        (overrides.empty() ? "" : " on the CPU") + ": " + e.what());
    }
  }
}

RunView load_view(const std::string& dir, const ReportArgs& a, size_t index) {
  RunView v;
  v.dir = dir;
  v.id = "r" + std::to_string(index);
  if (!fs::is_directory(dir)) throw UsageError(dir + " is not a run directory (no such directory)");
  for (const char* f : {"config.yaml", "metrics.jsonl"})
    if (!fs::is_regular_file(dir + "/" + f))
      throw UsageError(dir + " is not a run directory: it has no " + f + " (headroom train writes both)");
  v.metrics = read_run_metrics(dir + "/metrics.jsonl");
  if (!v.metrics.note.empty() && !a.quiet) std::cerr << "note: " << v.metrics.note << "\n";
  v.config_text = read_file_bytes(dir + "/config.yaml");
  // Config::parse checks the text (YAML syntax, one document, nesting, aliases: ConfigError) before the report walks
  // the tree; YAML::Load then reads what it accepted
  Config::parse(v.config_text, dir + "/config.yaml");
  v.config = YAML::Load(v.config_text);
  try {
    v.rc = load_run_config(dir + "/config.yaml", {}, /*check_files=*/false);
  } catch (const std::exception& e) {
    v.notes.push_back(std::string("config.yaml does not read as a training config here: ") + e.what());
  }
  load_model(v, a);
  if (v.run && v.data_loaded && a.evaluate) {
    Task& task = *v.run->task;
    if (!task.has_split(a.split)) {
      v.breakdown_note = "the run's data has no '" + a.split + "' split to break the errors down on";
    } else {
      try {
        v.breakdown = task.error_breakdown(*v.run->model, a.split, v.run->config.train.device,
                                           v.run->config.train.batch_size * 2);
        if (v.breakdown.empty())
          v.breakdown_note = "this task (" + v.run->config.data.task + ") has no error breakdown";
      } catch (const std::exception& e) {  // the rest of the page still tells the run's story
        v.breakdown_note = std::string("the errors could not be broken down: ") + e.what();
      }
    }
  } else {
    v.breakdown_note = !a.evaluate ? "not computed (--no-eval)"
                                   : "the run's data could not be loaded here, so the errors cannot be broken down";
  }
  return v;
}

// Basenames, or the last two path components where two runs share a basename.
void label_runs(std::vector<RunView>& views) {
  auto path_of = [](const RunView& v) {  // "runs/x/" as "runs/x"
    fs::path p = fs::path(v.dir).lexically_normal();
    return p.filename().empty() ? p.parent_path() : p;
  };
  std::map<std::string, int> seen;
  for (const RunView& v : views) ++seen[path_of(v).filename().string()];
  for (RunView& v : views) {
    const fs::path p = path_of(v);
    const std::string base = p.filename().string();
    v.label = seen[base] > 1 ? (p.parent_path().filename() / base).string() : base;
  }
}

// ---- figures

struct Figure {
  std::string png, alt, caption;  // caption: plain text (escaped here)
};

std::string figure_html(const Figure& f) {
  const std::string caption = f.caption.empty() ? "" : "<figcaption>" + html_escape(f.caption) + "</figcaption>";
  return "<figure>" + inline_png(f.png, f.alt) + caption + "</figure>\n";
}

std::string figures_html(const std::vector<Figure>& figures) {
  std::string s = "<div class=\"figures\">\n";
  for (const Figure& f : figures) s += figure_html(f);
  return s + "</div>\n";
}

LinePlot small_plot(const std::string& title, const std::string& x_label, const std::string& y_label, bool legend) {
  LinePlot p;
  p.title = title;
  p.x_label = x_label;
  p.y_label = y_label;
  p.width = kFigureWidth;
  p.height = kFigureHeight;
  p.legend_width = legend ? kFigureLegend : 0;
  p.pad_y = true;
  return p;
}

bool has_points(const LinePlot& p) {
  for (const PlotSeries& s : p.series)
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) return true;
  return false;
}

// A plot with a legend gets a band as wide as its longest name needs (the legend's margins and sample take 60 px,
// DejaVu Sans at 13 px about 8 px a character), so the plots of one grid keep most of their width for the data.
void add_figure(std::vector<Figure>& out, LinePlot p, const std::string& caption) {
  if (!has_points(p)) return;
  if (p.legend_width > 0) {
    size_t longest = 0;
    for (const PlotSeries& s : p.series)
      if (s.in_legend) longest = std::max(longest, s.name.size());
    p.legend_width = std::clamp(static_cast<int>(68 + 8 * longest), 100, kFigureLegend);
  }
  out.push_back({line_plot_png(p), p.title, caption});
}

// The mean of the finite values within `window` points centred on each point (fewer at the ends): a curve of hundreds
// of noisy logged losses reads as its trend, without the lag of an exponential average. window 1 returns y.
std::vector<double> smooth(const std::vector<double>& y, int window) {
  if (window <= 1) return y;
  const auto half = static_cast<ptrdiff_t>(window / 2), n = static_cast<ptrdiff_t>(y.size());
  std::vector<double> out;
  for (ptrdiff_t i = 0; i < n; ++i) {
    double sum = 0;
    int count = 0;
    for (ptrdiff_t j = std::max<ptrdiff_t>(0, i - half); j <= std::min(n - 1, i + half); ++j)
      if (std::isfinite(y[static_cast<size_t>(j)])) sum += y[static_cast<size_t>(j)], ++count;
    out.push_back(std::isfinite(y[static_cast<size_t>(i)]) && count ? sum / count : NAN);
  }
  return out;
}

// Odd, about a tenth of the points, none below 20 points.
int smoothing_window(size_t points) {
  return points < 20 ? 1 : static_cast<int>(std::clamp<size_t>(points / 10, 2, 50)) | 1;
}

const char* kStepAxis = "optimizer step";
const char* kTokenAxis = "tokens seen (millions)";

bool wants_log_axis(const std::string& name, const std::vector<double>& values) {
  double lo = INFINITY, hi = 0;
  for (double v : values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  return name == "perplexity" && lo > 0 && hi / lo > 10;
}

// The y-axis label of an evaluation metric, with its unit: losses in nats, counts, and scores as fractions or percent
// (QA and MLM report percent) by their values.
std::string metric_label(const std::string& name, const std::vector<double>& values) {
  if (name == "perplexity") return wants_log_axis(name, values) ? "perplexity (log scale)" : "perplexity";
  if (name.find("loss") != std::string::npos) return name + " (nats)";
  if (name.size() > 7 && name.substr(name.size() - 7) == "_tokens") return name + " (count)";
  double hi = 0;
  for (double v : values)
    if (std::isfinite(v)) hi = std::max(hi, std::fabs(v));
  return name + (hi > 1.0 ? " (%)" : " (fraction)");
}

// A metric that never moved (MLM's masked_tokens: the eval set's size) is a row of the tables, not a curve.
bool constant_series(const std::vector<double>& y) {
  return y.size() > 1 && std::all_of(y.begin(), y.end(), [&](double v) { return v == y.front(); });
}

std::vector<double> steps_of_train(const RunMetrics& m) {
  std::vector<double> x;
  for (const TrainRow& r : m.train) x.push_back(static_cast<double>(r.step));
  return x;
}

template <class F>
std::vector<double> train_values(const RunMetrics& m, F f) {
  std::vector<double> y;
  for (const TrainRow& r : m.train) y.push_back(f(r));
  return y;
}

std::vector<std::string> eval_metric_names(const RunMetrics& m) {
  std::vector<std::string> names;
  for (const EvalRow& e : m.evals)
    for (const auto& [k, v] : e.metrics)
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  // the primary metric first
  const std::string primary = m.primary();
  std::stable_partition(names.begin(), names.end(), [&](const std::string& n) { return n == primary; });
  return names;
}

PlotSeries eval_series(const RunMetrics& m, const std::string& name, bool by_tokens) {
  PlotSeries s;
  for (const EvalRow& e : m.evals) {
    const auto it = e.metrics.find(name);
    if (it == e.metrics.end()) continue;
    s.x.push_back(by_tokens ? m.tokens_at(e.step) / 1e6 : static_cast<double>(e.step));
    s.y.push_back(it->second);
  }
  return s;
}

std::string best_text(const RunMetrics& m, const std::string& name) {
  const EvalRow* best = nullptr;
  for (const EvalRow& e : m.evals) {
    const auto it = e.metrics.find(name);
    if (it == e.metrics.end() || !std::isfinite(it->second)) continue;
    const bool lower_better = name == "perplexity" || name.find("loss") != std::string::npos;
    if (!best || (lower_better ? it->second < best->metrics.at(name) : it->second > best->metrics.at(name)))
      best = &e;
  }
  return best ? "best " + metric_value(best->metrics.at(name)) + " at step " + std::to_string(best->step) : "";
}

// Training loss, raw and smoothed.
void add_loss_figure(std::vector<Figure>& out, const RunMetrics& m, const std::vector<double>& steps,
                     const std::string& logged) {
  const std::vector<double> loss = train_values(m, [](const TrainRow& r) { return r.loss; });
  const int window = smoothing_window(loss.size());
  LinePlot p = small_plot("training loss", kStepAxis, "loss (nats)", window > 1);
  PlotSeries raw{window > 1 ? "logged" : "loss", steps, loss, {}};
  raw.markers = loss.size() <= 30;
  if (window > 1) raw.opacity = 0.3, raw.line_width = 1.2;
  p.series.push_back(raw);
  if (window > 1) {
    PlotSeries s{"smoothed", steps, smooth(loss, window), {}};
    s.markers = false;
    s.color = 0;
    p.series.push_back(s);
  }
  add_figure(out, p, "Training loss of the logged steps" + (logged.empty() ? "" : " (" + logged + ")") +
                         (window > 1 ? "; the smoothed curve is the mean of the " +
                                           std::to_string(window) + " points around each." : "."));
}

// Every evaluation metric that changes, one plot each.
void add_eval_figures(std::vector<Figure>& out, const RunMetrics& m) {
  for (const std::string& name : eval_metric_names(m)) {
    PlotSeries s = eval_series(m, name, false);
    if (constant_series(s.y)) continue;
    s.name = name;
    LinePlot p = small_plot("eval " + name, kStepAxis, metric_label(name, s.y), false);
    p.log10_y = wants_log_axis(name, s.y);
    p.series.push_back(s);
    const std::string best = best_text(m, name);
    add_figure(out, p, "Evaluation " + name + " on the eval split at each evaluation" +
                           (best.empty() ? "." : "; " + best + ".") +
                           (name == m.primary() ? " This metric picks checkpoint-best." : ""));
  }
}

// A logged training value against the steps, with its caption.
void add_step_figure(std::vector<Figure>& out, const std::string& title, const std::string& y_label,
                     PlotSeries s, const std::string& caption) {
  LinePlot p = small_plot(title, kStepAxis, y_label, false);
  s.markers = s.x.size() <= 30;
  p.series.push_back(s);
  add_figure(out, p, caption);
}

// The gradient's norm, mean and largest over each logged window, with the clipping threshold.
void add_grad_norm_figure(std::vector<Figure>& out, const RunView& v, const std::vector<double>& steps,
                          int log_every) {
  const RunMetrics& m = v.metrics;
  LinePlot p = small_plot("gradient norm", kStepAxis, "global L2 norm before clipping", true);
  PlotSeries mean{"mean", steps, train_values(m, [](const TrainRow& r) { return r.grad_norm; }), {}};
  PlotSeries max{"max", steps, train_values(m, [](const TrainRow& r) { return r.grad_norm_max; }), {}};
  mean.markers = max.markers = steps.size() <= 30;
  max.opacity = 0.5;
  p.series = {mean, max};
  if (v.rc && v.rc->train.clip > 0 && !steps.empty()) {
    PlotSeries clip{"clip " + number(v.rc->train.clip), {steps.front(), steps.back()},
                    {v.rc->train.clip, v.rc->train.clip}, {}};
    clip.markers = false;
    clip.color = 7;  // grey
    clip.line_width = 1;
    p.series.push_back(clip);
  }
  if (has_points(LinePlot{"", "", "", {mean, max}}))
    add_figure(out, p, "The gradient's global norm before clipping: the mean and the largest over the steps of " +
                           std::string(log_every > 1 ? "each logged window" : "each logged step") +
                           "; above the clip line the update was scaled down.");
}

// Steps skipped for a non-finite loss or gradient, counted as they came.
void add_skipped_figure(std::vector<Figure>& out, const RunMetrics& m) {
  if (m.skipped.empty()) return;
  LinePlot p = small_plot("skipped steps", kStepAxis, "skipped steps so far", false);
  PlotSeries s{"skipped", {}, {}, {}};
  for (size_t i = 0; i < m.skipped.size(); ++i) {
    s.x.push_back(static_cast<double>(m.skipped[i]));
    s.y.push_back(static_cast<double>(i + 1));
  }
  p.series.push_back(s);
  add_figure(out, p, "Steps skipped for a non-finite loss or gradient (no weight changed), counted as they came.");
}

// Against tokens (where the run logged them): the loss and the primary metric.
void add_token_figures(std::vector<Figure>& out, const RunMetrics& m) {
  if (std::none_of(m.train.begin(), m.train.end(), [](const TrainRow& r) { return std::isfinite(r.tokens); })) return;
  LinePlot p = small_plot("training loss against tokens", kTokenAxis, "loss (nats)", false);
  PlotSeries s{"loss", train_values(m, [](const TrainRow& r) { return r.tokens / 1e6; }),
               smooth(train_values(m, [](const TrainRow& r) { return r.loss; }), smoothing_window(m.train.size())),
               {}};
  s.markers = m.train.size() <= 30;
  p.series.push_back(s);
  add_figure(out, p, "The (smoothed) training loss against the real tokens trained on: runs of other batch sizes or "
                     "sequence lengths compare here.");
  if (const std::string primary = m.primary(); !primary.empty()) {
    PlotSeries e = eval_series(m, primary, true);
    e.name = primary;
    LinePlot q = small_plot("eval " + primary + " against tokens", kTokenAxis, metric_label(primary, e.y), false);
    q.log10_y = wants_log_axis(primary, e.y);
    q.series.push_back(e);
    add_figure(out, q, "The primary evaluation metric against tokens seen.");
  }
}

std::vector<Figure> run_curves(const RunView& v) {
  const RunMetrics& m = v.metrics;
  std::vector<Figure> out;
  const std::vector<double> steps = steps_of_train(m);
  const int log_every = v.rc ? static_cast<int>(v.rc->train.log_every) : 0;
  const std::string logged = log_every > 1 ? "each point the mean of " + std::to_string(log_every) + " steps" : "";
  add_loss_figure(out, m, steps, logged);
  add_eval_figures(out, m);
  add_step_figure(out, "learning rate", "learning rate",
                  PlotSeries{"lr", steps, train_values(m, [](const TrainRow& r) { return r.lr; }), {}},
                  "The schedule's learning rate at each logged step" +
                      (v.rc ? " (" + v.rc->train.schedule + " decay after warm-up)." : "."));
  const PlotSeries speed{"tokens/s", steps, train_values(m, [](const TrainRow& r) { return r.tokens_per_s; }), {}};
  add_step_figure(out, "training speed", "tokens per second", speed,
                  "Real (unpadded) tokens trained on per second of training, evaluations excluded; median " +
                      number(median(speed.y)) + " tokens/s.");
  add_grad_norm_figure(out, v, steps, log_every);
  add_skipped_figure(out, m);
  add_token_figures(out, m);
  return out;
}

// ---- sections

std::string section(const std::string& id, const std::string& kind, const std::string& title, const std::string& body) {
  return "<section id=\"" + id + "\" data-section=\"" + kind + "\">\n<h2>" + html_escape(title) + "</h2>\n" + body +
         "</section>\n";
}

std::string note_html(const std::string& text) { return "<p class=\"note\">" + html_escape(text) + "</p>\n"; }

std::string session_value(const RunView& v, const char* key) {
  if (v.metrics.sessions.empty()) return "–";
  const nlohmann::json& s = v.metrics.sessions.back();
  if (!s.contains(key)) return "–";
  return s[key].is_string() ? s[key].get<std::string>() : s[key].dump();
}

std::vector<std::vector<std::string>> metric_rows(const RunView& v) {
  const RunMetrics& m = v.metrics;
  const EvalRow* best = m.best_eval();
  const EvalRow* last = m.evals.empty() ? nullptr : &m.evals.back();
  std::vector<std::string> names = eval_metric_names(m);
  if (m.test)
    for (const auto& [k, val] : m.test->metrics)
      if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  std::vector<std::vector<std::string>> rows;
  auto value = [](const EvalRow* e, const std::string& k) {
    if (!e) return std::string("–");
    const auto it = e->metrics.find(k);
    return it == e->metrics.end() ? std::string("–") : metric_value(it->second);
  };
  for (const std::string& k : names) {
    std::string test = "–";
    if (m.test && m.test->metrics.count(k)) test = metric_value(m.test->metrics.at(k));
    rows.push_back({k + (k == m.primary() ? " (primary)" : ""), value(best, k), value(last, k), test});
  }
  return rows;
}

std::string summary_section(const RunView& v) {
  const RunMetrics& m = v.metrics;
  const YAML::Node& c = v.config;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"run directory", v.dir});
  rows.push_back({"task", yaml_scalar(c, {"data", "task"}, "classification") + " (" +
                              yaml_scalar(c, {"data", "format"}, "–") + "), model " +
                              yaml_scalar(c, {"model", "type"}, "–")});
  if (v.run) rows.push_back({"parameters", number(static_cast<double>(v.run->model->num_parameters()))});
  rows.push_back({"machine", session_value(v, "host") + ": " + session_value(v, "cpu") + ", " +
                                 session_value(v, "cores") + " cores, " + session_value(v, "threads") +
                                 " OpenMP threads, " + session_value(v, "ranks") + " rank(s)"});
  rows.push_back({"device and precision", session_value(v, "device") + ", " +
                                              (m.sessions.empty() ? yaml_scalar(c, {"train", "precision"}, "f32")
                                                                  : session_value(v, "precision"))});
  rows.push_back({"started", m.sessions.empty() ? "–" : m.sessions.front().value("started", std::string("–")) +
                                 (m.sessions.size() > 1 ? " (resumed " + std::to_string(m.sessions.size() - 1) +
                                                              " time(s))" : "")});
  rows.push_back({"wall time", duration(m.wall_s())});
  const TrainRow* last = m.train.empty() ? nullptr : &m.train.back();
  // runs from before the "done" row end with their test row
  const bool ended = m.done || (m.test && last && m.test->step == last->step);
  rows.push_back({"steps", (last ? std::to_string(last->step) + " (" + std::to_string(last->epoch + 1) + " epoch(s))"
                                 : "–") +
                               (ended ? ", finished"
                                      : ", not finished (running, stopped or killed: headroom train --resume " +
                                            v.dir + " continues it)")});
  if (last && std::isfinite(last->tokens)) rows.push_back({"tokens seen", number(last->tokens)});
  rows.push_back({"speed (median)",
                  number(median(train_values(m, [](const TrainRow& r) { return r.tokens_per_s; }))) +
                      " tokens/s, " + fixed(median(train_values(m, [](const TrainRow& r) { return r.step_ms; })), 1) +
                      " ms a step"});
  double eval_total = 0;
  int timed = 0;
  for (const EvalRow& e : m.evals)
    if (std::isfinite(e.eval_s)) eval_total += e.eval_s, ++timed;
  rows.push_back({"evaluations", std::to_string(m.evals.size()) +
                                     (timed ? ", " + fixed(eval_total / timed, 2) + " s each on average (" +
                                                  duration(eval_total) + " in all)" : "")});
  std::string skipped = std::to_string(m.skipped.size());
  for (size_t i = 0; i < m.skipped.size() && i < 10; ++i)
    skipped += (i ? ", " : " (steps ") + std::to_string(m.skipped[i]);
  if (!m.skipped.empty()) skipped += m.skipped.size() > 10 ? ", ...)" : ")";
  rows.push_back({"skipped steps (non-finite)", skipped});
  std::string body = "<div class=\"columns\">\n<div>\n" + html_table({"", ""}, rows) + "</div>\n<div>\n";
  const EvalRow* best = m.best_eval();
  const std::string best_head = best ? "best eval (step " + std::to_string(best->step) + ")" : "best eval";
  const std::string last_head = m.evals.empty() ? "final eval" : "final eval (step " +
                                                                    std::to_string(m.evals.back().step) + ")";
  const std::string test_head = m.test ? "test (" + m.test->checkpoint + " checkpoint)" : "test";
  body += html_table({"metric", best_head, last_head, test_head}, metric_rows(v), {1, 2, 3});
  if (m.evals.empty()) body += note_html("The run logged no evaluation.");
  body += "</div>\n</div>\n";
  for (const std::string& n : v.notes) body += note_html("note: " + n);
  if (!m.note.empty()) body += note_html("note: " + m.note);
  return section(v.id + "-summary", "summary", "Summary", body);
}

std::string config_and_model_section(const RunView& v) {
  std::string body = "<div class=\"columns\">\n<div>\n<h3>model (as <code>headroom info</code> counts it)</h3>\n";
  if (v.run) {
    const EncoderModel& model = *v.run->model;
    const int64_t T = model.max_len();
    std::vector<std::vector<std::string>> rows;
    int64_t layer_params = 0;
    double attn = 0, ffn = 0;
    const std::vector<LayerStats> stats = model.layer_stats(T);
    for (size_t i = 0; i < stats.size(); ++i) {
      const LayerStats& s = stats[i];
      rows.push_back({std::to_string(i), s.type, std::to_string(s.heads), std::to_string(s.head_dim),
                      std::to_string(s.ffn_dim), number(static_cast<double>(s.parameters)),
                      fixed(s.attention_flops / 1e6, 3), fixed(s.ffn_flops / 1e6, 3)});
      layer_params += s.parameters;
      attn += s.attention_flops;
      ffn += s.ffn_flops;
    }
    const int64_t total = model.num_parameters();
    body += html_table({"layer", "type", "heads", "head_dim", "ffn_dim", "params", "attn MFLOP", "FFN MFLOP"},
                       rows, {2, 3, 4, 5, 6, 7}) +
            note_html("Layers " + number(static_cast<double>(layer_params)) + " parameters; embeddings, final norm "
                      "and head " + number(static_cast<double>(total - layer_params)) + "; total " +
                      number(static_cast<double>(total)) + ". Forward FLOPs per token at sequence length " +
                      std::to_string(T) + ": attention " + fixed(attn / 1e6, 3) + " M, FFN " + fixed(ffn / 1e6, 3) +
                      " M, total " + fixed((attn + ffn) / 1e6, 3) + " M (training is about 3x); the table's MFLOP "
                      "are per token too. Weights from "
                      "checkpoint-" + v.checkpoint + ".safetensors.");
  } else {
    body += note_html("The model could not be built here; see the notes in the summary.");
  }
  body += "</div>\n<div>\n<h3>config.yaml (resolved, overrides included)</h3>\n<pre class=\"config\">" +
          html_escape(v.config_text) + "</pre>\n</div>\n</div>\n";
  return section(v.id + "-config", "config", "Config and model", body);
}

bool has_gates(const RunMetrics& m) {
  for (const EvalRow& e : m.evals)
    for (const auto& layer : e.gate_open)
      if (!layer.empty()) return true;
  return false;
}

std::string gates_section(const RunView& v) {
  const RunMetrics& m = v.metrics;
  TimeHeatmap t;
  t.title = "P(gate open) of each head over training";
  t.x_label = kStepAxis;
  std::vector<const EvalRow*> rows;
  for (const EvalRow& e : m.evals)
    if (!e.gate_open.empty()) rows.push_back(&e);
  size_t layers = 0;
  for (const EvalRow* e : rows) layers = std::max(layers, e->gate_open.size());
  for (size_t l = 0; l < layers; ++l) {
    size_t heads = 0;
    for (const EvalRow* e : rows)
      if (l < e->gate_open.size()) heads = std::max(heads, e->gate_open[l].size());
    if (heads == 0) continue;  // a layer without gates
    t.group_labels.push_back("layer " + std::to_string(l));
    t.row_labels.emplace_back();
    t.values.emplace_back();
    for (size_t h = 0; h < heads; ++h) {
      t.row_labels.back().push_back(std::string("h").append(std::to_string(h)));  // GCC 12 warns on "h" + string
      std::vector<float> over_time;
      for (const EvalRow* e : rows)
        over_time.push_back(l < e->gate_open.size() && h < e->gate_open[l].size() ? e->gate_open[l][h] : NAN);
      t.values.back().push_back(over_time);
    }
  }
  for (const EvalRow* e : rows) t.x.push_back(static_cast<double>(e->step));
  // the heatmap at its own width; the line plot beside the kept heads below
  std::string body = figure_html({time_heatmap_png(t), t.title,
                                  "Each row is one head's gate, each column one evaluation: yellow is open, purple "
                                  "closed (a head whose gate closes is what 'headroom prune' removes)."});
  std::vector<Figure> figures;
  LinePlot open = small_plot("expected open heads", kStepAxis, "sum of P(gate open)", false);
  PlotSeries s{"open", {}, {}, {}};
  for (const EvalRow* e : rows) {
    double sum = 0;
    for (const auto& layer : e->gate_open)
      for (float p : layer) sum += p;
    s.x.push_back(static_cast<double>(e->step));
    s.y.push_back(sum);
  }
  open.series.push_back(s);
  add_figure(figures, open, "The expected number of open heads of the whole model, the quantity the L0 penalty "
                            "pushes down.");
  body += "<div class=\"columns\">\n<div>" + figures_html(figures) + "</div>\n<div>\n";
  if (v.run) {
    const EncoderModel& model = *v.run->model;
    const PrunePlan plan = plan_pruning(model, PruneOptions{}, nullptr);
    int64_t kept = 0, all = 0;
    for (size_t l = 0; l < plan.keep.size(); ++l)
      kept += static_cast<int64_t>(plan.keep[l].size()), all += plan.heads[l];
    const ValueHeatmap final_heads =
        heads_heatmap(gate_open_probabilities(model), plan, "P(gate open); struck: pruned");
    body += "<h3>kept heads at checkpoint-" + v.checkpoint + "</h3>\n" +
            figure_html({value_heatmap_png(final_heads), "kept heads",
                         "The gates keep " + std::to_string(kept) + " of " + std::to_string(all) +
                             " heads; struck-out cells are the closed heads 'headroom prune --by gates' removes."});
  } else {
    body += note_html("The checkpoint could not be loaded, so the heads kept at the end are not shown.");
  }
  body += "</div>\n</div>\n";
  return section(v.id + "-gates", "gates", "Gates", body);
}

std::string errors_section(const RunView& v, const ReportArgs& a) {
  std::string body;
  if (!v.breakdown_note.empty()) body += note_html(v.breakdown_note);
  for (const BreakdownTable& t : v.breakdown) {
    std::vector<size_t> numeric;  // columns of numbers (counts, scores, percentages) are right-aligned
    for (size_t c = 0; c < t.header.size(); ++c)
      if (!t.rows.empty() && std::all_of(t.rows.begin(), t.rows.end(), [&](const auto& row) {
            return c < row.size() && !row[c].empty() && row[c].find_first_not_of("0123456789.-%") == std::string::npos;
          }))
        numeric.push_back(c);
    body += "<div class=\"breakdown\"><h3>" + html_escape(t.title) + "</h3>\n" + note_html(t.note) +
            html_table(t.header, t.rows, numeric) + "</div>\n";
  }
  if (!v.breakdown.empty())
    body = "<p class=\"note\">" + html_escape("checkpoint-" + v.checkpoint + " on the " + a.split + " split") +
           "</p>\n<div class=\"columns\">\n" + body + "</div>\n";
  return section(v.id + "-errors", "errors", "Where the model goes wrong", body);
}

std::string attention_section(RunView& v, const ReportArgs& a) {
  std::string body;
  if (!v.run) {
    body = note_html("The model could not be loaded, so there are no attention maps.");
    return section(v.id + "-attention", "attention", "Attention", body);
  }
  std::vector<std::string> texts = a.texts;
  if (texts.empty()) {
    const nlohmann::json request = v.data_loaded ? v.run->task->example_request(a.split) : nlohmann::json();
    if (request.is_object())
      for (const std::string& f : v.run->task->input_fields())
        if (request.contains(f) && request[f].is_string()) texts.push_back(request[f].get<std::string>());
  }
  if (texts.empty()) {
    body = note_html("No example text: the data is not loaded here (or the task keeps no texts); give one with "
                     "--text.");
    return section(v.id + "-attention", "attention", "Attention", body);
  }
  std::string shown;
  for (const std::string& t : texts) shown += (shown.empty() ? "" : " | ") + t;
  try {
    HeatmapGrid grid = attention_grid(*v.run, texts, "attention weights, query rows x key columns");
    grid.max_side = kAttentionMaxSide;
    body = figure_html({heatmap_grid_png(grid), "attention maps",
                        "Every layer (rows) and head (columns) of checkpoint-" + v.checkpoint + " on: \u201c" +
                            shown + "\u201d" +
                            (a.texts.empty() ? " (the " + a.split + " split's first row)" : "") +
                            ". Grey panels are heads whose gate is closed or that were pruned."});
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    body = note_html(std::string("attention maps could not be drawn: ") + e.what());
  }
  return section(v.id + "-attention", "attention", "Attention", body);
}

std::string run_sections(RunView& v, const ReportArgs& a) {
  std::string s = summary_section(v);
  s += section(v.id + "-curves", "curves", "Training curves", figures_html(run_curves(v)));
  if (has_gates(v.metrics)) s += gates_section(v);
  s += errors_section(v, a);
  s += attention_section(v, a);
  s += config_and_model_section(v);
  return s;
}

// ---- comparison of several runs

void flatten(const YAML::Node& n, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (n.IsMap()) {
    if (n.size() == 0) out[prefix] = "{}";
    for (const auto& kv : n) flatten(kv.second, prefix.empty() ? kv.first.as<std::string>() : prefix + "." +
                                                                      kv.first.as<std::string>(), out);
  } else if (n.IsSequence()) {
    if (n.size() == 0) out[prefix] = "[]";
    for (size_t i = 0; i < n.size(); ++i) flatten(n[i], prefix + "." + std::to_string(i), out);
  } else if (n.IsScalar()) {
    out[prefix] = n.as<std::string>();
  } else {
    out[prefix] = "null";
  }
}

std::string config_diff_section(const std::vector<RunView>& views) {
  std::vector<std::map<std::string, std::string>> flat(views.size());
  std::set<std::string> keys;
  for (size_t i = 0; i < views.size(); ++i) {
    flatten(views[i].config, "", flat[i]);
    for (const auto& [k, val] : flat[i]) keys.insert(k);
  }
  std::vector<std::string> header = {"key"};
  for (const RunView& v : views) header.push_back(v.label);
  std::vector<std::vector<std::string>> rows;
  for (const std::string& k : keys) {
    std::vector<std::string> row = {k};
    std::set<std::string> distinct;
    for (const auto& f : flat) {
      const auto it = f.find(k);
      row.push_back(it == f.end() ? "(not set)" : it->second);
      distinct.insert(row.back());
    }
    if (distinct.size() > 1) rows.push_back(row);
  }
  const std::string body = rows.empty() ? note_html("The runs' configs are identical.")
                                        : note_html("Only the keys whose values differ between the runs.") +
                                              html_table(header, rows);
  return section("config-diff", "config-diff", "Config differences", body);
}

std::string results_section(const std::vector<RunView>& views, const ReportArgs& a) {
  std::vector<std::string> metrics;
  for (const RunView& v : views)
    for (const std::string& n : eval_metric_names(v.metrics))
      if (std::find(metrics.begin(), metrics.end(), n) == metrics.end()) metrics.push_back(n);
  std::vector<std::string> header = {"run", "parameters", "steps", "tokens seen", "wall time", "tokens/s"};
  const std::string primary = views.front().metrics.primary();
  if (!primary.empty()) header.push_back("best " + primary + " (step)");
  for (const std::string& n : metrics) header.push_back("final " + n);
  std::set<std::string> test_metrics;
  for (const RunView& v : views)
    if (v.metrics.test)
      for (const auto& [k, val] : v.metrics.test->metrics) test_metrics.insert(k);
  for (const std::string& n : test_metrics) header.push_back("test " + n);
  const bool links = !a.per_run_sections && a.links.size() == views.size();
  if (links) header.push_back("report");
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < views.size(); ++i) {
    const RunView& v = views[i];
    const RunMetrics& m = v.metrics;
    std::vector<std::string> row = {v.label, v.run ? number(static_cast<double>(v.run->model->num_parameters())) : "–",
                                    m.train.empty() ? "–" : std::to_string(m.train.back().step),
                                    m.train.empty() ? "–" : number(m.train.back().tokens), duration(m.wall_s()),
                                    number(median(train_values(m, [](const TrainRow& r) { return r.tokens_per_s; })))};
    if (!primary.empty()) {
      std::string best = "–";
      const EvalRow* b = m.best_eval();
      if (b && b->metrics.count(primary))
        best = metric_value(b->metrics.at(primary)) + " (" + std::to_string(b->step) + ")";
      row.push_back(best);
    }
    for (const std::string& n : metrics) {
      const auto* last = m.evals.empty() ? nullptr : &m.evals.back();
      row.push_back(last && last->metrics.count(n) ? metric_value(last->metrics.at(n)) : "–");
    }
    for (const std::string& n : test_metrics)
      row.push_back(m.test && m.test->metrics.count(n) ? metric_value(m.test->metrics.at(n)) : "–");
    if (links) row.push_back(a.links[i]);
    rows.push_back(row);
  }
  std::vector<size_t> numeric;
  for (size_t c = 1; c < header.size() - (links ? 1 : 0); ++c) numeric.push_back(c);
  std::string table = html_table(header, rows, numeric);
  if (links)  // the last cell of each row becomes a link to the run's own page
    for (const std::string& link : a.links) {
      const std::string cell = "<td>" + html_escape(link) + "</td>";
      const size_t at = table.find(cell);
      if (at != std::string::npos)
        table.replace(at, cell.size(), "<td><a href=\"" + html_escape(link) + "\">report</a></td>");
    }
  return section("results", "results", "Results", table);
}

std::vector<Figure> comparison_curves(const std::vector<RunView>& views) {
  std::vector<Figure> out;
  auto overlay = [&](const std::string& title, const std::string& x_label, const std::string& y_label,
                     const std::function<PlotSeries(const RunView&)>& series, const std::string& caption,
                     bool log_y = false) {
    LinePlot p = small_plot(title, x_label, y_label, true);
    p.log10_y = log_y;
    size_t most = 0;
    for (const RunView& v : views) {
      PlotSeries s = series(v);
      s.name = v.label;
      most = std::max(most, s.x.size());
      p.series.push_back(s);
    }
    for (PlotSeries& s : p.series) s.markers = most <= 30;  // all runs alike, as the legend shows them
    add_figure(out, p, caption);
  };
  auto smoothed_loss = [](const RunView& v, bool by_tokens) {
    const RunMetrics& m = v.metrics;
    std::vector<double> x = by_tokens ? train_values(m, [](const TrainRow& r) { return r.tokens / 1e6; })
                                      : steps_of_train(m);
    return PlotSeries{"", x, smooth(train_values(m, [](const TrainRow& r) { return r.loss; }),
                                    smoothing_window(m.train.size())), {}};
  };
  overlay("training loss", kStepAxis, "loss (nats)", [&](const RunView& v) { return smoothed_loss(v, false); },
          "Training loss of each run (smoothed where a run logged many points).");
  std::vector<std::string> metrics;
  for (const RunView& v : views)
    for (const std::string& n : eval_metric_names(v.metrics))
      if (std::find(metrics.begin(), metrics.end(), n) == metrics.end()) metrics.push_back(n);
  for (const std::string& name : metrics) {
    std::vector<double> all;
    for (const RunView& v : views) {
      const PlotSeries s = eval_series(v.metrics, name, false);
      all.insert(all.end(), s.y.begin(), s.y.end());
    }
    if (constant_series(all)) continue;
    overlay("eval " + name, kStepAxis, metric_label(name, all),
            [&](const RunView& v) { return eval_series(v.metrics, name, false); },
            "Evaluation " + name + " of each run.", wants_log_axis(name, all));
  }
  overlay("learning rate", kStepAxis, "learning rate",
          [](const RunView& v) {
            return PlotSeries{"", steps_of_train(v.metrics),
                              train_values(v.metrics, [](const TrainRow& r) { return r.lr; }), {}};
          },
          "The learning-rate schedules.");
  overlay("training speed", kStepAxis, "tokens per second",
          [](const RunView& v) {
            return PlotSeries{"", steps_of_train(v.metrics),
                              train_values(v.metrics, [](const TrainRow& r) { return r.tokens_per_s; }), {}};
          },
          "Tokens trained on per second (runs on another machine or under other load do not compare).");
  overlay("gradient norm", kStepAxis, "global L2 norm before clipping",
          [](const RunView& v) {
            return PlotSeries{"", steps_of_train(v.metrics),
                              train_values(v.metrics, [](const TrainRow& r) { return r.grad_norm; }), {}};
          },
          "The mean gradient norm before clipping over each logged window.");
  overlay("training loss against tokens", kTokenAxis, "loss (nats)",
          [&](const RunView& v) { return smoothed_loss(v, true); },
          "Training loss against real tokens seen: runs with other batch sizes or sequence lengths line up here.");
  return out;
}

// ---- the page

const char* kStyle = R"css(
:root { --ink: #222; --faint: #666; --line: #ddd; --accent: #1f77b4; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); background: #fafafa; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 14px 24px 8px; }
header h1 { margin: 0; font-size: 22px; }
header p { margin: 4px 0; color: var(--faint); }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; font-size: 14px; }
main { max-width: 1320px; margin: 0 auto; padding: 8px 24px 40px; }
article { margin-top: 18px; }
article > h2.run { font-size: 20px; margin: 24px 0 4px; border-bottom: 2px solid var(--accent); }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 16px 14px;
          margin: 14px 0; }
section h2 { font-size: 18px; margin: 4px 0 10px; }
section h3 { font-size: 15px; margin: 8px 0 6px; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 14px; }
figure { margin: 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
.figures figure img { width: 100%; }
figcaption { color: var(--faint); font-size: 13px; margin-top: 4px; }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 18px; align-items: start; }
.columns > div { min-width: 0; overflow-x: auto; }
table { border-collapse: collapse; font-size: 13.5px; width: 100%; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; }
pre { background: #f6f6f6; border: 1px solid #eee; padding: 8px; font-size: 12.5px; overflow: auto; margin: 0; }
pre.config { max-height: 460px; }
.note { color: var(--faint); font-size: 13px; margin: 6px 0; }
code, q { font-size: 13px; }
)css";

// The only script: a figure that does not decode says so on the console, which the browser check reads.
const char* kImageCheck = R"js(
addEventListener('load', function () {
  for (const img of document.images)
    if (!img.complete || img.naturalWidth === 0) console.error('image does not decode: ' + img.alt);
});
)js";

std::string now_text() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::localtime(&t));
  return buf;
}

}  // namespace

std::string report_path(const ReportArgs& args) {
  if (!args.out.empty()) return args.out;
  return args.runs.size() == 1 ? args.runs[0] + "/report.html" : "report.html";
}

std::string render_report(const ReportArgs& given) {
  if (given.runs.empty()) throw UsageError("report: give at least one run directory");
  ReportArgs args = given;
  if (args.runs.size() > 1 && !args.per_run_sections) args.evaluate = false;  // nothing would show the breakdown
  std::vector<RunView> views;
  for (size_t i = 0; i < args.runs.size(); ++i) {
    if (!args.quiet) std::cerr << "report: reading " << args.runs[i] << "\n";
    views.push_back(load_view(args.runs[i], args, i));
  }
  label_runs(views);
  const bool several = views.size() > 1;
  std::string title = several ? "headroom report: " + std::to_string(views.size()) + " runs" : "headroom report: " +
                                                                                                  views[0].label;
  std::string nav;
  std::string main;
  if (several) {
    nav += "<a href=\"#comparison\">comparison</a><a href=\"#config-diff\">config differences</a>"
           "<a href=\"#results\">results</a>";
    main += section("comparison", "comparison", "Runs compared", figures_html(comparison_curves(views)));
    main += config_diff_section(views);
    main += results_section(views, args);
  }
  if (!several || args.per_run_sections) {
    for (RunView& v : views) {
      if (several) nav += "<a href=\"#" + v.id + "\">" + html_escape(v.label) + "</a>";
      std::string sections = run_sections(v, args);
      if (!several) {
        for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
                 {"summary", "summary"}, {"curves", "curves"}, {"gates", "gates"}, {"errors", "errors"},
                 {"attention", "attention"}, {"config", "config and model"}})
          if (sections.find("id=\"" + v.id + "-" + kind + "\"") != std::string::npos)
            nav += "<a href=\"#" + v.id + "-" + kind + "\">" + name + "</a>";
      }
      main += "<article id=\"" + v.id + "\" data-run=\"" + html_escape(v.dir) + "\">\n" +
              (several ? "<h2 class=\"run\">" + html_escape(v.label) + "</h2>\n" : "") + sections + "</article>\n";
    }
  }
  std::string runs_line;
  for (const RunView& v : views) runs_line += (runs_line.empty() ? "" : ", ") + v.dir;
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
         "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<header>\n<h1>" +
         html_escape(title) + "</h1>\n<p>" + html_escape(runs_line) + " &middot; written " + now_text() +
         " by <code>headroom report</code></p>\n<nav>" + nav + "</nav>\n</header>\n<main>\n" + main +
         "</main>\n<script>" + kImageCheck + "</script>\n</body>\n</html>\n";
}

void write_run_reports(const std::string& tool, const std::string& dir, const std::vector<std::string>& runs) {
  std::vector<std::string> links;
  for (const std::string& run : runs) {
    const std::string page = run + "/report.html";
    if (!fs::exists(page) || fs::last_write_time(page) < fs::last_write_time(run + "/metrics.jsonl")) {
      std::cout << tool << ": writing " << page << "\n" << std::flush;
      ReportArgs one;
      one.runs = {run};
      one.quiet = true;
      report_command(one);
    }
    links.push_back(fs::relative(page, dir).generic_string());
  }
  ReportArgs all;
  all.runs = runs;
  all.out = dir + "/report.html";
  all.per_run_sections = false;
  all.links = links;
  all.quiet = true;
  report_command(all);
  std::cout << tool << ": wrote " << all.out << " (the runs compared; each run's own page is RUN/report.html)\n";
}

std::string report_link(const std::string& dir, const std::string& run, const std::string& label) {
  const std::string page = run + "/report.html";
  if (!fs::exists(page)) return "";
  return "[" + label + "](" + fs::relative(page, dir).generic_string() + ")";
}

int report_command(const ReportArgs& args) {
  const std::string out = report_path(args);
  const std::string page = render_report(args);
  write_text_atomically(out, page);
  if (!args.quiet)
    std::cout << "wrote " << out << " (" << (page.size() + 512) / 1024 << " KiB; open it in a browser)\n";
  return 0;
}

}  // namespace hr
