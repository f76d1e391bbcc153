// headroom predict --run RUN: one JSON answer a line for requests given as flags or as JSONL on stdin. The task says
// which text fields a request has ({"text"} for classification, {"question", "context"} for span QA).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "train/cli/command.h"
#include "train/run/trainer.h"

namespace hr {

namespace {

struct PredictArgs {
  std::string run_dir, which = "best", question, context;
  std::vector<std::string> texts;
  int top = 3;
};

int predict_command(const PredictArgs& a) {
  LoadedRun run = load_run(a.run_dir, a.which, /*load_data=*/false);
  const std::vector<std::string> fields = run.task->input_fields();
  auto field_list = [&] {
    std::string s;
    for (const auto& f : fields) s += (s.empty() ? "" : ", ") + std::string("\"") + f + "\"";
    return s;
  };
  std::vector<nlohmann::json> requests;
  const bool flags = !a.texts.empty() || !a.question.empty() || !a.context.empty();
  if (flags) {
    if (fields == std::vector<std::string>{"text"}) {
      HR_CHECK(a.question.empty() && a.context.empty() && !a.texts.empty(),
               "predict: this run labels texts: give --text (not --question/--context)");
      for (const auto& t : a.texts) requests.push_back({{"text", t}});
    } else {
      HR_CHECK(a.texts.empty() && !a.question.empty() && !a.context.empty(),
               "predict: this run answers questions: give --question and --context (not --text)");
      requests.push_back({{"question", a.question}, {"context", a.context}});
    }
  } else {  // JSONL on stdin
    int64_t line_no = 0;
    for (std::string line; std::getline(std::cin, line);) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      bool ok = j.is_object();
      for (const auto& f : fields) ok = ok && j.contains(f) && j[f].is_string();
      HR_CHECK(ok, "stdin line " + std::to_string(line_no) + ": expected a JSON object with the string fields " +
                       field_list());
      requests.push_back(j);
    }
  }
  const auto answers = run.task->predict(*run.model, requests, run.config.train.device,
                                         run.config.train.batch_size, a.top);
  for (const auto& out : answers)
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
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
  cmd->add_option("--top", a->top, "how many labels to show")->check(CLI::PositiveNumber);
  return {cmd, [a] { return predict_command(*a); }};
}

}  // namespace hr
