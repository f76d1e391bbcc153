// headroom: the command line. Subcommands train, eval, predict, info, prune, heads; config errors exit with code 2.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/error.h"
#include "train/attention_maps.h"
#include "train/bench.h"
#include "train/classification_task.h"
#include "train/heads_report.h"
#include "train/info.h"
#include "train/prune.h"
#include "train/qa_task.h"
#include "train/sweep.h"
#include "train/trainer.h"

using namespace hr;

namespace {

int info_command(const std::string& config, const std::vector<std::string>& overrides, int64_t seq_len) {
  RunConfig rc = load_run_config(config, overrides);
  ModelDims dims;
  dims.vocab_size = rc.tokenizer.vocab.empty() ? rc.tokenizer.vocab_size : Vocab::load(rc.tokenizer.vocab).size();
  dims.num_labels = 1;
  if (rc.data.present && rc.data.task == "classification") {
    ClassificationTask task(rc.data, std::nullopt);
    dims.num_labels = task.labels().size();
  }
  auto model = build_model(rc.root.child("model"), dims);
  std::cout << config << ": vocabulary " << dims.vocab_size << ", " << dims.num_labels << " labels\n";
  print_model_info(std::cout, *model, seq_len > 0 ? seq_len : model->max_len());
  return 0;
}

// --data FILE: evaluate on FILE (in the run's data format) as the test split.
int eval_command(const std::string& dir, const std::string& which, std::string split, const std::string& data,
                 bool json) {
  std::vector<std::string> overrides;
  if (!data.empty()) {
    const RunConfig rc = load_run_config(dir + "/config.yaml", {});
    overrides.push_back(rc.data.format == "clinc150" ? "data.path=" + data : "data.test_path=" + data);
    split = "test";
  }
  LoadedRun run = load_run(dir, which, true, overrides);
  HR_CHECK(run.task->has_split(split), "the run's data has no '" + split + "' split");
  EvalResult r = run.task->evaluate(*run.model, split, run.config.train.device, run.config.train.batch_size * 2);
  if (json) {
    std::cout << nlohmann::json{{"run", dir}, {"checkpoint", which}, {"split", split}, {split, r.metrics}}.dump()
              << "\n";
  } else {
    std::cout << dir << " (" << which << " checkpoint), " << split << ":";
    for (const auto& [k, v] : r.metrics) std::cout << " " << k << " " << v;
    std::cout << "\n";
  }
  return 0;
}

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

// --run DIR (required) and --checkpoint best|last: how every command that reads a run directory names it.
void add_run_options(CLI::App* cmd, std::string& run_dir, std::string& which) {
  cmd->add_option("--run", run_dir, "run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--checkpoint", which, "best | last")->check(CLI::IsMember({"best", "last"}));
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP threads that spin while they wait burn the CPU that the other thread (or another process) needs: on a
  // shared 2-core machine a training step ran 15x slower with spinning. libgomp reads OMP_WAIT_POLICY when it loads,
  // so a process started without it sets it and starts itself again (OMP_WAIT_POLICY=active restores spinning).
  if (!std::getenv("OMP_WAIT_POLICY")) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
  }
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
  add_run_options(eval, run_dir, which);
  eval->add_option("--split", split, "eval | test")->check(CLI::IsMember({"eval", "test"}));
  std::string eval_data;
  bool eval_json = false;
  eval->add_option("--data", eval_data, "evaluate on this file (the run's data format) instead")
      ->check(CLI::ExistingFile);
  eval->add_flag("--json", eval_json, "one JSON object on stdout (metrics under the split's name, as metrics.jsonl)");

  std::vector<std::string> texts;
  int top = 3;
  std::string question, context;
  auto* predict = app.add_subcommand(
      "predict", "label texts (--text, or one a line on stdin) or answer questions (--question and --context, or "
                 "JSONL {\"question\", \"context\"} lines on stdin) with a trained run");
  add_run_options(predict, run_dir, which);
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

  BenchOptions bench_opt;
  auto* bench = app.add_subcommand("bench", "time training steps and inference on synthetic batches; sgemm rate");
  bench->add_option("config", bench_opt.config, "config (YAML)")->required()->check(CLI::ExistingFile);
  bench->add_option("--set", bench_opt.overrides, "override a config key (repeatable)");
  bench->add_option("--batch", bench_opt.batch, "batch size")->check(CLI::PositiveNumber);
  bench->add_option("--seq-len", bench_opt.seq_len, "sequence length (default model.max_len)");
  bench->add_option("--vocab", bench_opt.vocab, "vocabulary size")->check(CLI::PositiveNumber);
  bench->add_option("--classes", bench_opt.classes, "number of classes")->check(CLI::PositiveNumber);
  bench->add_option("--steps", bench_opt.steps, "timed steps")->check(CLI::PositiveNumber);
  bench->add_option("--warmup", bench_opt.warmup, "untimed warm-up steps");
  bench->add_flag("--json", bench_opt.json, "print one JSON object");
  PruneArgs pargs;
  auto* prune = app.add_subcommand("prune", "remove attention heads: write a smaller model as a new run directory");
  add_run_options(prune, pargs.run_dir, pargs.which);
  prune->add_option("--out", pargs.out_dir, "new run directory (default <run>-pruned)");
  prune->add_option("--by", pargs.options.by, "rank heads by gates | importance")
      ->check(CLI::IsMember({"gates", "importance"}));
  auto* prune_threshold =
      prune->add_option("--threshold", pargs.options.threshold, "keep heads scoring above this (default 0)");
  prune->add_option("--keep", pargs.options.keep, "keep this many heads of the whole model")
      ->check(CLI::NonNegativeNumber)
      ->excludes(prune_threshold);
  prune->add_option("--split", pargs.importance.split, "importance: data split (train | eval | test)")
      ->check(CLI::IsMember({"train", "eval", "test"}));
  prune->add_option("--batches", pargs.importance.batches, "importance: batches to average over (0: all)")
      ->check(CLI::NonNegativeNumber);

  HeadsArgs hargs;
  hargs.prune.by = "";
  auto* heads = app.add_subcommand("heads", "per-head gate probabilities, importance and pruning; heatmap PNG");
  add_run_options(heads, hargs.run_dir, hargs.which);
  heads->add_flag("--importance", hargs.importance, "score heads by loss sensitivity (Michel et al. 2019)");
  heads->add_option("--split", hargs.importance_options.split, "importance: data split (train | eval | test)")
      ->check(CLI::IsMember({"train", "eval", "test"}));
  heads->add_option("--batches", hargs.importance_options.batches, "importance: batches to average over (0: all)")
      ->check(CLI::NonNegativeNumber);
  heads->add_option("--by", hargs.prune.by, "pruning rule ranks by gates | importance (default: gates if gated)")
      ->check(CLI::IsMember({"gates", "importance"}));
  auto* heads_threshold = heads->add_option("--threshold", hargs.prune.threshold, "pruning threshold (default 0)");
  heads->add_option("--keep", hargs.prune.keep, "prune to this many heads")
      ->check(CLI::NonNegativeNumber)
      ->excludes(heads_threshold);
  heads->add_option("--png", hargs.png, "heatmap path (default <run>/heads.png)");

  SweepArgs sargs;
  auto* sweep = app.add_subcommand("sweep", "one run per head count (head_dim = d_model / heads), table and plots");
  sweep->add_option("config", sargs.config, "config (YAML)")->required()->check(CLI::ExistingFile);
  sweep->add_option("--heads", sargs.heads, "head counts, e.g. 1,2,4,8")->required()->delimiter(',');
  sweep->add_option("--seeds", sargs.seeds, "runs per head count (seeds 0..N-1)")->check(CLI::PositiveNumber);
  sweep->add_option("--head-dim", sargs.head_dim, "fixed head_dim instead of d_model / heads");
  sweep->add_option("--set", sargs.overrides, "override a config key in every run (repeatable)");
  sweep->add_option("--out", sargs.out_dir, "sweep directory (default sweeps/<config>)");
  sweep->add_flag("--remeasure", sargs.remeasure, "time every finished run again, back to back, for the table");

  AttentionArgs aargs;
  auto* attention = app.add_subcommand("attention", "attention maps of a trained run for one input, as a PNG grid");
  add_run_options(attention, aargs.run_dir, aargs.which);
  attention->add_option("--text", aargs.text, "input text (classification runs)");
  attention->add_option("--question", aargs.question, "question (QA runs)");
  attention->add_option("--context", aargs.context, "context (QA runs)");
  attention->add_option("--layer", aargs.layer, "with --head: one large map");
  attention->add_option("--head", aargs.head, "with --layer: one large map");
  attention->add_option("--out", aargs.out, "PNG path (default <run>/attention.png)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train) {
      if (targs.config_path.empty() == targs.resume_dir.empty()) {
        std::cerr << "train: give a CONFIG or --resume RUN_DIR (not both)\n";
        return 2;
      }
      return train_command(targs);
    }
    if (*eval) return eval_command(run_dir, which, split, eval_data, eval_json);
    if (*predict) {
      const bool qa = read_run_config(Config::load_file(run_dir + "/config.yaml"), "").data.task == "squad";
      if (qa) return qa_predict_command(run_dir, which, question, context);
      return predict_command(run_dir, which, texts, top);
    }
    if (*info) return info_command(info_config, info_overrides, seq_len);
    if (*bench) return bench_command(bench_opt);
    if (*sweep) return sweep_command(sargs);
    if (*attention) return attention_command(aargs);
    if (*prune) return prune_command(pargs);
    if (*heads) return heads_command(hargs);
  } catch (const ConfigError& e) {
    std::cerr << "config error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
