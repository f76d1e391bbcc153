// Sentence-pair classification (MNLI style, data.text_field: [premise, hypothesis]): BERT's pair encoding with
// longest-first truncation, pair datasets in every delimited/JSONL format, bad rows named by file and line, and a tiny
// pair classifier that trains, is served by `predict` with both fields, and has segment embeddings.
#include <doctest/doctest.h>

#include <random>

#include "framework/config.h"
#include "tests/repo_files.h"
#include "tests/tiny_run.h"
#include "train/data/classification_data.h"
#include "train/run/trainer.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/qa_task.h"

using namespace hr;
using namespace hr::testing;

namespace {

const Tokenizer& uncased() {
  static const Tokenizer t(Vocab::load(data_file("bert_vocab/bert-base-uncased-vocab.txt")), BasicTokenizer(true));
  return t;
}

TextExample pair(const std::string& a, const std::string& b) {
  TextExample ex;
  ex.text = a;
  ex.text_pair = b;
  ex.source = "<test>";
  return ex;
}

}  // namespace

TEST_CASE("a pair is [CLS] a [SEP] b [SEP], segments 0 through the first [SEP]; the longer text is cut first") {
  // bert-base-uncased ids: [CLS] 101, [SEP] 102, the 1996, cat 4937, sat 2938, on 2006, mat 13523, . 1012, a 1037,
  // dog 3899. "The cat sat on the mat." is 7 tokens, "A dog sat." 4.
  const TextExample ex = pair("The cat sat on the mat.", "A dog sat.");
  PairRow row = encode_pair_row(uncased(), ex, 64);
  CHECK(row.ids == std::vector<int32_t>{101, 1996, 4937, 2938, 2006, 1996, 13523, 1012, 102, 1037, 3899, 2938, 1012,
                                        102});
  CHECK(row.segments == std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  // exactly 14 fits untouched
  CHECK(encode_pair_row(uncased(), ex, 14).ids == row.ids);

  // max_len 10 leaves 7 text tokens: the premise loses 3 (7 -> 4), then the two are tied at 4 and the second is cut
  row = encode_pair_row(uncased(), ex, 10);
  CHECK(row.ids == std::vector<int32_t>{101, 1996, 4937, 2938, 2006, 102, 1037, 3899, 2938, 102});
  CHECK(row.segments == std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1});

  // the longer second text is the one cut: 2 + 7 -> 2 + 3 in 8 tokens
  row = encode_pair_row(uncased(), pair("a dog", "the cat sat on the mat."), 8);
  CHECK(row.ids == std::vector<int32_t>{101, 1037, 3899, 102, 1996, 4937, 2938, 102});
  CHECK(row.segments == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("pair datasets load from JSONL, TSV and CSV") {
  TempDir d;
  write_file(d / "pairs.jsonl",
             "{\"premise\": \"a man plays\", \"hypothesis\": \"someone plays\", \"label\": \"entailment\"}\n"
             "\n"
             "{\"hypothesis\": \"nobody\", \"premise\": \"a dog runs\", \"label\": 2}\n");
  write_file(d / "pairs.tsv", "id\tpremise\thypothesis\tlabel\n7\ta man plays\tsomeone plays\tentailment\n"
                              "8\ta dog runs\tnobody\tcontradiction\n");
  write_file(d / "pairs.csv", "label,hypothesis,premise\nneutral,\"a, b\",c d\n");
  for (const auto& [format, file] : {std::pair{DataFormat::jsonl, "pairs.jsonl"}, {DataFormat::tsv, "pairs.tsv"}}) {
    CAPTURE(file);
    ClassificationDataOptions o;
    o.format = format;
    o.path = d / file;
    o.text_field = "premise";
    o.pair_field = "hypothesis";
    const LoadResult r = load_classification_data(o);
    CHECK(r.issues.empty());
    REQUIRE(r.examples.size() == 2);
    CHECK(r.examples[0].text == "a man plays");
    CHECK(r.examples[0].text_pair == "someone plays");
    CHECK(r.examples[0].label == "entailment");
    CHECK(r.examples[1].text == "a dog runs");
    CHECK(r.examples[1].text_pair == "nobody");
    CHECK(r.examples[1].source == o.path + ":3");
  }
  ClassificationDataOptions o;
  o.format = DataFormat::csv;
  o.path = d / "pairs.csv";
  o.text_field = "premise";
  o.pair_field = "hypothesis";
  const LoadResult r = load_classification_data(o);
  REQUIRE(r.examples.size() == 1);
  CHECK(r.examples[0].text == "c d");
  CHECK(r.examples[0].text_pair == "a, b");
  CHECK(r.examples[0].label == "neutral");
}

TEST_CASE("a pair row without its hypothesis is an issue naming file, line and field; a missing column a config error") {
  TempDir d;
  write_file(d / "bad.jsonl", "{\"premise\": \"a\", \"hypothesis\": \"b\", \"label\": \"x\"}\n"
                              "{\"premise\": \"a\", \"label\": \"x\"}\n"
                              "{\"premise\": \"a\", \"hypothesis\": 3, \"label\": \"x\"}\n"
                              "{\"premise\": \"a\", \"hypothesis\": \"  \", \"label\": \"x\"}\n");
  ClassificationDataOptions o;
  o.format = DataFormat::jsonl;
  o.path = d / "bad.jsonl";
  o.text_field = "premise";
  o.pair_field = "hypothesis";
  const LoadResult r = load_classification_data(o);
  CHECK(r.examples.size() == 1);
  REQUIRE(r.issues.size() == 3);
  CHECK(r.issues[0].message() == o.path + ":2: missing field 'hypothesis'");
  CHECK(r.issues[1].message() == o.path + ":3: 'hypothesis' must be a string, got number");
  CHECK(r.issues[2].message() == o.path + ":4: empty 'hypothesis'");

  o.on_error = OnError::fail;
  try {
    load_classification_data(o);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(o.path + ":2: missing field 'hypothesis'") != std::string::npos);
  }

  write_file(d / "bad.tsv", "premise\tlabel\na\tx\n");
  o.format = DataFormat::tsv;
  o.path = d / "bad.tsv";
  CHECK_THROWS_WITH_AS(load_classification_data(o),
                       (o.path + ":1: the header has no column 'hypothesis' (it has 'premise', 'label')").c_str(),
                       ConfigError);
}

TEST_CASE("data.text_field: a name or a list of two; max_seq_len fits in model.max_len") {
  const auto read = [](const std::string& yaml) {
    return read_run_config(Config::parse(yaml, "run.yaml"), "run", /*check_files=*/false);
  };
  const std::string data = "data:\n  task: classification\n  format: jsonl\n  train_path: t.jsonl\n";
  RunConfig rc = read(data + "  text_field: [premise, hypothesis]\n");
  CHECK(rc.data.as<ClassificationOptions>().text_field == "premise");
  CHECK(rc.data.as<ClassificationOptions>().pair_field == "hypothesis");
  rc = read(data + "  text_field: sentence\n");
  CHECK(rc.data.as<ClassificationOptions>().text_field == "sentence");
  CHECK(rc.data.as<ClassificationOptions>().pair_field.empty());

  const auto error = [&](const std::string& yaml) {
    try {
      read(yaml);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error(data + "  text_field: [a, b, c]\n") ==
        "run.yaml:5: data.text_field: must be one field name or a list of two different ones (a sentence pair, e.g. "
        "[premise, hypothesis]), got a list of 3");
  CHECK(error(data + "  text_field: [a, a]\n").find("two different ones") != std::string::npos);
  CHECK(error(data + "  text_field: {a: b}\n").find("data.text_field") != std::string::npos);
  CHECK(error(data + "  max_seq_len: 128\nmodel:\n  max_len: 64\n") ==
        "run.yaml:5: data.max_seq_len: is 128, longer than model.max_len 64 (the positions the model has)");
  CHECK(error(data + "  text_field: [a, b]\nmodel:\n  max_len: 4\n") ==
        "run.yaml:7: model.max_len: must be at least 5 to hold [CLS], two [SEP] and a token of each text of a pair");
  CHECK(error(data + "  max_seq_len: 64\nmodel:\n  max_len: 512\n").empty());
}

TEST_CASE("data.max_seq_len makes rows (QA: windows) shorter than model.max_len") {
  TempDir d;
  write_file(d / "pairs.jsonl",
             "{\"premise\": \"the cat sat on the mat.\", \"hypothesis\": \"a dog sat.\", \"label\": \"x\"}\n");
  auto co = std::make_shared<ClassificationOptions>();
  co->format = "jsonl";
  co->files.train_path = d / "pairs.jsonl";
  co->text_field = "premise";
  co->pair_field = "hypothesis";
  DataOptions o;
  o.options = co;
  o.max_seq_len = 10;
  ClassificationTask cls(o, std::nullopt);
  cls.encode(uncased(), 512);
  CHECK(cls.num_train() == 1);
  CHECK(cls.train_length(0) == 10);  // the hand-worked row above
  CHECK(cls.dims().segments == 2);
  o.max_seq_len = 600;
  ClassificationTask too_long(o, std::nullopt);
  CHECK_THROWS_WITH(too_long.encode(uncased(), 512), "data.max_seq_len 600 is longer than model.max_len 512");

  auto qo = std::make_shared<QaOptions>();
  qo->files.train_path = data_file("squad_v1.1/dev-v1.1.part1of2.json");
  qo->max_query_len = 16;
  qo->doc_stride = 32;
  DataOptions q;
  q.task = "squad";
  q.options = qo;
  int64_t longest[2] = {0, 0};
  for (const int64_t max_seq_len : {0, 64}) {
    q.max_seq_len = max_seq_len;
    QaTask qa(q);
    qa.encode(uncased(), 128);
    for (int64_t r = 0; r < qa.num_train(); ++r)
      longest[max_seq_len > 0] = std::max(longest[max_seq_len > 0], qa.train_length(r));
  }
  CHECK(longest[0] == 128);
  CHECK(longest[1] == 64);
}

namespace {

// Pairs of two-word texts labelled by whether they share a word. Every premise comes twice, once with a hypothesis
// that shares a word and once with one that does not, so the premise alone says nothing about the label: the loss can
// only fall when the hypothesis reaches the model.
void write_share_data(const std::string& path, int premises, uint32_t seed) {
  const std::vector<std::string> words = {"red", "blue", "green", "cat", "dog", "bird", "sun", "moon"};
  std::mt19937 rng(seed);  // the same stream on every platform
  std::string s;
  for (int i = 0; i < premises; ++i) {
    const size_t a = rng() % 8, b = (a + 1 + rng() % 7) % 8;  // two different words
    std::vector<size_t> others;                              // the six words not in the premise
    for (size_t w = 0; w < 8; ++w)
      if (w != a && w != b) others.push_back(w);
    for (const bool share : {true, false}) {
      const size_t o = rng() % 6;
      const size_t x = share ? (rng() % 2 ? a : b) : others[o], y = others[(o + 1 + rng() % 5) % 6];
      const std::string h = rng() % 2 ? words[x] + " " + words[y] : words[y] + " " + words[x];
      s += nlohmann::json{{"premise", words[a] + " " + words[b]}, {"hypothesis", h},
                          {"label", share ? "same" : "different"}}.dump() + "\n";
    }
  }
  write_file(path, s);
}

}  // namespace

TEST_CASE("a tiny sentence-pair classifier trains, has segment embeddings, and predict and attention take both fields") {
  TempDir d;
  write_share_data(d / "train.jsonl", 48, 1);
  write_share_data(d / "eval.jsonl", 8, 2);
  write_file(d / "pairs.yaml",
             "model:\n  type: encoder_classifier\n  d_model: 64\n  ffn_dim: 128\n  max_len: 12\n  dropout: 0.0\n"
             "  pooling: cls\n  layers:\n    - repeat: 2\n      attention: {heads: 4, head_dim: 16}\n"
             "tokenizer:\n  vocab_size: 80\n"
             "data:\n  task: classification\n  format: jsonl\n  text_field: [premise, hypothesis]\n"
             "  train_path: " + (d / "train.jsonl") + "\n  eval_path: " + (d / "eval.jsonl") + "\n"
             "train:\n  max_steps: 300\n  batch_size: 16\n  lr: 2e-3\n  warmup: 5\n  schedule: constant\n  seed: 0\n"
             "  log_every: 1\n");
  Result r = headroom("train --quiet " + quote(d / "pairs.yaml") + " --out " + quote(d / "run"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto loss = losses(d / "run");
  REQUIRE(loss.size() == 300);
  double first = 0, last = 0;
  for (int64_t s = 1; s <= 10; ++s) first += loss.at(s) / 10;
  for (int64_t s = 291; s <= 300; ++s) last += loss.at(s) / 10;
  CAPTURE(first);
  CAPTURE(last);
  // the premise alone cannot go below ln 2 = 0.69; both fields reach 0.08-0.46 by step 300 over seeds 0-5 (when the
  // plateau is left is chaotic: a rounding change in the loss's exp moves it), 2-3 s
  CHECK(first > 0.65);
  CHECK(last < 0.6);

  LoadedRun run = load_run(d / "run", "last", /*load_data=*/false);
  CHECK(run.model->segments() == 2);
  CHECK(run.task->input_fields() == std::vector<std::string>{"premise", "hypothesis"});
  // the batches carry the segments: [CLS] a b [SEP] is 0, c d [SEP] is 1 (each word one token of the learned vocab)
  LoadedRun with_data = load_run(d / "run", "last");
  const Batch b = with_data.task->make_split_batch("eval", {0}, Device::CPU);
  REQUIRE(b.input.segments.defined());
  CHECK(b.input.segments.to_ids() == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1});

  write_file(d / "requests.jsonl", "{\"premise\": \"red cat\", \"hypothesis\": \"cat sun\"}\n"
                                   "{\"premise\": \"red cat\"}\n");
  r = headroom("predict --run " + quote(d / "run") + " < " + quote(d / "requests.jsonl"));
  CHECK(r.code == 1);  // the second line lacks its hypothesis
  CHECK(r.output.find("\"hypothesis\":\"cat sun\"") != std::string::npos);
  CHECK(r.output.find("expected a JSON object with the string fields \"premise\", \"hypothesis\"") !=
        std::string::npos);
  r = headroom("predict --run " + quote(d / "run") + " < /dev/null");
  CHECK(r.code == 2);
  CHECK(r.output.find("give JSONL lines {\"premise\", \"hypothesis\"} on stdin") != std::string::npos);

  // attention maps of a pair: --text once per field, in their order: [CLS] red cat [SEP] cat sun [SEP]
  r = headroom("attention --run " + quote(d / "run") + " --text 'red cat' --text 'cat sun' --out " + quote(d / "a.png"));
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("2 x 4 maps of 7 tokens") != std::string::npos);
  r = headroom("attention --run " + quote(d / "run") + " --text 'red cat'");
  CHECK(r.code == 2);
  CHECK(r.output.find("inputs are premise, then hypothesis: give --text once for each") != std::string::npos);
  CHECK(headroom("attention --run " + quote(d / "run") + " --question 'red cat' --context 'cat sun'").code == 2);
}
