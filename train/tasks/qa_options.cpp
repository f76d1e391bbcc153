#include "train/tasks/qa_options.h"

namespace hr {

namespace {

constexpr int64_t kMaxTokens = 1 << 20;  // window lengths

// data.recall: the generator's knobs, each checked here so that the error names the key (the generator itself only
// says which knob is off).
RecallOptions read_recall(const Config& data) {
  RecallOptions r;
  const auto c = data.optional_child("recall");
  if (!c) return r;
  constexpr int64_t kMaxWords = 1'000'000, kMaxContexts = 10'000'000;
  r.hops = c->get_positive("hops", r.hops);
  if (r.hops > kRecallMaxHops)
    c->fail("hops", "must be at most " + std::to_string(kRecallMaxHops) + ", got " + std::to_string(r.hops));
  r.pairs = at_most(*c, "pairs", c->get_positive("pairs", r.pairs), kMaxWords);
  // room to spare: with a fifth of the links held out, a context drawn from a pool that it nearly exhausts would
  // often find no link of its split left
  r.keys = at_most(*c, "keys", c->get_positive("keys", r.keys), kMaxWords);
  if (r.keys < 2 * r.pairs * r.hops)
    c->fail("keys", "must be at least 2 x pairs x hops = " + std::to_string(2 * r.pairs * r.hops) +
                        " (every context needs pairs x hops distinct keys), got " + std::to_string(r.keys));
  r.values = at_most(*c, "values", c->get_positive("values", r.values), kMaxWords);
  if (r.values < 2 * r.pairs)
    c->fail("values", "must be at least 2 x pairs = " + std::to_string(2 * r.pairs) +
                          " (every context needs pairs distinct values), got " + std::to_string(r.values));
  r.queries = c->get_positive("queries", r.queries);
  if (r.queries > r.pairs)
    c->fail("queries", "must be at most pairs = " + std::to_string(r.pairs) + " (one question per chain), got " +
                           std::to_string(r.queries));
  r.mixed_hops = c->get<bool>("mixed_hops", r.mixed_hops);
  r.distractors = at_most(*c, "distractors", c->get<int64_t>("distractors", r.distractors), kMaxWords);
  if (r.distractors < 0) c->fail("distractors", "must be >= 0");
  r.train_size = at_most(*c, "train_size", c->get_positive("train_size", r.train_size), kMaxContexts);
  r.eval_size = at_most(*c, "eval_size", c->get_positive("eval_size", r.eval_size), kMaxContexts);
  r.test_size = at_most(*c, "test_size", c->get<int64_t>("test_size", r.test_size), kMaxContexts);
  if (r.test_size < 0) c->fail("test_size", "must be >= 0 (0: no test split)");
  r.seed = c->get<int64_t>("seed", r.seed);
  return r;
}

}  // namespace

std::shared_ptr<const TaskOptions> QaOptions::read(const Config& c, bool check_files) {
  auto o = std::make_shared<QaOptions>();
  o->format = c.get_choice("format", {"squad", "recall"}, "squad");
  if (o->format == "recall") o->recall = read_recall(c);
  else o->files = SplitFiles::read(c, check_files);
  o->doc_stride = at_most(c, "doc_stride", c.get_positive("doc_stride", o->doc_stride), kMaxTokens);
  o->max_query_len = at_most(c, "max_query_len", c.get_positive("max_query_len", o->max_query_len), kMaxTokens);
  o->max_answer_len = at_most(c, "max_answer_len", c.get_positive("max_answer_len", o->max_answer_len), kMaxTokens);
  o->metric = c.get_choice("metric", {"auto", "squad", "cmrc"}, "auto");
  return o;
}

void QaOptions::require_train_data(const Config& data) const {
  if (format != "recall") files.require_train(data);
}

std::string QaOptions::row_length_problem(int64_t row_len) const {
  if (row_len < max_query_len + 4)
    return "must be at least data.max_query_len + 4 = " + std::to_string(max_query_len + 4) +
           " to hold [CLS], a question of max_query_len tokens, two [SEP] and any context";
  return "";
}

std::vector<std::string> QaOptions::data_overrides(const std::string& split, const std::string& file) const {
  if (format == "recall")
    throw UsageError("--data: the run's data (data.format recall) is generated from data.recall, not read from a file");
  return {"data." + split + "_path=" + file};
}

}  // namespace hr
