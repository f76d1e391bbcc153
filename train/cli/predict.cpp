// headroom predict --run RUN: one JSON answer a line for requests given as flags or as JSONL on stdin. The task says
// which text fields a request has ({"text"} for classification, {"question", "context"} for span QA, the two field
// names of data.text_field for sentence-pair classification, which reads JSONL only).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "train/cli/command.h"
#include "kernels/base/error.h"
#include "train/data/json_line.h"
#include "train/run/trainer.h"

namespace hr {

namespace {

struct PredictArgs {
  std::string run_dir, which = "best", question, context;
  std::vector<std::string> texts;
  std::vector<std::string> overrides;  // --precision
  int top = 3;
};

// Requests from the flags, which must fit the run's task.
std::vector<nlohmann::json> requests_from_flags(const PredictArgs& a, const std::vector<std::string>& fields) {
  std::vector<nlohmann::json> requests;
  if (fields == std::vector<std::string>{"text"}) {
    if (!a.question.empty() || !a.context.empty() || a.texts.empty())
      throw UsageError("predict: this run labels texts: give --text (not --question/--context)");
    for (const auto& t : a.texts) requests.push_back({{"text", t}});
  } else if (fields == std::vector<std::string>{"question", "context"}) {
    if (!a.texts.empty() || a.question.empty() || a.context.empty())
      throw UsageError("predict: this run answers questions: give --question and --context (not --text)");
    requests.push_back({{"question", a.question}, {"context", a.context}});
  } else {
    throw UsageError("predict: this run's task takes JSONL requests on stdin");
  }
  return requests;
}

// One request a line; a line that is not a JSON object with the task's string fields (or not UTF-8) gets an error
// object in its place on stdout and a message on stderr, and the lines after it are still answered.
int predict_command(const PredictArgs& a) {
  LoadedRun run = load_run(a.run_dir, a.which, /*load_data=*/false, a.overrides);
  const std::vector<std::string> fields = run.task->input_fields();
  const Device d = run.config.train.device;
  if (!a.texts.empty() || !a.question.empty() || !a.context.empty()) {
    for (const auto& out : run.task->predict(*run.model, requests_from_flags(a, fields), d,
                                             run.config.train.batch_size, a.top))
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::string wanted;
  for (const auto& f : fields) wanted += (wanted.empty() ? "\"" : ", \"") + f + "\"";
  // Lines are answered in batches of the run's batch size, in input order: an error object holds its line's place.
  std::vector<nlohmann::json> pending;  // requests, and error objects (which have "error")
  int64_t line_no = 0, answered = 0, bad = 0, batched = 0;
  auto flush = [&] {
    std::vector<nlohmann::json> requests;
    for (const auto& p : pending)
      if (!p.contains("error")) requests.push_back(p);
    auto answers = run.task->predict(*run.model, requests, d, run.config.train.batch_size, a.top);
    size_t next = 0;
    for (const auto& p : pending)
      std::cout << (p.contains("error") ? p : answers.at(next++)).dump(-1, ' ', false,
                                                                       nlohmann::json::error_handler_t::replace)
                << "\n";
    std::cout.flush();
    pending.clear();
    batched = 0;
  };
  for (std::string line; std::getline(std::cin, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const JsonLine parsed = parse_json_line(line);  // invalid UTF-8 and too deep a nesting included
    const nlohmann::json& j = parsed.value;
    bool ok = j.is_object();
    for (const auto& f : fields) ok = ok && j.contains(f) && j[f].is_string();
    if (!ok) {
      const std::string why = "stdin line " + std::to_string(line_no) + ": " +
                              parsed.why_not("expected a JSON object with the string fields " + wanted);
      std::cerr << "error: " << why << "\n";
      pending.push_back({{"line", line_no}, {"error", why}});
      ++bad;
      continue;
    }
    pending.push_back(j);
    ++answered;
    if (++batched == run.config.train.batch_size) flush();
  }
  flush();
  if (answered + bad == 0) {
    const std::string flags = fields == std::vector<std::string>{"text"}                ? "--text, or "
                              : fields == std::vector<std::string>{"question", "context"} ? "--question and --context, or "
                                                                                          : "";  // e.g. a sentence pair
    throw UsageError("predict: no input: give " + flags + "JSONL lines {" + wanted + "} on stdin");
  }
  return bad > 0 ? 1 : 0;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand(
      "predict", "label texts (--text, or JSONL {\"text\"} lines on stdin) or answer questions (--question and "
                 "--context, or JSONL {\"question\", \"context\"} lines on stdin) with a trained run");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--text", a->texts, "a text to label (repeatable)");
  cmd->add_option("--question", a->question, "QA runs: the question");
  cmd->add_option("--context", a->context, "QA runs: the text holding the answer");
  cmd->add_option("--top", a->top, "how many labels to show")->check(positive_number());
  add_precision_option(cmd, a->overrides);
  return {cmd, [a] { return predict_command(*a); }};
}

}  // namespace hr
