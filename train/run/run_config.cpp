#include "train/run/run_config.h"

#include <filesystem>

#include "framework/optimizer_registry.h"

namespace hr {

namespace {

// Upper bounds past which a count is a typo, not a plan: they keep step arithmetic (epochs x batches, warm-up
// steps) far from int64 overflow and catch a run that would otherwise loop for centuries.
constexpr int64_t kMaxSteps = 1'000'000'000'000;  // optimizer steps, warm-up, eval and log intervals
constexpr int64_t kMaxEpochs = 1'000'000;
constexpr int64_t kMaxBatch = 1 << 20;            // rows per batch, micro-batches per step
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxTokens = 1 << 20;           // row lengths

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

// The keys every task shares; the task reads the rest (its read_options, train/tasks/task_registry.h).
DataOptions read_data(const Config& root, bool check_files) {
  DataOptions d;
  if (!root.has("data")) return d;  // bench and info need no data
  d.present = true;
  const Config c = root.child("data");
  d.task = c.get<std::string>("task", d.task);
  d.max_seq_len = at_most(c, "max_seq_len", c.get<int64_t>("max_seq_len", 0), kMaxTokens);
  if (d.max_seq_len < 0) c.fail("max_seq_len", "must be >= 0 (0: model.max_len)");
  d.on_error = c.get_choice("on_error", {"skip", "fail"}, "skip");
  d.options = read_task_options(d.task, c, check_files);
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
  t.label_smoothing = c.get_fraction("label_smoothing", 0.f);
  t.seed = c.get<int64_t>("seed", 0);
  t.device = c.get_choice("device", {"cpu", "cuda"}, "cpu") == "cpu" ? Device::CPU : Device::CUDA;
  t.eval_every = at_most(c, "eval_every", c.get<int64_t>("eval_every", 0), kMaxSteps);
  if (t.eval_every < 0) c.fail("eval_every", "must be >= 0");
  t.log_every = at_most(c, "log_every", c.get_positive("log_every", t.log_every), kMaxSteps);
  t.bucket_by_length = c.get<bool>("bucket_by_length", true);
  t.init_from = c.get<std::string>("init_from", "");
  if (!t.init_from.empty()) require_file(c, "init_from", t.init_from);
  t.max_bad_steps = at_most(c, "max_bad_steps", c.get_positive("max_bad_steps", t.max_bad_steps), kMaxSteps);
  t.optimizer = c.get_choice("optimizer", registered_optimizers(), "adamw");
  t.adam_beta1 = c.get_fraction("adam_beta1", t.adam_beta1);
  t.adam_beta2 = c.get_fraction("adam_beta2", t.adam_beta2);
  t.adam_epsilon = c.get<float>("adam_epsilon", t.adam_epsilon);
  if (!(t.adam_epsilon > 0.f && t.adam_epsilon <= 1.f)) c.fail("adam_epsilon", "must be in (0, 1]");
  t.momentum = c.get_fraction("momentum", t.momentum);
  t.nesterov = c.get<bool>("nesterov", t.nesterov);
  if (t.nesterov && t.momentum == 0.f) c.fail("nesterov", "needs train.momentum > 0");
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
  if (data.options)
    if (const std::string problem = data.options->row_length_problem(row_len); !problem.empty()) fail(problem);
  if (row_len < 3) fail("must be at least 3 to hold [CLS], [SEP] and any text");
}

}  // namespace

RunConfig read_run_config(Config root, const std::string& name, bool check_files, bool run_vocab) {
  RunConfig rc{root, name, read_tokenizer(root, check_files && !run_vocab), read_data(root, check_files),
               read_train(root)};
  check_model(root, rc.data);
  return rc;
}

void require_train_data(const RunConfig& rc) {
  if (rc.data.present) rc.data.options->require_train_data(rc.root.child("data"));
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides, bool check_files,
                          bool run_vocab) {
  Config root = Config::load_file(path);
  for (const std::string& o : overrides) root.apply_override(o);
  return read_run_config(root, std::filesystem::path(path).stem().string(), check_files, run_vocab);
}

std::string stored_config_text(const Config& root) {
  YAML::Node n = YAML::Load(root.dump());
  const YAML::Node& lookup = n;  // const: a missing key is not inserted
  const auto absolute = [](YAML::Node v) {
    if (v.IsScalar() && !v.Scalar().empty()) v = std::filesystem::absolute(v.Scalar()).lexically_normal().string();
  };
  for (const auto& [block, keys] : {std::pair{"tokenizer", std::vector<const char*>{"vocab"}},
                                    {"train", {"init_from"}},
                                    {"data", {"path", "train_path", "eval_path", "test_path", "cache_dir"}}}) {
    if (!lookup[block] || !lookup[block].IsMap()) continue;
    for (const char* key : keys) {
      if (!lookup[block][key]) continue;
      YAML::Node v = n[block][key];
      if (v.IsSequence())
        for (YAML::Node item : v) absolute(item);
      else
        absolute(v);
    }
  }
  YAML::Emitter out;
  out << n;
  return std::string(out.c_str()) + "\n";
}

}  // namespace hr
