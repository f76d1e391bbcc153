// Extractive QA: code-point offsets through multi-byte text, windowing of long contexts, span choice, the CMRC 2018
// trial file's defective answers, and a tiny end-to-end training run that has to learn.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "framework/autograd.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "models/encoder_model.h"
#include "train/data/squad_metric.h"
#include "train/data/utf8_codepoints.h"
#include "train/tasks/qa_task.h"
#include "train/tokenizer/wordpiece_trainer.h"

using namespace hr;
using hr::testing::data_file;
namespace fs = std::filesystem;

namespace {


Vocab small_vocab(std::vector<std::string> words) {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  tokens.insert(tokens.end(), words.begin(), words.end());
  return Vocab(tokens);
}

// The code-point offset of `needle` in `text`, counted independently of the tokenizer: bytes before it, decoded.
int64_t codepoint_find(const std::string& text, const std::string& needle) {
  const size_t byte = text.find(needle);
  REQUIRE(byte != std::string::npos);
  return utf8_codepoint_count(text.substr(0, byte));
}

std::vector<int32_t> iota_ids(int32_t n, int32_t first) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = first + i;
  return ids;
}

}  // namespace

TEST_CASE("qa: answer offsets through accents, Chinese and emoji map to tokens and back to the exact text") {
  const Tokenizer tok(small_vocab({"le", "cafe", "deja", "vu", "a", "北", "京", "大", "学", "ok", "!"}));
  const std::string context = "Le Café déjà vu à 北京大学 🎉 ok!";
  for (const std::string answer : {"déjà vu à 北京", "北京大学", "🎉", "Café", "ok!"}) {
    CAPTURE(answer);
    const Encoding enc = tok.encode(context);
    const int64_t begin = codepoint_find(context, answer);
    const auto span = answer_token_span(enc.offsets, begin, begin + utf8_codepoint_count(answer));
    REQUIRE(span);
    // the tokens' own offsets give back the original bytes, accents and all (the tokenizer lower-cased and stripped)
    const int64_t from = enc.offsets[static_cast<size_t>(span->first)].first;
    const int64_t to = enc.offsets[static_cast<size_t>(span->last)].second;
    CHECK(utf8_slice_codepoints(context, from, to - from) == answer);

    // through a window and best_span with logits peaked on the labelled positions
    const auto windows = make_qa_windows(tok.vocab(), tok.encode("où?").ids, enc.ids, {64, 8, 32}, span);
    REQUIRE(windows.size() == 1);
    const QaWindow& w = windows[0];
    std::vector<float> start(w.ids.size(), 0.f), end(w.ids.size(), 0.f);
    start[static_cast<size_t>(w.start)] = 5.f;
    end[static_cast<size_t>(w.end)] = 5.f;
    const auto choice = best_span(start.data(), end.data(), w, 30);
    REQUIRE(choice);
    CHECK(choice->span == *span);
  }
  // "🎉" is one [UNK] token covering one code point (4 bytes)
  const Encoding enc = tok.encode("🎉");
  REQUIRE(enc.ids.size() == 1);
  CHECK(enc.ids[0] == tok.vocab().unk_id());
  CHECK(enc.offsets[0] == Offset{0, 1});
}

TEST_CASE("qa: windows overlap by max_len - question - 3 - doc_stride tokens and label the answer where whole") {
  const Vocab v = small_vocab({});
  const std::vector<int32_t> question = {7, 8};
  const std::vector<int32_t> context = iota_ids(15, 100);
  const QaWindowing w{12, 8, 3};  // room for 12 - 2 - 3 = 7 context tokens a window

  SUBCASE("an answer inside the overlap of two windows is labelled in both, CLS in the others") {
    const auto windows = make_qa_windows(v, question, context, w, TokenSpan{5, 6});
    REQUIRE(windows.size() == 4);  // starts 0, 3, 6, 9 (9 + 7 >= 15)
    const std::vector<int64_t> begins = {0, 3, 6, 9};
    for (size_t k = 0; k < windows.size(); ++k) {
      const QaWindow& win = windows[k];
      CAPTURE(k);
      CHECK(win.doc_begin == begins[k]);
      CHECK(win.context_pos == 4);
      CHECK(win.ids.front() == v.cls_id());
      CHECK(win.ids[1] == 7);
      CHECK(win.ids[3] == v.sep_id());
      CHECK(win.ids.back() == v.sep_id());
      CHECK(win.ids.size() == static_cast<size_t>(4 + win.doc_len + 1));
      std::vector<int32_t> segments(4, 0);
      segments.resize(static_cast<size_t>(4 + win.doc_len + 1), 1);
      CHECK(win.segments == segments);
    }
    for (size_t k : {0u, 1u}) {
      CHECK(windows[k].ids[static_cast<size_t>(windows[k].start)] == 105);
      CHECK(windows[k].ids[static_cast<size_t>(windows[k].end)] == 106);
    }
    CHECK(windows[0].start == 4 + 5);
    CHECK(windows[1].start == 4 + 2);
    CHECK((windows[2].start == 0 && windows[2].end == 0));  // holds token 6 only
    CHECK((windows[3].start == 0 && windows[3].end == 0));
  }
  SUBCASE("an answer longer than a window is in none: every window points at CLS") {
    for (const QaWindow& win : make_qa_windows(v, question, context, w, TokenSpan{2, 10}))
      CHECK((win.start == 0 && win.end == 0));
  }
  SUBCASE("a long context: 1 + ceil((n - room) / stride) windows covering every token, the last one ending it") {
    const auto long_context = iota_ids(100, 100);
    const auto windows = make_qa_windows(v, question, long_context, w, std::nullopt);
    CHECK(windows.size() == 1 + (100 - 7 + 2) / 3);
    std::vector<int> seen(100, 0);
    for (const QaWindow& win : windows)
      for (int64_t t = 0; t < win.doc_len; ++t) {
        CHECK(win.ids[static_cast<size_t>(win.context_pos + t)] == long_context[static_cast<size_t>(win.doc_begin + t)]);
        ++seen[static_cast<size_t>(win.doc_begin + t)];
      }
    CHECK(std::count(seen.begin(), seen.end(), 0) == 0);
    CHECK(windows.back().doc_begin + windows.back().doc_len == 100);
  }
  SUBCASE("the question is cut to max_query_len; a context that fits is one window") {
    const auto windows = make_qa_windows(v, iota_ids(20, 50), iota_ids(5, 100), {12, 3, 3}, TokenSpan{4, 4});
    REQUIRE(windows.size() == 1);
    CHECK(windows[0].context_pos == 5);
    CHECK(windows[0].ids.size() == 5 + 5 + 1);
    CHECK(windows[0].start == 9);
  }
  SUBCASE("max_len too small for the question is an error") {
    CHECK_THROWS_AS(make_qa_windows(v, iota_ids(9, 50), context, {12, 9, 3}, std::nullopt), Error);
  }
}

TEST_CASE("qa: best_span is the best valid pair, found by brute force over every start <= end in the context") {
  const Vocab v = small_vocab({});
  const auto windows = make_qa_windows(v, {7, 8, 9}, iota_ids(12, 100), {64, 8, 32}, std::nullopt);
  REQUIRE(windows.size() == 1);
  const QaWindow& w = windows[0];  // context at row positions 5..16
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> start(w.ids.size()), end(w.ids.size());
    for (auto& x : start) x = normal(rng);
    for (auto& x : end) x = normal(rng);
    start[1] = end[2] = 100.f;  // question positions: never chosen
    start[0] = end[0] = 50.f;   // CLS: never chosen as an answer
    start[16] = 20.f;           // the best start's only valid end is itself...
    end[6] = 20.f;              // ...and the best end lies before it
    const int64_t max_answer_len = 4;
    float best = -std::numeric_limits<float>::infinity();
    TokenSpan want;
    for (int64_t s = w.context_pos; s < w.context_pos + w.doc_len; ++s)
      for (int64_t e = s; e < std::min(w.context_pos + w.doc_len, s + max_answer_len); ++e)
        if (start[static_cast<size_t>(s)] + end[static_cast<size_t>(e)] > best) {
          best = start[static_cast<size_t>(s)] + end[static_cast<size_t>(e)];
          want = {s - w.context_pos, e - w.context_pos};
        }
    const auto got = best_span(start.data(), end.data(), w, max_answer_len, /*top_k=*/20);
    REQUIRE(got);
    CHECK(got->span == want);
    CHECK(got->score == doctest::Approx(best));
  }
  QaWindow empty = make_qa_windows(v, {7}, {}, {64, 8, 32}, std::nullopt).at(0);
  std::vector<float> zeros(empty.ids.size(), 0.f);
  CHECK(!best_span(zeros.data(), zeros.data(), empty, 30));
}

TEST_CASE("qa: the CMRC 2018 trial's 5 misplaced answers are reported and not trained on") {
  auto o = std::make_shared<QaOptions>();
  o->files.train_path = data_file("cmrc2018/cmrc2018_trial.json");
  DataOptions d;
  d.task = "squad";
  d.options = o;
  QaTask task(d);
  CHECK(task.misplaced_answers() == 5);
  CHECK(task.data_issues() == 7);
  CHECK(task.num_train_questions() == 995);

  // Every verified answer maps to Chinese character tokens whose offsets give back text holding the answer.
  const Tokenizer tok(Vocab::load(data_file("bert_vocab/bert-base-chinese-vocab.txt")));
  const SquadData cmrc = load_squad(o->files.train_path);
  int64_t exact = 0;
  for (const QaExample& e : cmrc.train) {
    const Answer& a = e.answers.front();
    REQUIRE(utf8_slice_codepoints(e.context, a.start, utf8_codepoint_count(a.text)) == a.text);
    const Encoding enc = tok.encode(e.context);
    const auto span = answer_token_span(enc.offsets, a.start, a.start + utf8_codepoint_count(a.text));
    REQUIRE(span);
    const int64_t from = enc.offsets[static_cast<size_t>(span->first)].first;
    const std::string back =
        utf8_slice_codepoints(e.context, from, enc.offsets[static_cast<size_t>(span->last)].second - from);
    // (tokens never cover white space: an answer with a leading or trailing space comes back without it)
    const std::string trimmed = a.text.substr(a.text.find_first_not_of(' '), a.text.find_last_not_of(' ') + 1 -
                                                                              a.text.find_first_not_of(' '));
    CHECK_MESSAGE(back.find(trimmed) != std::string::npos, e.id << ": " << a.text << " came back as " << back);
    exact += back == trimmed;
  }
  MESSAGE(exact << " of " << cmrc.train.size() << " answers come back exactly");
  CHECK(exact == static_cast<int64_t>(cmrc.train.size()));
}

namespace {

// One "the <object> is in the <place> ." sentence among filler sentences; "where is the <object> ?" asks for the
// place. The filler varies the answer's position, so the model has to find the place word, not count.
fs::path write_synthetic_squad(const fs::path& dir, int questions, unsigned seed) {
  const std::vector<std::string> objects = {"key", "ball", "apple", "book"};
  const std::vector<std::string> places = {"kitchen", "garden", "office", "hallway", "bedroom", "cellar"};
  const std::vector<std::string> filler = {"the sun is bright. ", "it was a long day. ", "nobody said a word. "};
  std::mt19937 rng(seed);
  nlohmann::json paragraphs = nlohmann::json::array();
  for (int q = 0; q < questions; ++q) {
    const std::string object = objects[rng() % objects.size()], place = places[rng() % places.size()];
    std::string context;
    for (unsigned k = rng() % 4; k > 0; --k) context += filler[rng() % filler.size()];
    const int64_t start = static_cast<int64_t>(context.size() + ("the " + object + " is in the ").size());
    context += "the " + object + " is in the " + place + ". ";
    for (unsigned k = rng() % 3; k > 0; --k) context += filler[rng() % filler.size()];
    paragraphs.push_back({{"context", context},
                          {"qas", {{{"id", "q" + std::to_string(q)},
                                    {"question", "where is the " + object + "?"},
                                    {"answers", {{{"text", place}, {"answer_start", start}}}}}}}});
  }
  const fs::path path = dir / ("synthetic_" + std::to_string(seed) + ".json");
  const nlohmann::json squad = {{"data", {{{"title", "synthetic"}, {"paragraphs", paragraphs}}}}};
  return hr::testing::write_file(path, squad.dump());
}

}  // namespace

TEST_CASE("qa: a tiny model trained on synthetic questions learns them (loss drops, exact match rises)") {
  const hr::testing::TempDir tmp;
  const fs::path dir = tmp.path;
  auto o = std::make_shared<QaOptions>();
  o->files.train_path = write_synthetic_squad(dir, 96, 1).string();
  o->files.eval_path = write_synthetic_squad(dir, 32, 2).string();
  o->max_query_len = 8;
  o->doc_stride = 16;
  o->max_answer_len = 3;
  DataOptions d;
  d.task = "squad";
  d.options = o;
  QaTask task(d, true, dir.string());
  const Tokenizer tok(learn_wordpiece_vocab(task.training_texts(), 400, BasicTokenizer()));
  manual_seed(0);
  auto model = build_model(Config::parse(R"(
type: encoder_span_qa
d_model: 32
ffn_dim: 64
max_len: 64
dropout: 0.0
layers:
  - repeat: 2
    attention: {heads: 2, head_dim: 16}
)", "<test>"), ModelDims{tok.vocab().size(), 0});
  task.encode(tok, model->max_len());
  REQUIRE(task.num_train() == 96);  // every context fits one window

  const double em_before = task.evaluate(*model, "eval", Device::CPU, 16).metrics.at("exact_match");
  NamedTensors params = model->named_parameters();
  AdamW opt(params, std::vector<bool>(params.size(), false), AdamWOptions{0.9f, 0.999f, 1e-8f, 0.f});
  model->train();
  std::vector<int64_t> rows(96);
  std::iota(rows.begin(), rows.end(), 0);
  std::mt19937 rng(0);
  float first = 0, last = 0;
  for (int step = 0; step < 80; ++step) {
    std::shuffle(rows.begin(), rows.end(), rng);
    const Batch b = task.make_batch({rows.begin(), rows.begin() + 32}, Device::CPU);
    model->zero_grad();
    Tensor loss = task.loss(*model, b, step % 2 ? 0.1f : 0.f);  // smoothing on every other step: it must train too
    if (step == 0) first = loss.item();
    last = loss.item();
    backward(loss);
    opt.step(3e-3f);
  }
  const EvalResult r = task.evaluate(*model, "eval", Device::CPU, 16);
  MESSAGE("loss " << first << " -> " << last << "; exact match " << em_before << " -> " << r.metrics.at("exact_match"));
  CHECK(last < 0.3f * first);
  CHECK(r.metrics.at("exact_match") >= 80.0);
  CHECK(r.metrics.at("exact_match") > em_before + 40.0);
  CHECK(r.primary == "f1");

  // predictions.json holds exactly the answers the metric scored
  std::ifstream f(dir / "predictions.json");
  const auto written = nlohmann::json::parse(f).get<std::map<std::string, std::string>>();
  CHECK(written.size() == 32);
  const SquadData gold = load_squad(o->files.eval_path);
  CHECK(evaluate_squad(gold.eval, written).exact_match == doctest::Approx(r.metrics.at("exact_match")));
}
