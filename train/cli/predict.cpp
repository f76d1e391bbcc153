// headroom predict --run RUN: label texts (classification) or answer questions (span QA).
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "train/cli/command.h"
#include "train/run/trainer.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/qa_task.h"

namespace hr {

namespace {

struct PredictArgs {
  std::string run_dir, which = "best", question, context;
  std::vector<std::string> texts;
  int top = 3;
};

int predict_command(const std::string& dir, const std::string& which, std::vector<std::string> texts, int top) {
  LoadedRun run = load_run(dir, which);
  auto* cls = dynamic_cast<ClassificationTask*>(run.task.get());
  HR_CHECK(cls, "predict: this run is not a classification run");
  if (texts.empty()) {  // JSONL on stdin: {"text": ...} a line (a line that is not a JSON object is the text itself)
    for (std::string line; std::getline(std::cin, line);) {
      if (line.empty()) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) {
        HR_CHECK(j.contains("text") && j["text"].is_string(), "predict: stdin line " + std::to_string(texts.size() + 1) +
                                                                  " is a JSON object without a \"text\" string");
        texts.push_back(j["text"].get<std::string>());
      } else {
        texts.push_back(line);
      }
    }
  }
  const auto probs = cls->predict(*run.model, *run.tokenizer, run.model->max_len(), texts, run.config.train.device);
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> order(probs[i].size());
    for (size_t c = 0; c < order.size(); ++c) order[c] = static_cast<int32_t>(c);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[i][a] > probs[i][b]; });
    nlohmann::json top_k = nlohmann::json::array();
    for (int k = 0; k < top && k < static_cast<int>(order.size()); ++k)
      top_k.push_back({{"label", cls->labels().name(order[k])}, {"probability", probs[i][order[k]]}});
    std::cout << nlohmann::json{{"text", texts[i]}, {"label", top_k[0]["label"]}, {"top", top_k}}.dump() << "\n";
  }
  return 0;
}

// Answers --question/--context, or JSONL lines {"question": ..., "context": ...} on stdin: one JSON line each.
int qa_predict_command(const std::string& dir, const std::string& which, const std::string& question,
                       const std::string& context) {
  LoadedRun run = load_run(dir, which, /*load_data=*/false);
  std::vector<std::pair<std::string, std::string>> inputs;
  if (!question.empty() || !context.empty()) {
    inputs.emplace_back(question, context);
  } else {
    int64_t line_no = 0;
    for (std::string line; std::getline(std::cin, line);) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      HR_CHECK(j.is_object() && j.contains("question") && j["question"].is_string() && j.contains("context") &&
                   j["context"].is_string(),
               "stdin line " + std::to_string(line_no) + ": expected {\"question\": \"...\", \"context\": \"...\"}");
      inputs.emplace_back(j["question"], j["context"]);
    }
  }
  const DataOptions& d = run.config.data;
  const QaWindowing w{run.model->max_len(), d.max_query_len, d.doc_stride};
  const auto answers = predict_answers(*run.model, *run.tokenizer, w, d.max_answer_len, inputs,
                                       run.config.train.device, run.config.train.batch_size);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const QaPrediction& a = answers[i];
    nlohmann::json out = {{"question", inputs[i].first}, {"answer", a.text}};
    out["score"] = a.found ? nlohmann::json(a.score) : nlohmann::json(nullptr);
    out["offsets"] = a.found ? nlohmann::json::array({a.begin, a.end}) : nlohmann::json(nullptr);
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand(
      "predict", "label texts (--text, or one a line on stdin) or answer questions (--question and --context, or "
                 "JSONL {\"question\", \"context\"} lines on stdin) with a trained run");
  add_run_options(cmd, a->run_dir, a->which);
  cmd->add_option("--text", a->texts, "a text to label (repeatable)");
  cmd->add_option("--question", a->question, "QA runs: the question");
  cmd->add_option("--context", a->context, "QA runs: the text holding the answer");
  cmd->add_option("--top", a->top, "how many labels to show")->check(CLI::PositiveNumber);
  return {cmd, [a] {
            const bool qa = read_run_config(Config::load_file(a->run_dir + "/config.yaml"), "").data.task == "squad";
            if (qa) return qa_predict_command(a->run_dir, a->which, a->question, a->context);
            return predict_command(a->run_dir, a->which, a->texts, a->top);
          }};
}

}  // namespace hr
