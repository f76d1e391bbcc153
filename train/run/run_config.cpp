#include "train/run/run_config.h"

#include <filesystem>

namespace hr {

namespace {

// Upper bounds past which a count is a typo, not a plan: they keep step arithmetic (epochs x batches, warm-up
// steps) far from int64 overflow and catch a run that would otherwise loop for centuries.
constexpr int64_t kMaxSteps = 1'000'000'000'000;  // optimizer steps, warm-up, eval and log intervals
constexpr int64_t kMaxEpochs = 1'000'000;
constexpr int64_t kMaxBatch = 1 << 20;            // rows per batch, micro-batches per step
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxTokens = 1 << 20;           // squad window lengths

// A path the config names must exist. The error_code form: a name the OS refuses (too long, a bad component) is a
// config error too, not a std::filesystem exception (found by tests/fuzz/fuzz_config.cpp).
void require_file(const Config& c, const std::string& key, const std::string& path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  if (ec) c.fail(key, "cannot access '" + path + "': " + ec.message());
  if (!exists) c.fail(key, "no such file '" + path + "'");
}

int64_t at_most(const Config& c, const char* key, int64_t value, int64_t limit) {
  if (value > limit) c.fail(key, "must be at most " + std::to_string(limit) + ", got " + std::to_string(value));
  return value;
}

TokenizerOptions read_tokenizer(const Config& root, bool check_files) {
  TokenizerOptions t;
  auto c = root.optional_child("tokenizer");
  if (!c) return t;
  t.vocab = c->get<std::string>("vocab", "");
  t.vocab_size = at_most(*c, "vocab_size", c->get_positive("vocab_size", t.vocab_size), kMaxVocab);
  t.lower_case = c->get<bool>("lower_case", t.lower_case);
  if (c->has("strip_accents")) t.strip_accents = c->get<bool>("strip_accents");
  if (check_files && !t.vocab.empty()) require_file(*c, "vocab", t.vocab);
  return t;
}

// data.text_field: one field name, or a list of two for sentence pairs.
void read_text_fields(const Config& c, DataOptions& d) {
  if (!c.has("text_field")) return;
  try {
    d.text_field = c.get<std::string>("text_field");
    return;
  } catch (const ConfigError&) {  // not a scalar: a list of two, or the list's own error
  }
  const auto fields = c.get<std::vector<std::string>>("text_field");
  if (fields.size() != 2 || fields[0].empty() || fields[1].empty() || fields[0] == fields[1])
    c.fail("text_field", "must be one field name or a list of two different ones (a sentence pair, e.g. "
                         "[premise, hypothesis]), got a list of " + std::to_string(fields.size()));
  d.text_field = fields[0];
  d.pair_field = fields[1];
}

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

DataOptions read_data(const Config& root, bool check_files) {
  DataOptions d;
  if (!root.has("data")) return d;  // bench and info need no data
  d.present = true;
  const Config c = root.child("data");
  d.task = c.get<std::string>("task", d.task);  // checked against the task registry by make_task
  if (d.task == "classification") d.format = c.get_choice("format", {"clinc150", "csv", "tsv", "jsonl"});
  else if (d.task == "squad") d.format = c.get_choice("format", {"squad", "recall"}, "squad");
  else d.format = "";  // another task reads its own format keys
  if (d.format == "clinc150") {
    d.path = c.get<std::string>("path");
    d.train_split = c.get<std::string>("train_split", d.train_split);
    d.eval_split = c.get<std::string>("eval_split", d.eval_split);
    d.test_split = c.get<std::string>("test_split", d.test_split);
    d.include_oos = c.get<bool>("include_oos", false);
    if (check_files) require_file(c, "path", d.path);
  } else if (d.format == "recall") {
    d.recall = read_recall(c);
  } else {
    d.train_path = c.get<std::string>("train_path", "");  // a run served without training (import-hf) has none
    d.eval_path = c.get<std::string>("eval_path", "");
    d.test_path = c.get<std::string>("test_path", "");
    for (const auto& [key, p] : {std::pair{"train_path", d.train_path}, {"eval_path", d.eval_path},
                                 {"test_path", d.test_path}})
      if (check_files && !p.empty()) require_file(c, key, p);
  }
  if (d.task == "classification" && d.format != "clinc150") {
    read_text_fields(c, d);
    d.label_field = c.get<std::string>("label_field", d.label_field);
  }
  if (d.task == "classification" || d.task == "squad")
    d.max_seq_len = at_most(c, "max_seq_len", c.get<int64_t>("max_seq_len", 0), kMaxTokens);
  if (d.max_seq_len < 0) c.fail("max_seq_len", "must be >= 0 (0: model.max_len)");
  if (d.task == "squad") {
    d.doc_stride = at_most(c, "doc_stride", c.get_positive("doc_stride", d.doc_stride), kMaxTokens);
    d.max_query_len = at_most(c, "max_query_len", c.get_positive("max_query_len", d.max_query_len), kMaxTokens);
    d.max_answer_len = at_most(c, "max_answer_len", c.get_positive("max_answer_len", d.max_answer_len), kMaxTokens);
    d.metric = c.get_choice("metric", {"auto", "squad", "cmrc"}, "auto");
  }
  d.on_error = c.get_choice("on_error", {"skip", "fail"}, "skip");
  return d;
}

TrainOptions read_train(const Config& root) {
  TrainOptions t;
  if (!root.has("train")) return t;
  const Config c = root.child("train");
  t.epochs = at_most(c, "epochs", c.get_positive("epochs", t.epochs), kMaxEpochs);
  t.max_steps = at_most(c, "max_steps", c.get<int64_t>("max_steps", 0), kMaxSteps);
  if (t.max_steps < 0) c.fail("max_steps", "must be >= 0");
  t.batch_size = at_most(c, "batch_size", c.get_positive("batch_size", t.batch_size), kMaxBatch);
  t.grad_accum = at_most(c, "grad_accum", c.get_positive("grad_accum", t.grad_accum), kMaxBatch);
  t.lr = c.get<float>("lr", t.lr);
  if (!(t.lr > 0.f)) c.fail("lr", "must be > 0");
  t.gate_lr = c.get<float>("gate_lr", 0.f);
  if (t.gate_lr < 0.f) c.fail("gate_lr", "must be >= 0 (0: the same as lr)");
  t.warmup = c.get<float>("warmup", t.warmup);
  if (t.warmup < 0.f) c.fail("warmup", "must be >= 0");
  if (t.warmup > static_cast<float>(kMaxSteps))
    c.fail("warmup", "must be at most " + std::to_string(kMaxSteps) + " steps");
  t.schedule = c.get_choice("schedule", {"linear", "cosine", "constant"}, "linear");
  t.weight_decay = c.get<float>("weight_decay", t.weight_decay);
  if (t.weight_decay < 0.f) c.fail("weight_decay", "must be >= 0");
  t.clip = c.get<float>("clip", t.clip);
  if (t.clip < 0.f) c.fail("clip", "must be >= 0");
  t.label_smoothing = c.get<float>("label_smoothing", 0.f);
  if (t.label_smoothing < 0.f || t.label_smoothing >= 1.f) c.fail("label_smoothing", "must be in [0, 1)");
  t.seed = c.get<int64_t>("seed", 0);
  t.device = c.get_choice("device", {"cpu", "cuda"}, "cpu") == "cpu" ? Device::CPU : Device::CUDA;
  t.eval_every = at_most(c, "eval_every", c.get<int64_t>("eval_every", 0), kMaxSteps);
  if (t.eval_every < 0) c.fail("eval_every", "must be >= 0");
  t.log_every = at_most(c, "log_every", c.get_positive("log_every", t.log_every), kMaxSteps);
  t.bucket_by_length = c.get<bool>("bucket_by_length", true);
  t.init_from = c.get<std::string>("init_from", "");
  if (!t.init_from.empty()) require_file(c, "init_from", t.init_from);
  t.max_bad_steps = at_most(c, "max_bad_steps", c.get_positive("max_bad_steps", t.max_bad_steps), kMaxSteps);
  t.optimizer = c.get_choice("optimizer", {"adamw", "sgd"}, "adamw");
  t.precision = c.get_choice("precision", {"f32", "bf16"}, "f32") == "bf16" ? Precision::BF16 : Precision::F32;
  t.dp_bucket_mb = c.get<float>("dp_bucket_mb", t.dp_bucket_mb);
  if (!(t.dp_bucket_mb > 0.f && t.dp_bucket_mb <= 4096.f)) c.fail("dp_bucket_mb", "must be in (0, 4096]");
  t.dp_overlap = c.get<bool>("dp_overlap", t.dp_overlap);
  t.dp_timeout_s = c.get<float>("dp_timeout_s", t.dp_timeout_s);
  if (!(t.dp_timeout_s >= 1.f && t.dp_timeout_s <= 1e6f)) c.fail("dp_timeout_s", "must be in [1, 1e6] seconds");
  return t;
}

// The model: block is build_model's (models/encoder_model.cpp), but two of its values only fail there deep into a run
// or not at all: a max_len that cannot hold [CLS] and [SEP] around any text (a question too, for QA), and a
// non-positive layer_norm_eps (a division by zero on a constant row). Checked here, up front.
void check_model(const Config& root, const DataOptions& data) {
  if (!root.has("model")) return;
  const Config m = root.child("model");
  if (m.has("layer_norm_eps") && !(m.get<double>("layer_norm_eps") > 0))
    m.fail("layer_norm_eps", "must be > 0");
  if (!m.has("max_len")) return;
  const int64_t max_len = m.get_positive("max_len");
  if (data.max_seq_len > max_len)
    root.child("data").fail("max_seq_len", "is " + std::to_string(data.max_seq_len) + ", longer than model.max_len " +
                                               std::to_string(max_len) + " (the positions the model has)");
  // the row length the task will use, named by the key that sets it
  const int64_t row_len = data.max_seq_len > 0 ? data.max_seq_len : max_len;
  const auto fail = [&](const std::string& what) {
    if (data.max_seq_len > 0) root.child("data").fail("max_seq_len", what);
    m.fail("max_len", what);
  };
  if (data.task == "squad" && row_len < data.max_query_len + 4)
    fail("must be at least data.max_query_len + 4 = " + std::to_string(data.max_query_len + 4) +
         " to hold [CLS], a question of max_query_len tokens, two [SEP] and any context");
  if (!data.pair_field.empty() && row_len < 5)
    fail("must be at least 5 to hold [CLS], two [SEP] and a token of each text of a pair");
  if (row_len < 3) fail("must be at least 3 to hold [CLS], [SEP] and any text");
}

}  // namespace

RunConfig read_run_config(Config root, const std::string& name, bool check_files) {
  RunConfig rc{root, name, read_tokenizer(root, check_files), read_data(root, check_files), read_train(root)};
  check_model(root, rc.data);
  return rc;
}

void require_train_data(const RunConfig& rc) {
  if (!rc.data.present || rc.data.format == "clinc150" || rc.data.format == "recall" || !rc.data.train_path.empty())
    return;
  const Config data = rc.root.child("data");
  data.get<std::string>("train_path");  // missing: the required-key error, with the key that may be meant for it
  data.fail("train_path", "must name the training data file");
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides, bool check_files) {
  Config root = Config::load_file(path);
  for (const std::string& o : overrides) root.apply_override(o);
  return read_run_config(root, std::filesystem::path(path).stem().string(), check_files);
}

}  // namespace hr
