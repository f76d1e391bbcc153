#include "train/tools/run_metrics.h"

#include <algorithm>
#include <cmath>

#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "train/data/json_line.h"

namespace hr {

namespace {

double number_or_nan(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : NAN;
}

// The numbers of an object ({"accuracy": 0.9, ...}); a null (a NaN metric, as nlohmann writes it) is NaN.
std::map<std::string, double> metric_map(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(where + ": the metrics are not an object");
  std::map<std::string, double> m;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number()) m[k] = v.get<double>();
    else if (v.is_null()) m[k] = NAN;
    else throw UsageError(where + ": metric '" + k + "' is not a number");
  }
  return m;
}

}  // namespace

RunMetrics read_run_metrics(const std::string& path) {
  const std::string text = read_file_bytes(path);
  RunMetrics m;
  m.path = path;
  size_t at = 0;
  int64_t line_no = 0;
  while (at < text.size()) {
    ++line_no;
    const size_t end = text.find('\n', at);
    const bool torn = end == std::string::npos;
    const std::string line = text.substr(at, torn ? std::string::npos : end - at);
    at = torn ? text.size() : end + 1;
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    const nlohmann::json j = parse_json_line(line).value;
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) {
      if (torn) {
        m.note = where + ": a torn last line (the run was killed while writing it) is ignored";
        break;
      }
      throw UsageError(where + ": not a metrics row (a JSON object with an integer \"step\")");
    }
    const int64_t step = j["step"].get<int64_t>();
    if (j.contains("session")) {
      m.sessions.push_back(j["session"]);
      m.sessions.back()["step"] = step;
      m.session_s.push_back(NAN);
      continue;
    }
    if (const double e = number_or_nan(j, "elapsed_s"); std::isfinite(e) && !m.session_s.empty())
      m.session_s.back() = std::isfinite(m.session_s.back()) ? std::max(m.session_s.back(), e) : e;
    if (j.contains("loss")) {
      if (!j["loss"].is_number() && !j["loss"].is_null()) throw UsageError(where + ": \"loss\" is not a number");
      TrainRow r;
      r.step = step;
      r.epoch = j.value("epoch", int64_t{0});
      r.loss = number_or_nan(j, "loss");
      r.lr = number_or_nan(j, "lr");
      r.tokens_per_s = number_or_nan(j, "tokens_per_s");
      r.step_ms = number_or_nan(j, "step_ms");
      r.tokens = number_or_nan(j, "tokens");
      r.grad_norm = number_or_nan(j, "grad_norm");
      r.grad_norm_max = number_or_nan(j, "grad_norm_max");
      r.elapsed_s = number_or_nan(j, "elapsed_s");
      m.train.push_back(r);
    } else if (j.contains("eval")) {
      EvalRow r;
      r.step = step;
      r.metrics = metric_map(j["eval"], where);
      if (j.contains("primary") && j["primary"].is_string()) r.primary = j["primary"].get<std::string>();
      r.eval_s = number_or_nan(j, "eval_s");
      if (j.contains("gates") && j["gates"].is_object() && j["gates"].contains("open_probability")) {
        try {
          r.gate_open = j["gates"]["open_probability"].get<std::vector<std::vector<float>>>();
        } catch (const nlohmann::json::exception&) {
          throw UsageError(where + ": gates.open_probability is not a list of lists of numbers");
        }
      }
      m.evals.push_back(std::move(r));
    } else if (j.contains("skipped")) {
      m.skipped.push_back(step);
    } else if (j.contains("test")) {
      m.test = TestRow{step, metric_map(j["test"], where), j.value("checkpoint", std::string())};
    } else if (j.contains("done")) {
      m.done = true;
    }
    // other rows (written by later versions) carry nothing a report draws
  }
  return m;
}

std::string RunMetrics::primary() const {
  if (evals.empty()) return "";
  for (auto it = evals.rbegin(); it != evals.rend(); ++it)
    if (!it->primary.empty()) return it->primary;
  for (const char* guess : {"accuracy", "f1", "masked_accuracy"})
    if (evals.back().metrics.count(guess)) return guess;
  return evals.back().metrics.empty() ? "" : evals.back().metrics.begin()->first;
}

const EvalRow* RunMetrics::best_eval() const {
  const std::string key = primary();
  const EvalRow* best = nullptr;
  for (const EvalRow& e : evals) {
    const auto it = e.metrics.find(key);
    if (it == e.metrics.end() || !std::isfinite(it->second)) continue;
    if (!best || it->second > best->metrics.at(key)) best = &e;
  }
  return best;
}

double RunMetrics::wall_s() const {
  double total = 0;
  bool any = false;
  for (double s : session_s)
    if (std::isfinite(s)) total += s, any = true;
  return any ? total : NAN;
}

double RunMetrics::tokens_at(int64_t step) const {
  double prev_step = 0, prev_tokens = 0;
  bool any = false;
  for (const TrainRow& r : train) {
    if (!std::isfinite(r.tokens)) continue;
    any = true;
    if (r.step >= step) {
      const double span = static_cast<double>(r.step) - prev_step;
      return span > 0 ? prev_tokens + (r.tokens - prev_tokens) * (static_cast<double>(step) - prev_step) / span
                      : r.tokens;
    }
    prev_step = static_cast<double>(r.step);
    prev_tokens = r.tokens;
  }
  return any ? prev_tokens : NAN;
}

}  // namespace hr
