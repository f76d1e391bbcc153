// The tokenizer:/data:/train: blocks of a training config (train/run/run_config.h): values that would fail deep into
// a run, overflow or never end are ConfigErrors naming the file, line and key before any work starts.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "framework/config.h"
#include "models/encoder_model.h"
#include "tests/error_message.h"
#include "tests/repo_files.h"
#include "train/run/run_config.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/qa_task.h"
#include "train/tools/hf_bert.h"

using namespace hr;

namespace {

// The message of the ConfigError that reading `yaml` throws ("" when it throws none).
std::string error_reading(const std::string& yaml) {
  return hr::testing::error_message<ConfigError>([&] { read_run_config(Config::parse(yaml, "run.yaml"), "run"); });
}

std::string squad_data() {
  return "data:\n  task: squad\n  train_path: " + hr::testing::data_file("babi_qa1/babi_qa1_en10k_test.squad.json") +
         "\n";
}

}  // namespace

TEST_CASE("negative weight decay and layer-norm epsilon are rejected") {
  CHECK(error_reading("train:\n  weight_decay: -0.01\n") == "run.yaml:2: train.weight_decay: must be >= 0");
  CHECK(error_reading("model:\n  d_model: 8\n  layer_norm_eps: -1e-5\n") ==
        "run.yaml:3: model.layer_norm_eps: must be > 0");
  CHECK(error_reading("model:\n  layer_norm_eps: 0\n") == "run.yaml:2: model.layer_norm_eps: must be > 0");
  CHECK(error_reading("train:\n  weight_decay: 0\nmodel:\n  layer_norm_eps: 1e-12\n").empty());
}

TEST_CASE("train.optimizer is a registered optimizer; SGD's momentum and Nesterov are checked") {
  CHECK(error_reading("train:\n  optimizer: adam\n") ==
        "run.yaml:2: train.optimizer: expected one of 'adamw', 'lamb', 'sgd', got 'adam' (did you mean 'adamw'?)");
  CHECK(error_reading("train:\n  momentum: 1\n") == "run.yaml:2: train.momentum: must be in [0, 1)");
  CHECK(error_reading("train:\n  momentum: 0\n  nesterov: true\n") ==
        "run.yaml:3: train.nesterov: needs train.momentum > 0");
  const TrainOptions t =
      read_run_config(Config::parse("train:\n  optimizer: sgd\n  momentum: 0.5\n  nesterov: true\n", "r.yaml"), "r")
          .train;
  CHECK(t.optimizer == "sgd");
  CHECK(t.momentum == 0.5f);
  CHECK(t.nesterov);
  CHECK(read_run_config(Config::parse("train:\n  optimizer: lamb\n", "r.yaml"), "r").train.optimizer == "lamb");
}

TEST_CASE("a max_len that cannot hold [CLS], [SEP] and text (and a whole question for QA) is rejected") {
  CHECK(error_reading("model:\n  max_len: 2\n") ==
        "run.yaml:2: model.max_len: must be at least 3 to hold [CLS], [SEP] and any text");
  CHECK(error_reading("model:\n  max_len: 3\n").empty());
  CHECK(error_reading(squad_data() + "model:\n  max_len: 67\n") ==
        "run.yaml:5: model.max_len: must be at least data.max_query_len + 4 = 68 to hold [CLS], a question of "
        "max_query_len tokens, two [SEP] and any context");
  CHECK(error_reading(squad_data() + "  max_query_len: 10\nmodel:\n  max_len: 14\n").empty());
}

TEST_CASE("counts near 2^62 are rejected before they overflow step arithmetic") {
  CHECK(error_reading("train:\n  epochs: 4611686018427387904\n") ==
        "run.yaml:2: train.epochs: must be at most 1000000, got 4611686018427387904");
  CHECK(error_reading("train:\n  max_steps: 4611686018427387904\n") ==
        "run.yaml:2: train.max_steps: must be at most 1000000000000, got 4611686018427387904");
  CHECK(error_reading("train:\n  warmup: 4.6e18\n") == "run.yaml:2: train.warmup: must be at most 1000000000000 steps");
  CHECK(error_reading("train:\n  grad_accum: 2000000\n") ==
        "run.yaml:2: train.grad_accum: must be at most 1048576, got 2000000");
  CHECK(error_reading("train:\n  batch_size: 2000000\n").find("train.batch_size: must be at most") !=
        std::string::npos);
  CHECK(error_reading("train:\n  eval_every: 4611686018427387904\n").find("train.eval_every: must be at most") !=
        std::string::npos);
  CHECK(error_reading("tokenizer:\n  vocab_size: 4611686018427387904\n")
            .find("tokenizer.vocab_size: must be at most 16777216") != std::string::npos);
  CHECK(error_reading(squad_data() + "  doc_stride: 4611686018427387904\n").find("data.doc_stride: must be at most") !=
        std::string::npos);
  CHECK(error_reading("train:\n  epochs: 1000000\n  warmup: 1e12\n  grad_accum: 1048576\n").empty());
}

TEST_CASE("data.metric chooses the QA metric, validated like the other choices") {
  CHECK(read_run_config(Config::parse(squad_data(), "run.yaml"), "run").data.as<QaOptions>().metric == "auto");
  CHECK(read_run_config(Config::parse(squad_data() + "  metric: cmrc\n", "run.yaml"), "run").data.as<QaOptions>().metric == "cmrc");
  CHECK(error_reading(squad_data() + "  metric: cmcr\n") ==
        "run.yaml:4: data.metric: expected one of 'auto', 'squad', 'cmrc', got 'cmcr' (did you mean 'cmrc'?)");
}

TEST_CASE("a renamed key reports the missing key and the unknown one next to it, when training needs it") {
  const std::string yaml = "data:\n  format: csv\n  train_file: x.csv\n";
  CHECK(error_reading(yaml).empty());  // eval and predict of an imported run need no training data
  const RunConfig rc = read_run_config(Config::parse(yaml, "run.yaml"), "run");
  std::string message;
  try {
    require_train_data(rc);
  } catch (const ConfigError& e) {
    message = e.what();
  }
  CHECK(message ==
        "run.yaml:1: data: missing required key 'train_path'; unknown key 'train_file' (line 3) may be meant for it");
}

TEST_CASE("configs/bert-base-mnli.yaml and bert-base-squad.yaml: every key read, BERT-base with BERT's names") {
  for (const std::string name : {"bert-base-mnli.yaml", "bert-base-squad.yaml"}) {
    CAPTURE(name);
    // the MNLI and SQuAD training files are the user's: not checked here
    const RunConfig rc = load_run_config(hr::testing::repo_path("configs/" + name), {}, /*check_files=*/false);
    const bool mnli = name == "bert-base-mnli.yaml";
    // a small vocabulary keeps the test light; bert-base-uncased's 30522 only widens the embedding
    const auto model = build_model(rc.root.child("model"), {1000, mnli ? 3 : 0, 2});
    rc.root.check_all_read();  // no key that nobody reads
    CHECK(model->d_model() == 768);
    CHECK(model->num_layers() == 12);
    CHECK(model->max_len() == 512);  // the pretrained positions load; rows are shorter
    CHECK(model->segments() == 2);
    // every parameter has its name in BERT's checkpoints, so train.init_from an imported bert-base-uncased fits
    for (const auto& [param, t] : model->named_parameters()) CHECK_NOTHROW(hf_bert_name(param));
    CHECK(rc.train.lr == doctest::Approx(3e-5));
    CHECK(rc.train.batch_size == 32);
    CHECK(rc.train.warmup == doctest::Approx(0.1));
    CHECK(rc.train.schedule == "linear");
    CHECK(rc.train.device == Device::CUDA);
    if (mnli) {
      CHECK(rc.data.as<ClassificationOptions>().text_field == "premise");
      CHECK(rc.data.as<ClassificationOptions>().pair_field == "hypothesis");
      CHECK(rc.data.max_seq_len == 128);
      CHECK(rc.train.epochs == 3);
    } else {
      CHECK(rc.data.max_seq_len == 384);
      CHECK(rc.data.as<QaOptions>().doc_stride == 128);
      CHECK(rc.train.epochs == 2);
    }
  }
}

TEST_CASE("every config in configs/ reads without an unknown key and builds its model") {
  const std::string dir = hr::testing::repo_path("configs");
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    CAPTURE(e.path().string());
    // data files are the user's (corpora, SQuAD's training set): not checked here
    const RunConfig rc = load_run_config(e.path().string(), {}, /*check_files=*/false);
    CHECK_NOTHROW(build_model(rc.root.child("model"), ModelDims{1000, 3, 0}));
    CHECK_NOTHROW(rc.root.check_all_read());
    ++checked;
  }
  CHECK(checked >= 18);
}
