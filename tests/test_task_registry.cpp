// Tasks come from a registry: a new task (tests/tagging_task.h, one file plus one registration line) trains end to end
// through the same trainer, eval and predict as the built-in ones; a model.type that does not fit the task is a config
// error naming the key.
#include <doctest/doctest.h>

#include <fstream>

#include "tests/tagging_task.h"
#include "tests/temp_dir.h"
#include "train/run/trainer.h"

using namespace hr;
using hr::testing::TempDir;

namespace {

// Sentences of colours, animals and filler words; each word's tag is its class.
void write_tagging_data(const std::string& path, int n, int salt) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> classes = {
      {"COLOR", {"red", "green", "blue", "yellow"}}, {"ANIMAL", {"cat", "dog", "horse", "bird"}},
      {"O", {"the", "a", "saw", "near", "big"}}};
  std::ofstream f(path);
  for (int i = 0; i < n; ++i) {
    nlohmann::json words = nlohmann::json::array(), tags = nlohmann::json::array();
    for (int w = 0; w < 3 + (i + salt) % 4; ++w) {
      const auto& [tag, vocab] = classes[static_cast<size_t>((i * 5 + w * 7 + salt) % 3)];
      words.push_back(vocab[static_cast<size_t>((i * 3 + w + salt) % vocab.size())]);
      tags.push_back(tag);
    }
    f << nlohmann::json{{"words", words}, {"tags", tags}}.dump() << "\n";
  }
}

std::string tagging_config(const TempDir& d, const std::string& model_type) {
  return "model:\n  type: " + model_type +
         "\n  d_model: 16\n  ffn_dim: 32\n  max_len: 16\n  dropout: 0.0\n"
         "  layers:\n    - repeat: 2\n      attention: {heads: 2, head_dim: 8}\n"
         "tokenizer:\n  vocab_size: 60\n"
         "data:\n  task: tagging\n  train_path: " + (d / "train.jsonl") + "\n  eval_path: " + (d / "eval.jsonl") +
         "\ntrain:\n  epochs: 12\n  batch_size: 8\n  lr: 3e-3\n  warmup: 0.1\n  seed: 0\n";
}

}  // namespace

TEST_CASE("a task added in one file trains end to end: token classification") {
  register_tagging_task();
  TempDir d;
  write_tagging_data(d / "train.jsonl", 64, 0);
  write_tagging_data(d / "eval.jsonl", 16, 1);
  {
    std::ofstream(d / "tagging.yaml") << tagging_config(d, "encoder_tagger");
  }
  TrainArgs args;
  args.config_path = d / "tagging.yaml";
  args.out_dir = d / "run";
  args.quiet = true;
  REQUIRE(train_command(args) == 0);

  LoadedRun run = load_run(d / "run", "best");
  CHECK(std::ifstream(d / "run/tags.txt").good());
  const EvalResult r = run.task->evaluate(*run.model, "eval", Device::CPU, 8);
  CHECK(r.metrics.at("token_accuracy") > 0.95);

  LoadedRun served = load_run(d / "run", "best", /*load_data=*/false);  // prediction needs no dataset
  const auto out = served.task->predict(*served.model, {{{"text", "the red dog"}}}, Device::CPU, 8, 1);
  REQUIRE(out.size() == 1);
  CHECK(out[0]["tags"] == nlohmann::json::array({"O", "COLOR", "ANIMAL"}));
}

TEST_CASE("model.type must be the head the task trains; data.task must be registered") {
  register_tagging_task();
  TempDir d;
  write_tagging_data(d / "train.jsonl", 8, 0);
  write_tagging_data(d / "eval.jsonl", 4, 1);
  std::ofstream(d / "wrong.yaml") << tagging_config(d, "encoder_classifier");
  TrainArgs args;
  args.config_path = d / "wrong.yaml";
  args.out_dir = d / "run";
  try {
    train_command(args);
    FAIL("a classifier model with the tagging task must be refused");
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    CHECK(what.find("wrong.yaml:2") != std::string::npos);  // file and line of model.type
    CHECK(what.find("encoder_tagger") != std::string::npos);
  }
  std::string text = tagging_config(d, "encoder_tagger");
  text.replace(text.find("task: tagging"), 13, "task: tagger");
  std::ofstream(d / "unknown.yaml") << text;
  args.config_path = d / "unknown.yaml";
  CHECK_THROWS_WITH_AS(train_command(args), doctest::Contains("unknown task 'tagger'"), ConfigError);
}
