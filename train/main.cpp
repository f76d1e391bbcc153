// headroom: the command line. Subcommands train, eval, predict, info; config errors exit with code 2.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/error.h"
#include "train/classification_task.h"
#include "train/info.h"
#include "train/qa_task.h"
#include "train/trainer.h"

using namespace hr;

namespace {

int info_command(const std::string& config, const std::vector<std::string>& overrides, int64_t seq_len) {
  RunConfig rc = load_run_config(config, overrides);
  ModelDims dims;
  dims.vocab_size = rc.tokenizer.vocab.empty() ? rc.tokenizer.vocab_size : Vocab::load(rc.tokenizer.vocab).size();
  dims.num_labels = 1;
  if (rc.data.task == "classification") {
    ClassificationTask task(rc.data, std::nullopt);
    dims.num_labels = task.labels().size();
  }
  auto model = build_model(rc.root.child("model"), dims);
  std::cout << config << ": vocabulary " << dims.vocab_size << ", " << dims.num_labels << " labels\n";
  print_model_info(std::cout, *model, seq_len > 0 ? seq_len : model->max_len());
  return 0;
}

int eval_command(const std::string& dir, const std::string& which, const std::string& split) {
  LoadedRun run = load_run(dir, which);
  HR_CHECK(run.task->has_split(split), "the run's data has no '" + split + "' split");
  EvalResult r = run.task->evaluate(*run.model, split, run.config.train.device, run.config.train.batch_size * 2);
  nlohmann::json j = r.metrics;
  std::cout << nlohmann::json{{"run", dir}, {"checkpoint", which}, {"split", split}, {"metrics", j}}.dump(2) << "\n";
  return 0;
}

int predict_command(const std::string& dir, const std::string& which, std::vector<std::string> texts, int top) {
  LoadedRun run = load_run(dir, which);
  auto* cls = dynamic_cast<ClassificationTask*>(run.task.get());
  HR_CHECK(cls, "predict: this run is not a classification run");
  if (texts.empty())
    for (std::string line; std::getline(std::cin, line);) texts.push_back(line);
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

int main(int argc, char** argv) {
  CLI::App app{"headroom: train and study transformer encoders with per-layer heads"};
  app.require_subcommand(1);

  TrainArgs targs;
  auto* train = app.add_subcommand("train", "train a model from a YAML config (the run directory keeps everything)");
  train->add_option("config", targs.config_path, "model/training config (YAML)")->check(CLI::ExistingFile);
  train->add_option("--set", targs.overrides, "override a config key: --set train.lr=3e-4 (repeatable)");
  train->add_option("--out", targs.out_dir, "run directory (default runs/<config>-<date-time>)");
  train->add_option("--resume", targs.resume_dir, "continue the run in this directory")->check(CLI::ExistingDirectory);
  train->add_flag("--quiet", targs.quiet, "no progress output");

  std::string run_dir, which = "best", split = "test";
  auto* eval = app.add_subcommand("eval", "evaluate a run's checkpoint on a split");
  eval->add_option("--run", run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  eval->add_option("--checkpoint", which, "best | last")->check(CLI::IsMember({"best", "last"}));
  eval->add_option("--split", split, "eval | test")->check(CLI::IsMember({"eval", "test"}));

  std::vector<std::string> texts;
  int top = 3;
  std::string question, context;
  auto* predict = app.add_subcommand(
      "predict", "label texts (--text, or one a line on stdin) or answer questions (--question and --context, or "
                 "JSONL {\"question\", \"context\"} lines on stdin) with a trained run");
  predict->add_option("--run", run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  predict->add_option("--checkpoint", which, "best | last")->check(CLI::IsMember({"best", "last"}));
  predict->add_option("--text", texts, "a text to label (repeatable)");
  predict->add_option("--question", question, "QA runs: the question");
  predict->add_option("--context", context, "QA runs: the text holding the answer");
  predict->add_option("--top", top, "how many labels to show")->check(CLI::PositiveNumber);

  std::string info_config;
  std::vector<std::string> info_overrides;
  int64_t seq_len = 0;
  auto* info = app.add_subcommand("info", "per-layer heads, parameters and FLOPs of a config");
  info->add_option("config", info_config, "config (YAML)")->required()->check(CLI::ExistingFile);
  info->add_option("--set", info_overrides, "override a config key (repeatable)");
  info->add_option("--seq-len", seq_len, "sequence length for the FLOP counts (default model.max_len)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train) {
      if (targs.config_path.empty() == targs.resume_dir.empty()) {
        std::cerr << "train: give a CONFIG or --resume RUN_DIR (not both)\n";
        return 2;
      }
      return train_command(targs);
    }
    if (*eval) return eval_command(run_dir, which, split);
    if (*predict) {
      const bool qa = read_run_config(Config::load_file(run_dir + "/config.yaml"), "").data.task == "squad";
      if (qa) return qa_predict_command(run_dir, which, question, context);
      return predict_command(run_dir, which, texts, top);
    }
    if (*info) return info_command(info_config, info_overrides, seq_len);
  } catch (const ConfigError& e) {
    std::cerr << "config error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
