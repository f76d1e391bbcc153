// Tasks come from a registry: the built-in token-classification task (train/tasks/tagging_task.h: CoNLL files,
// entity-level F1, one registration line in train/tasks/task_registry.cpp) trains end to end through the same trainer,
// eval and predict as the other tasks; data.max_seq_len cuts its rows; a malformed line is reported with its file and
// line; a model.type that does not fit the task is a config error naming the key.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/tiny_run.h"
#include "train/run/run_config.h"
#include "train/run/trainer.h"
#include "train/tasks/tagging_task.h"

using namespace hr;
using namespace hr::testing;

namespace {

// Sentences of colours, animals, two-word names and filler words, in CoNLL (IOB2): a colour is B-COLOR, an animal
// B-ANIMAL, a name B-PER I-PER.
void write_conll(const std::string& path, int n, int salt) {
  const std::vector<std::string> colours = {"red", "green", "blue", "yellow"},
                                 animals = {"cat", "dog", "horse", "bird"},
                                 names = {"john smith", "mary jones", "ann lee"}, filler = {"the", "a", "saw", "near"};
  std::ofstream f(path);
  f << "-DOCSTART- O\n\n";
  for (int i = 0; i < n; ++i) {
    for (int w = 0; w < 3 + (i + salt) % 4; ++w) {
      // a hash picks the class and the word, so every word of every class shows up in both files
      const uint32_t h = static_cast<uint32_t>(i * 131 + w * 31 + salt * 17) * 2654435761u, k = h >> 16;
      switch ((h >> 8) % 4) {
        case 0: f << colours[k % 4] << "\tB-COLOR\n"; break;
        case 1: f << animals[k % 4] << "\tB-ANIMAL\n"; break;
        case 2: {
          const std::string& name = names[k % 3];
          f << name.substr(0, name.find(' ')) << "\tB-PER\n" << name.substr(name.find(' ') + 1) << "\tI-PER\n";
          break;
        }
        default: f << filler[k % 4] << "\tO\n";
      }
    }
    f << "\n";
  }
}

std::string tagging_config(const TempDir& d, const std::string& model_type) {
  return "model:\n  type: " + model_type +
         "\n  d_model: 16\n  ffn_dim: 32\n  max_len: 24\n  dropout: 0.0\n"
         "  layers:\n    - repeat: 2\n      attention: {heads: 2, head_dim: 8}\n"
         "tokenizer:\n  vocab_size: 80\n"
         "data:\n  task: tagging\n  train_path: " + (d / "train.conll") + "\n  eval_path: " + (d / "eval.conll") +
         "\ntrain:\n  epochs: 12\n  batch_size: 8\n  lr: 3e-3\n  warmup: 0.1\n  seed: 0\n";
}

}  // namespace

TEST_CASE("the built-in tagging task trains end to end on CoNLL files: entity F1, eval, predict") {
  const std::vector<std::string> tasks = registered_tasks();
  CHECK(std::find(tasks.begin(), tasks.end(), "tagging") != tasks.end());
  CHECK(head_registered("encoder_tagger"));  // its head comes with the task, registered with it

  TempDir d;
  write_conll(d / "train.conll", 96, 0);
  write_conll(d / "eval.conll", 16, 1);
  write_file(d / "tagging.yaml", tagging_config(d, "encoder_tagger"));
  TrainArgs args;
  args.config_path = d / "tagging.yaml";
  args.out_dir = d / "run";
  args.quiet = true;
  REQUIRE(train_command(args) == 0);
  CHECK(read_file(d / "run/tags.txt") == "B-ANIMAL\nB-COLOR\nB-PER\nI-PER\nO\n");

  LoadedRun run = load_run(d / "run", "best");
  const EvalResult r = run.task->evaluate(*run.model, "eval", Device::CPU, 8);
  CHECK(r.primary == "f1");
  CHECK(r.metrics.at("f1") > 0.95);
  CHECK(r.metrics.at("precision") > 0.95);
  CHECK(r.metrics.at("recall") > 0.95);

  LoadedRun served = load_run(d / "run", "best", /*load_data=*/false);  // prediction needs no dataset
  const auto out = served.task->predict(*served.model, {{{"text", "the red dog"}}, {{"text", "mary jones saw a cat"}}},
                                        Device::CPU, 8, 1);
  REQUIRE(out.size() == 2);
  CHECK(out[0]["tags"] == nlohmann::json::array({"O", "B-COLOR", "B-ANIMAL"}));
  CHECK(out[1]["entities"] == nlohmann::json::parse(R"([{"text": "mary jones", "type": "PER", "start": 0, "end": 2},
                                                        {"text": "cat", "type": "ANIMAL", "start": 4, "end": 5}])"));

  // data.max_seq_len cuts the row to [CLS] red [SEP]: the words after it are predicted O
  const auto full = served.task->predict(*served.model, {{{"text", "red dog near cat"}}}, Device::CPU, 8, 1);
  CHECK(full[0]["tags"] == nlohmann::json::array({"B-COLOR", "B-ANIMAL", "O", "B-ANIMAL"}));
  const size_t red = served.tokenizer->encode("red").ids.size();  // wordpieces
  LoadedRun cut = load_run(d / "run", "best", false, {"data.max_seq_len=" + std::to_string(red + 2)});
  const auto short_out = cut.task->predict(*cut.model, {{{"text", "red dog near cat"}}}, Device::CPU, 8, 1);
  CHECK(short_out[0]["tags"] == nlohmann::json::array({"B-COLOR", "O", "O", "O"}));

  // a tags.txt that is no regular file is refused by name, not read forever
  std::filesystem::remove(d / "run/tags.txt");
  std::filesystem::create_symlink("/dev/zero", d / "run/tags.txt");
  CHECK_THROWS_WITH_AS(load_run(d / "run", "best", false), doctest::Contains("tags.txt is not a regular file"), Error);
}

TEST_CASE("the headroom binary reports a malformed CoNLL line with its file and line; data.on_error: fail stops") {
  TempDir d;
  write_conll(d / "train.conll", 24, 0);
  write_conll(d / "eval.conll", 4, 1);
  {
    std::ofstream f(d / "train.conll", std::ios::app);
    f << "\nred B-COLOR\ncat\n\nblue S-COLOR\n";  // after 24 sentences: a token without a tag, a tag that is not IOB
  }
  const std::string bytes = read_file(d / "train.conll");
  const int lines = static_cast<int>(std::count(bytes.begin(), bytes.end(), '\n'));
  write_file(d / "tagging.yaml", tagging_config(d, "encoder_tagger"));
  const Result ok = headroom("train --quiet " + quote(d / "tagging.yaml") + " --set train.epochs=1 --out " +
                             quote(d / "run"));
  CHECK_MESSAGE(ok.code == 0, ok.output);
  const std::string train = d / "train.conll";
  CHECK(ok.output.find(train + ":" + std::to_string(lines - 2) + ": expected a token and its tag") !=
        std::string::npos);
  CHECK(ok.output.find(train + ":" + std::to_string(lines) + ": tag 'S-COLOR' is not O, B-TYPE or I-TYPE") !=
        std::string::npos);
  const Result fail = headroom("train --quiet " + quote(d / "tagging.yaml") + " --set data.on_error=fail --out " +
                               quote(d / "run2"));
  CHECK(fail.code == 1);
  CHECK(fail.output.find(train + ":" + std::to_string(lines - 2) + ":") != std::string::npos);
}

TEST_CASE("model.type must be the head the task trains; data.task must be registered; max_seq_len must hold a word") {
  TempDir d;
  write_conll(d / "train.conll", 8, 0);
  write_conll(d / "eval.conll", 4, 1);
  write_file(d / "wrong.yaml", tagging_config(d, "encoder_classifier"));
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
  write_file(d / "unknown.yaml", text);
  args.config_path = d / "unknown.yaml";
  CHECK_THROWS_WITH_AS(train_command(args), doctest::Contains("unknown task 'tagger'"), ConfigError);

  std::string with_len = tagging_config(d, "encoder_tagger");
  with_len.insert(with_len.find("  task: tagging"), "  max_seq_len: 2\n");  // line 13
  CHECK_THROWS_WITH_AS(read_run_config(Config::parse(with_len, "t.yaml"), "t"),
                       doctest::Contains("t.yaml:13: data.max_seq_len: must be at least 3"), ConfigError);
}
