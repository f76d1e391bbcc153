#include "train/run/run_config.h"

#include <filesystem>

namespace hr {

namespace {

TokenizerOptions read_tokenizer(const Config& root, bool check_files) {
  TokenizerOptions t;
  auto c = root.optional_child("tokenizer");
  if (!c) return t;
  t.vocab = c->get<std::string>("vocab", "");
  t.vocab_size = c->get_positive("vocab_size", t.vocab_size);
  t.lower_case = c->get<bool>("lower_case", t.lower_case);
  if (check_files && !t.vocab.empty() && !std::filesystem::exists(t.vocab)) c->fail("vocab", "no such file '" + t.vocab + "'");
  return t;
}

DataOptions read_data(const Config& root, bool check_files) {
  DataOptions d;
  if (!root.has("data")) return d;  // bench and info need no data
  d.present = true;
  const Config c = root.child("data");
  d.task = c.get<std::string>("task", d.task);  // checked against the task registry by make_task
  if (d.task == "classification") d.format = c.get_choice("format", {"clinc150", "csv", "tsv", "jsonl"});
  else if (d.task == "squad") d.format = c.get_choice("format", {"squad"}, "squad");
  else d.format = "";  // another task reads its own format keys
  if (d.format == "clinc150") {
    d.path = c.get<std::string>("path");
    d.train_split = c.get<std::string>("train_split", d.train_split);
    d.eval_split = c.get<std::string>("eval_split", d.eval_split);
    d.test_split = c.get<std::string>("test_split", d.test_split);
    d.include_oos = c.get<bool>("include_oos", false);
    if (check_files && !std::filesystem::exists(d.path)) c.fail("path", "no such file '" + d.path + "'");
  } else {
    d.train_path = c.get<std::string>("train_path");
    d.eval_path = c.get<std::string>("eval_path", "");
    d.test_path = c.get<std::string>("test_path", "");
    for (const auto& [key, p] : {std::pair{"train_path", d.train_path}, {"eval_path", d.eval_path},
                                 {"test_path", d.test_path}})
      if (check_files && !p.empty() && !std::filesystem::exists(p)) c.fail(key, "no such file '" + p + "'");
  }
  if (d.task == "classification" && d.format != "clinc150") {
    d.text_field = c.get<std::string>("text_field", d.text_field);
    d.label_field = c.get<std::string>("label_field", d.label_field);
  }
  if (d.task == "squad") {
    d.doc_stride = c.get_positive("doc_stride", d.doc_stride);
    d.max_query_len = c.get_positive("max_query_len", d.max_query_len);
    d.max_answer_len = c.get_positive("max_answer_len", d.max_answer_len);
  }
  d.on_error = c.get_choice("on_error", {"skip", "fail"}, "skip");
  return d;
}

TrainOptions read_train(const Config& root) {
  TrainOptions t;
  if (!root.has("train")) return t;
  const Config c = root.child("train");
  t.epochs = c.get_positive("epochs", t.epochs);
  t.max_steps = c.get<int64_t>("max_steps", 0);
  if (t.max_steps < 0) c.fail("max_steps", "must be >= 0");
  t.batch_size = c.get_positive("batch_size", t.batch_size);
  t.grad_accum = c.get_positive("grad_accum", t.grad_accum);
  t.lr = c.get<float>("lr", t.lr);
  if (!(t.lr > 0.f)) c.fail("lr", "must be > 0");
  t.gate_lr = c.get<float>("gate_lr", 0.f);
  if (t.gate_lr < 0.f) c.fail("gate_lr", "must be >= 0 (0: the same as lr)");
  t.warmup = c.get<float>("warmup", t.warmup);
  if (t.warmup < 0.f) c.fail("warmup", "must be >= 0");
  t.schedule = c.get_choice("schedule", {"linear", "cosine", "constant"}, "linear");
  t.weight_decay = c.get<float>("weight_decay", t.weight_decay);
  t.clip = c.get<float>("clip", t.clip);
  if (t.clip < 0.f) c.fail("clip", "must be >= 0");
  t.label_smoothing = c.get<float>("label_smoothing", 0.f);
  if (t.label_smoothing < 0.f || t.label_smoothing >= 1.f) c.fail("label_smoothing", "must be in [0, 1)");
  t.seed = c.get<int64_t>("seed", 0);
  t.device = c.get_choice("device", {"cpu", "cuda"}, "cpu") == "cpu" ? Device::CPU : Device::CUDA;
  t.eval_every = c.get<int64_t>("eval_every", 0);
  if (t.eval_every < 0) c.fail("eval_every", "must be >= 0");
  t.log_every = c.get_positive("log_every", t.log_every);
  t.bucket_by_length = c.get<bool>("bucket_by_length", true);
  t.init_from = c.get<std::string>("init_from", "");
  if (!t.init_from.empty() && !std::filesystem::exists(t.init_from))
    c.fail("init_from", "no such file '" + t.init_from + "'");
  t.max_bad_steps = c.get_positive("max_bad_steps", t.max_bad_steps);
  t.optimizer = c.get_choice("optimizer", {"adamw", "sgd"}, "adamw");
  return t;
}

}  // namespace

RunConfig read_run_config(Config root, const std::string& name, bool check_files) {
  RunConfig rc{root, name, read_tokenizer(root, check_files), read_data(root, check_files), read_train(root)};
  return rc;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides, bool check_files) {
  Config root = Config::load_file(path);
  for (const std::string& o : overrides) root.apply_override(o);
  return read_run_config(root, std::filesystem::path(path).stem().string(), check_files);
}

}  // namespace hr
