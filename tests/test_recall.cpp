// The associative-recall data format of the QA task (train/data/recall_data.h): deterministic in its seed, train and
// eval/test disjoint, every answer the value the question asks for, knob errors naming the key, and a tiny model that
// learns it end to end through `headroom train` and `headroom eval`.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "framework/config.h"
#include "tests/error_message.h"
#include "tests/tiny_run.h"
#include "train/data/recall_data.h"
#include "train/run/run_config.h"
#include "train/tasks/qa_task.h"

using namespace hr;

namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// A context's (from, to) links, read back from its text: distractors (x*) dropped, then words two by two.
std::vector<std::pair<std::string, std::string>> links_of(const std::string& context) {
  std::vector<std::string> w;
  for (const std::string& x : words(context))
    if (x[0] != 'x') w.push_back(x);
  REQUIRE(w.size() % 2 == 0);
  std::vector<std::pair<std::string, std::string>> links;
  for (size_t i = 0; i < w.size(); i += 2) links.emplace_back(w[i], w[i + 1]);
  return links;
}

RecallOptions small(int64_t hops) {
  RecallOptions o;
  o.keys = 40;
  o.values = 30;
  o.pairs = 5;
  o.queries = 3;
  o.distractors = 2;
  o.hops = hops;
  o.train_size = 300;
  o.eval_size = 60;
  o.test_size = 60;
  o.seed = 7;
  return o;
}

std::string error_reading(const std::string& yaml) {
  return hr::testing::error_message<ConfigError>([&] { read_run_config(Config::parse(yaml, "run.yaml"), "run"); });
}

}  // namespace

TEST_CASE("recall: the same seed gives the same data, another seed other data") {
  for (int64_t hops : {1, 2}) {
    const RecallOptions o = small(hops);
    const RecallData a = make_recall_data(o), b = make_recall_data(o);
    RecallOptions other = o;
    other.seed = 8;
    const RecallData c = make_recall_data(other);
    REQUIRE(a.train.size() == 300 * 3);
    REQUIRE(a.eval.size() == 60 * 3);
    REQUIRE(a.test.size() == 60 * 3);
    int differ = 0;
    for (size_t i = 0; i < a.train.size(); ++i) {
      CHECK(a.train[i].context == b.train[i].context);
      CHECK(a.train[i].question == b.train[i].question);
      CHECK(a.train[i].answers.front().start == b.train[i].answers.front().start);
      differ += a.train[i].context != c.train[i].context;
    }
    for (size_t i = 0; i < a.test.size(); ++i) CHECK(a.test[i].context == b.test[i].context);
    CHECK(differ == static_cast<int>(a.train.size()));
    CHECK(a.eval.front().context != a.test.front().context);  // eval and test are separate draws
  }
}

TEST_CASE("recall: no key -> value link of eval or test occurs in training, so no context does either") {
  for (int64_t hops : {1, 2}) {
    const RecallOptions o = small(hops);
    const RecallData d = make_recall_data(o);
    std::set<std::pair<std::string, std::string>> train_links;
    std::set<std::string> train_contexts;
    for (const QaExample& e : d.train) {
      train_contexts.insert(e.context);
      for (const auto& l : links_of(e.context)) train_links.insert(l);
    }
    int64_t held = 0;
    for (const auto* split : {&d.eval, &d.test})
      for (const QaExample& e : *split) {
        CHECK(train_contexts.count(e.context) == 0);
        for (const auto& l : links_of(e.context)) {
          CHECK_MESSAGE(train_links.count(l) == 0, l.first << " -> " << l.second << " is in both");
          ++held;
        }
      }
    CHECK(held == 2 * 60 * 3 * o.pairs * o.hops);
    // and the generator's own classification agrees: every training link is kept, every eval/test link held out
    const auto id = [](const std::string& w) { return std::stoll(w.substr(1)); };
    for (const auto& [from, to] : train_links) CHECK(!recall_held_out(o, id(from), id(to), to[0] == 'k'));
  }
}

TEST_CASE("recall: every answer is the asked key's value (with 2 hops, the value of the key's value)") {
  for (int64_t hops : {1, 2, 3}) {
    RecallOptions o = small(hops);
    o.keys = 60;
    const RecallData d = make_recall_data(o);
    for (const auto* split : {&d.train, &d.eval, &d.test})
      for (const QaExample& e : *split) {
        std::map<std::string, std::string> value;  // the context's links as a lookup table
        for (const auto& [from, to] : links_of(e.context)) {
          CHECK(value.count(from) == 0);  // every key once
          value[from] = to;
        }
        CHECK(value.size() == static_cast<size_t>(o.pairs * o.hops));
        std::string w = e.question;
        for (int64_t h = 0; h < hops; ++h) {
          REQUIRE(value.count(w) == 1);
          w = value[w];
        }
        REQUIRE(e.answers.size() == 1);
        const Answer& a = e.answers.front();
        CHECK(a.text == w);
        CHECK(a.text[0] == 'v');
        CHECK(e.context.substr(static_cast<size_t>(a.start), a.text.size()) == a.text);
        CHECK(e.context.find(a.text + " ") == e.context.rfind(a.text + " "));  // the value occurs once
        const std::vector<std::string> ws = words(e.context);
        CHECK(std::count(ws.begin(), ws.end(), a.text) == 1);
        // the span is a whole word: the answer's end is the context's end or a space
        const size_t end = static_cast<size_t>(a.start) + a.text.size();
        CHECK((end == e.context.size() || e.context[end] == ' '));
        CHECK((a.start == 0 || e.context[static_cast<size_t>(a.start) - 1] == ' '));
      }
  }
}

TEST_CASE("recall: mixed_hops trains on 1..hops hops per context; eval and test keep hops and stay the same") {
  RecallOptions o = small(3);
  o.keys = 60;
  RecallOptions mixed = o;
  mixed.mixed_hops = true;
  const RecallData plain = make_recall_data(o), d = make_recall_data(mixed);
  std::set<size_t> depths;
  for (const QaExample& e : d.train) {
    const auto links = links_of(e.context);
    REQUIRE(links.size() % static_cast<size_t>(o.pairs) == 0);
    const size_t depth = links.size() / static_cast<size_t>(o.pairs);
    depths.insert(depth);
    std::map<std::string, std::string> value(links.begin(), links.end());
    std::string w = e.question;  // followed `depth` links it is the answer, a value word
    for (size_t h = 0; h < depth; ++h) {
      REQUIRE(value.count(w) == 1);
      w = value[w];
    }
    CHECK(e.answers.front().text == w);
    CHECK(w[0] == 'v');
  }
  CHECK(depths == std::set<size_t>{1, 2, 3});
  // the draw of a context's depth is taken only with the flag and only for training: eval and test are the same data
  REQUIRE(d.eval.size() == plain.eval.size());
  REQUIRE(d.test.size() == plain.test.size());
  for (size_t i = 0; i < d.eval.size(); ++i) CHECK(d.eval[i].context == plain.eval[i].context);
  for (size_t i = 0; i < d.test.size(); ++i) CHECK(d.test[i].context == plain.test[i].context);
  for (const QaExample& e : d.test) CHECK(links_of(e.context).size() == static_cast<size_t>(o.pairs * o.hops));
}

TEST_CASE("recall: a knob out of range is a ConfigError naming the file, line and key") {
  const std::string head = "data:\n  task: squad\n  format: recall\n  recall:\n";
  CHECK(error_reading(head + "    pairs: 8\n    keys: 16\n").empty());
  CHECK(error_reading(head + "    pairs: 8\n    keys: 15\n") ==
        "run.yaml:6: data.recall.keys: must be at least 2 x pairs x hops = 16 (every context needs pairs x hops "
        "distinct keys), got 15");
  CHECK(error_reading(head + "    pairs: 8\n    hops: 2\n    keys: 31\n") ==
        "run.yaml:7: data.recall.keys: must be at least 2 x pairs x hops = 32 (every context needs pairs x hops "
        "distinct keys), got 31");
  CHECK(error_reading(head + "    pairs: 8\n    values: 10\n") ==
        "run.yaml:6: data.recall.values: must be at least 2 x pairs = 16 (every context needs pairs distinct "
        "values), got 10");
  CHECK(error_reading(head + "    pairs: 4\n    queries: 5\n") ==
        "run.yaml:6: data.recall.queries: must be at most pairs = 4 (one question per chain), got 5");
  CHECK(error_reading(head + "    hops: 5\n") == "run.yaml:5: data.recall.hops: must be at most 4, got 5");
  CHECK(error_reading(head + "    distractors: -1\n") == "run.yaml:5: data.recall.distractors: must be >= 0");
  CHECK(error_reading(head + "    hops: 2\n    mixed_hops: true\n").empty());
  CHECK(error_reading(head + "    mixed_hops: sometimes\n").find("run.yaml:5: data.recall.mixed_hops") == 0);
  CHECK(error_reading(head + "    test_size: -1\n") == "run.yaml:5: data.recall.test_size: must be >= 0 (0: no test split)");
  CHECK(error_reading(head + "    train_size: 0\n").find("run.yaml:5: data.recall.train_size:") == 0);
  CHECK(error_reading(head + "    pairs: 0\n").find("run.yaml:5: data.recall.pairs:") == 0);
  CHECK(error_reading(head + "    pairs: 4\n    keys: 8\n    values: 8\n    queries: 4\n    test_size: 0\n").empty());
  // a recall block under another format is an unread key, and the recall format needs no train_path
  const RunConfig rc = read_run_config(Config::parse(head + "    pairs: 4\n", "run.yaml"), "run");
  CHECK(rc.data.as<QaOptions>().format == "recall");
  CHECK(rc.data.as<QaOptions>().recall.pairs == 4);
  CHECK_NOTHROW(require_train_data(rc));
  const RunConfig squad = read_run_config(
      Config::parse("data:\n  task: squad\n  train_path: x\n  recall:\n    pairs: 4\n", "run.yaml"), "run", false);
  CHECK_THROWS_WITH_AS(squad.root.check_all_read(), doctest::Contains("data.recall"), ConfigError);
}

// One seed's run is a single trajectory through a phase change (one of eight seeds at 2000 steps on 4000 contexts
// memorised and stayed at chance; the ASan build's float order took seed 0 to 70%). 20000 contexts and 4000 steps
// reached 86.5-100% on seeds 0-7, so 75% fails only when recall is not learned.
TEST_CASE("recall: a tiny model trained on one-hop recall answers well above chance, and headroom eval agrees") {
  using namespace hr::testing;
  const TempDir d;
  write_file(d / "recall.yaml", R"(model:
  type: encoder_span_qa
  d_model: 64
  ffn_dim: 128
  max_len: 16
  norm: pre
  dropout: 0.0
  layers:
    - repeat: 2
      attention: {heads: 4, head_dim: 16}
tokenizer:
  vocab_size: 100
data:
  task: squad
  format: recall
  max_query_len: 2
  max_answer_len: 1
  recall: {keys: 8, values: 8, pairs: 2, queries: 2, train_size: 20000, eval_size: 100, test_size: 100, seed: 0}
train:
  max_steps: 4000
  batch_size: 32
  lr: 1e-3
  warmup: 0.05
  weight_decay: 0.1
  seed: 0
  log_every: 500
  eval_every: 500
)");
  const std::string run = d / "run";
  const Result r = headroom("train " + quote(d / "recall.yaml") + " --out " + quote(run));
  INFO(r.output);
  REQUIRE(r.code == 0);
  double em = -1;
  for (const auto& row : metrics_rows(run))
    if (row.contains("eval")) em = row["eval"]["exact_match"].get<double>();
  MESSAGE("eval exact match after 4000 steps: " << em << " (chance: 50)");
  CHECK(em >= 75.0);
  const Result e = headroom("eval --run " + quote(run) + " --checkpoint last --split eval --json");
  INFO(e.output);
  REQUIRE(e.code == 0);
  const auto j = nlohmann::json::parse(e.output.substr(e.output.find('{')));
  CHECK(j["eval"]["exact_match"].get<double>() == doctest::Approx(em));
  CHECK(headroom("eval --run " + quote(run) + " --split test").code == 0);
  const Result p = headroom("predict --run " + quote(run) + " --question k3 --context 'k5 v1 k3 v6'");
  CHECK(p.code == 0);
}
