#include "train/run/train_loop.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "framework/atomic_file.h"
#include "framework/ops.h"
#include "framework/optimizer_registry.h"
#include "framework/random.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "models/attention_heads.h"
#include "models/head_pruning.h"
#include "train/data/json_line.h"
#include "train/run/data_parallel.h"
#include "train/run/run_session.h"
#include "train/tasks/task_registry.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

std::string timestamp() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

// train.gate_lr: the gates may need to travel several units in a short fine-tuning run, far more than the weights, so
// they get their own peak learning rate on the same schedule.
std::vector<float> lr_scales(const EncoderModel& model, const NamedTensors& params, const TrainOptions& t) {
  std::set<const TensorImpl*> gates;
  for (size_t i = 0; i < model.num_layers(); ++i)
    if (const AttentionHeads* h = model.layer(i).heads())
      for (const Tensor& g : h->gate_parameters()) gates.insert(g.impl());
  std::vector<float> s;
  for (const auto& [name, p] : params) s.push_back(gates.count(p.impl()) && t.gate_lr > 0.f ? t.gate_lr / t.lr : 1.f);
  return s;
}

// train.optimizer from the registry (framework/optimizer_registry.h); weight decay on matrices only.
std::unique_ptr<Optimizer> make_optimizer(const TrainOptions& t, const EncoderModel& model) {
  const NamedTensors params = model.named_parameters();
  return build_optimizer(t.optimizer, {params, matrix_decay_flags(params), lr_scales(model, params, t)},
                         {t.weight_decay, t.adam_beta1, t.adam_beta2, t.adam_epsilon, t.momentum, t.nesterov});
}

// The batches of one epoch, a pure function of (seed, epoch): shuffled rows; with bucketing, chunks of 50 batches are
// sorted by length before being cut (less padding) and the batches shuffled again.
std::vector<std::vector<int64_t>> epoch_batches(const Task& task, int64_t epoch, int64_t seed, int64_t batch,
                                                bool bucket) {
  std::vector<int64_t> rows(static_cast<size_t>(task.num_train()));
  std::iota(rows.begin(), rows.end(), 0);
  std::mt19937_64 rng(static_cast<uint64_t>(seed) * 1000003ull + static_cast<uint64_t>(epoch));
  std::shuffle(rows.begin(), rows.end(), rng);
  if (bucket) {
    const size_t chunk = static_cast<size_t>(batch) * 50;
    for (size_t at = 0; at < rows.size(); at += chunk) {
      auto end = rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), at + chunk));
      std::stable_sort(rows.begin() + static_cast<std::ptrdiff_t>(at), end,
                       [&](int64_t a, int64_t b) { return task.train_length(a) < task.train_length(b); });
    }
  }
  std::vector<std::vector<int64_t>> out;
  for (size_t at = 0; at < rows.size(); at += static_cast<size_t>(batch))
    out.emplace_back(rows.begin() + static_cast<std::ptrdiff_t>(at),
                     rows.begin() +
                         static_cast<std::ptrdiff_t>(std::min(rows.size(), at + static_cast<size_t>(batch))));
  if (bucket) std::shuffle(out.begin(), out.end(), rng);
  return out;
}

// Gate open probabilities per layer (an empty row for a layer without gates) and the expected number of open heads.
nlohmann::json gate_report(const EncoderModel& model) {
  const HeadScores p = gate_open_probabilities(model);
  double expected = 0;
  bool any = false;
  for (const auto& row : p) {
    any = any || !row.empty();
    for (float v : row) expected += v;
  }
  if (!any) return nullptr;
  return {{"open_probability", p}, {"expected_open_heads", expected}};
}

// Which attention path trains which layers (docs/DESIGN.md), one line a path: "attention: fused kernel: layers 0 1 2",
// "attention: unfused path where the talking heads mix ...: layers 3"; empty without heads.
std::string attention_paths(const EncoderModel& model, Device d) {
  std::map<std::string, std::string> layers_of;  // path -> its layers
  for (size_t i = 0; i < model.num_layers(); ++i) {
    const AttentionHeads* h = model.layer(i).heads();
    if (!h || h->num_heads() == 0) continue;
    const char* why = h->unfused_reason(false, d);
    std::string& layers = layers_of[why ? std::string("unfused path where the ") + why + ":" : "fused kernel:"];
    layers += ' ';  // appended apart: GCC 12's -Wrestrict misfires on " " + std::to_string(i) (its bug 105329)
    layers += std::to_string(i);
  }
  std::string out;
  for (const auto& [path, layers] : layers_of) out += "attention: " + path + " layers" + layers + "\n";
  return out;
}

// SIGINT, SIGTERM (a scheduler's preemption), SIGHUP (the terminal or ssh session closed): the loop saves a checkpoint
// at the next step boundary and stops. The handler re-arms the default action, so a second signal ends the process at
// once.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);
}

// Temp files of checkpoint saves that a killed process left behind ("<file>.tmp-<pid>" of a pid no longer alive).
void remove_stale_temp_files(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || name.find_first_not_of("0123456789", at + 5) != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(at + 5)));
    if (pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) fs::remove(e.path());
  }
}

// A resumed run continues from its last checkpoint: rows that a killed run logged after it would appear twice.
// Returns the tokens seen by the last kept row that counted them, where the resumed run's count goes on.
int64_t drop_metrics_after(const std::string& path, int64_t step) {
  if (!regular_file_or_absent(path)) return 0;  // a link to /dev/full would be read forever
  std::ifstream in(path);
  std::string kept;
  int64_t tokens = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = parse_json_line(line).value;
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step)
      continue;
    if (j.is_object() && j.contains("tokens") && j["tokens"].is_number_integer()) tokens = j["tokens"].get<int64_t>();
    kept += line + "\n";
  }
  write_text_atomically(path, kept);
  return tokens;
}

// Whether the log says the run ended at `step`: its "done" row, or its test row (logged after the last evaluation
// and save; runs from before the "done" row have only that).
bool logged_end_at(const std::string& path, int64_t step) {
  if (!regular_file_or_absent(path)) return false;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = parse_json_line(line).value;
    if (j.is_object() && (j.contains("done") || j.contains("test")) && j.contains("step") &&
        j["step"].is_number_integer() && j["step"].get<int64_t>() == step)
      return true;
  }
  return false;
}

}  // namespace

TrainLoop::TrainLoop(const TrainArgs& args) : resume_(!args.resume_dir.empty()), quiet_(args.quiet) {
  open_run(args);
  build_model();
  if (lead_) {
    lock_.emplace(dir_);
    // a new run's directory may have received a run since it was checked, from a process that has finished
    if (!resume_ && fs::exists(dir_ + "/config.yaml"))
      throw UsageError(dir_ + " already holds a run: continue it with --resume " + dir_ + ", or choose another --out");
  }
  build_optimizer();
  load_resume_state();
  if (resume_ && st_.step >= total_steps_) {
    // Resuming a finished run would evaluate and test it again and log those rows twice; one killed after its last
    // step but before its end (the last evaluation, save or test) goes on to finish them.
    double done = lead_ && logged_end_at(dir_ + "/metrics.jsonl", st_.step) ? 1 : 0;
    comm_->all_reduce_host(&done, 1, ReduceOp::Max);
    finished_ = done > 0;
    if (finished_) {
      if (lead_)
        std::cout << dir_ << " finished at step " << st_.step << " of " << total_steps_
                  << ": nothing to resume, nothing written (to train further: --set train.max_steps=N, N > "
                  << st_.step << ")\n";
      return;
    }
  }
  // Everything above validated the config (a resume's --set against its checkpoint too): only now is the run
  // directory written, so a refused resume leaves it as it was.
  write_run_dir();
  // every rank starts from rank 0's weights (they agree already, as the same seed and files made them: this makes
  // sure); the optimizer state came from the same checkpoint file on every rank
  broadcast_parameters(*comm_, model_->parameters());
  if (lead_)
    std::cout << "run directory: " << dir_ << "\n"
              << "model: " << model_->num_parameters() << " parameters, " << model_->num_layers() << " layers; "
              << task_->num_train() << " training rows, " << total_steps_ << " steps on "
              << device_name(rc_.train.device) << (comm_->size() > 1 ? "; data parallel: " + comm_->name() : "")
              << "\n" << attention_paths(*model_, rc_.train.device);
  progress_ = std::make_unique<Progress>(total_steps_, quiet_, !lead_);
}

void TrainLoop::open_run(const TrainArgs& args) {
  if (resume_) {
    // a resume advances RUN itself: an --out beside it would be silently ignored
    if (!args.out_dir.empty())
      throw UsageError("--resume " + args.resume_dir + " continues that run in place and takes no --out; to continue "
                       "a copy, copy the directory first (cp -r " + args.resume_dir + " " + args.out_dir +
                       ") and resume the copy");
    dir_ = args.resume_dir;
    HR_CHECK(fs::exists(dir_ + "/config.yaml"), dir_ + " is not a headroom run directory (no config.yaml)");
    // the checkpoint's token embeddings are rows of the run's vocabulary: one learned again would renumber them
    if (!fs::exists(dir_ + "/vocab.txt"))
      throw UsageError(dir_ + "/vocab.txt is missing: the checkpoint's token ids are rows of that vocabulary, which "
                       "cannot be rebuilt; restore it from a copy of the run");
    regular_file_or_absent(dir_ + "/metrics.jsonl");  // appended to and rewritten: a link to a device is refused
    rc_ = load_run_config(dir_ + "/config.yaml", args.overrides, /*check_files=*/true, /*run_vocab=*/true);
  } else {
    rc_ = load_run_config(args.config_path, args.overrides);
    dir_ = args.out_dir.empty() ? "runs/" + rc_.name + "-" + timestamp() : args.out_dir;
    if (fs::exists(dir_ + "/config.yaml"))
      throw UsageError(dir_ + " already holds a run: continue it with --resume " + dir_ + ", or choose another --out");
  }
  require_train_data(rc_);
  const TrainOptions& t = rc_.train;
  // the processes of an mpirun job (one alone otherwise); every rank has checked --out above before rank 0 writes
  comm_ = make_communicator(t.device, t.dp_timeout_s);
  lead_ = comm_->rank() == 0;
  comm_->barrier();
  if (t.device == Device::CUDA) backend(Device::CUDA);  // a missing GPU is a clear error now, not mid-run
  config_file_ = resume_ ? dir_ + "/config.yaml" : args.config_path;
  if (const std::string w = check_precision(t.device, t.precision, config_file_ + ": train.precision");
      !w.empty() && lead_)
    std::cerr << w << "\n";
}

void TrainLoop::build_model() {
  const TrainOptions& t = rc_.train;
  // the task files (labels.txt) of a resumed run, or of the run train.init_from comes from: its label ids are the
  // rows of the classifier it initialises (an imported checkpoint keeps its own label order)
  const std::string task_dir = resume_ ? dir_ : t.init_from.empty() ? "" : fs::path(t.init_from).parent_path().string();
  task_ = make_task(rc_.root, TaskContext{rc_.data, task_dir, true, dir_});
  // train.init_from's token embeddings are rows of the vocabulary beside it (a run's, an import's): a new run
  // tokenises with that one, and a tokenizer.vocab that differs is an error
  const std::string init_vocab = resume_ || task_dir.empty() ? "" : task_dir + "/vocab.txt";
  const bool has_init_vocab = !init_vocab.empty() && fs::exists(init_vocab);
  const std::string vocab = resume_                                            ? dir_ + "/vocab.txt"
                            : has_init_vocab && rc_.tokenizer.vocab.empty() ? init_vocab
                                                                            : "";
  tok_ = make_tokenizer(rc_.tokenizer, *task_, vocab);
  if (has_init_vocab && !rc_.tokenizer.vocab.empty() && Vocab::load(init_vocab).tokens() != tok_->vocab().tokens())
    rc_.root.child("tokenizer").fail("vocab", "'" + rc_.tokenizer.vocab +
                                                  "' is not the vocabulary of train.init_from (" + init_vocab +
                                                  "), whose token embeddings the run loads: leave tokenizer.vocab out "
                                                  "to use that one");
  manual_seed(static_cast<uint64_t>(t.seed));
  ModelDims dims = task_->dims();
  dims.vocab_size = tok_->vocab().size();
  model_ = hr::build_model(rc_.root.child("model"), dims);
  rc_.root.check_all_read();
  task_->encode(*tok_, model_->max_len());
  model_->to(t.device);
  model_->set_precision(t.precision);
  if (!t.init_from.empty() && !resume_) {
    const std::string note = load_weights(t.init_from, *model_);
    if (!note.empty() && lead_) std::cerr << note << "\n";
  }
}

void TrainLoop::build_optimizer() {
  const TrainOptions& t = rc_.train;
  optimizer_ = make_optimizer(t, *model_);
  step_ = std::make_unique<TrainingStep>(*model_, *optimizer_, StepOptions{t.grad_accum, t.clip, t.precision});
  if (comm_->size() > 1)
    reducer_ = std::make_unique<GradientReducer>(*comm_, model_->parameters(), step_->gradients(), t.dp_bucket_mb,
                                                 t.dp_overlap);
  step_->set_sync(reducer_.get());

  const int64_t batches_per_epoch = (task_->num_train() + t.batch_size - 1) / t.batch_size;
  if (t.grad_accum > batches_per_epoch)
    rc_.root.child("train").fail("grad_accum", "is " + std::to_string(t.grad_accum) +
                                                   ", more micro-batches than an epoch has (" +
                                                   std::to_string(batches_per_epoch) + " of batch_size " +
                                                   std::to_string(t.batch_size) + ")");
  const int64_t steps_per_epoch = std::max<int64_t>(1, batches_per_epoch / t.grad_accum);
  total_steps_ = t.max_steps > 0 ? t.max_steps : t.epochs * steps_per_epoch;
  sched_.peak = t.lr;
  sched_.total = total_steps_;
  sched_.warmup = t.warmup < 1.f ? static_cast<int64_t>(t.warmup * static_cast<float>(total_steps_))
                                 : static_cast<int64_t>(t.warmup);
  sched_.decay = t.schedule == "linear"   ? LrSchedule::Linear
                 : t.schedule == "cosine" ? LrSchedule::Cosine
                                          : LrSchedule::Constant;
}

void TrainLoop::load_resume_state() {
  last_ckpt_ = dir_ + "/checkpoint-last.safetensors";
  best_ckpt_ = dir_ + "/checkpoint-best.safetensors";
  st_.rng_seed = static_cast<uint64_t>(rc_.train.seed);
  if (!resume_) return;
  HR_CHECK(fs::exists(last_ckpt_), "cannot resume: no " + last_ckpt_);
  record_ = model_record(rc_.root.child("model"), dir_);
  st_ = load_checkpoint(last_ckpt_, *model_, optimizer_.get(), &record_);
  if (!st_.note.empty() && lead_) std::cerr << "note: " << st_.note << "\n";
  global_generator() = Generator{st_.rng_seed, st_.rng_offset};
}

void TrainLoop::write_run_dir() {
  const std::string metrics_path = dir_ + "/metrics.jsonl";
  if (!lead_) return;
  // the resolved config, --set overrides of a resume included, so that the next resume keeps them; writing it also
  // finds a read-only run directory before any step is spent
  write_text_atomically(dir_ + "/config.yaml", stored_config_text(rc_.root));
  if (!resume_) {
    tok_->vocab().save(dir_ + "/vocab.txt");
    task_->save(dir_);
    record_ = model_record(rc_.root.child("model"), dir_);
  }
  remove_stale_temp_files(dir_);
  if (resume_) {
    tokens_seen_ = drop_metrics_after(metrics_path, st_.step);
    std::cout << "resuming " << dir_ << " at step " << st_.step << "\n";
  }
  metrics_.open(metrics_path, resume_ ? std::ios::app : std::ios::trunc);
  HR_CHECK(metrics_.good(), "cannot write " + metrics_path);
  log_json({{"step", st_.step}, {"session", run_session(rc_.train, comm_->size(), resume_)}});
}

void TrainLoop::log_json(const nlohmann::json& j) {
  if (!lead_) return;
  metrics_ << j.dump() << "\n";
  metrics_.flush();
  HR_CHECK(metrics_.good(), "cannot write " + dir_ + "/metrics.jsonl (disk full?)");
}

void TrainLoop::save(const std::string& path) {
  if (!lead_) return;
  st_.rng_seed = global_generator().seed;
  st_.rng_offset = global_generator().offset;
  save_checkpoint(path, *model_, optimizer_.get(), st_, &record_);
}

// Evaluation runs on rank 0 alone; the other ranks wait for it in their next collective.
void TrainLoop::evaluate() {
  if (!lead_ || !task_->has_split("eval")) return;
  const TrainOptions& t = rc_.train;
  const auto eval_start = Clock::now();
  EvalResult r = task_->evaluate(*model_, "eval", t.device, t.batch_size * 2);
  nlohmann::json j = {{"step", st_.step}, {"eval", r.metrics},
                      {"eval_s", std::chrono::duration<double>(Clock::now() - eval_start).count()},
                      {"elapsed_s", elapsed_s()}};
  j["primary"] = r.primary;  // the metric that picks the best checkpoint
  if (!r.scorer.empty()) j["metric"] = r.scorer;
  if (nlohmann::json g = gate_report(*model_); !g.is_null()) j["gates"] = g;
  log_json(j);
  std::string line = "step " + std::to_string(st_.step) + " eval:";
  for (const auto& [k, v] : r.metrics) line += " " + k + " " + std::to_string(v);
  progress_->message(line);
  if (r.primary_value() > st_.best_metric) {
    st_.best_metric = r.primary_value();
    st_.best_step = st_.step;
    save(best_ckpt_);
  }
}

int TrainLoop::run() {
  if (finished_) return 0;
  g_stop_signal = 0;
  for (const int sig : kStopSignals) std::signal(sig, on_stop_signal);
  struct RestoreSignals {
    ~RestoreSignals() {
      for (const int sig : kStopSignals) std::signal(sig, SIG_DFL);
    }
  } restore_signals;

  const TrainOptions& t = rc_.train;
  model_->train();
  start_ = window_start_ = Clock::now();
  while (st_.step < total_steps_) {
    task_->start_epoch(st_.epoch, static_cast<uint64_t>(t.seed));
    const auto batches = epoch_batches(*task_, st_.epoch, t.seed, t.batch_size, t.bucket_by_length);
    const int64_t epoch_steps = std::max<int64_t>(1, static_cast<int64_t>(batches.size()) / t.grad_accum);
    while (st_.batch_in_epoch < epoch_steps && st_.step < total_steps_) {
      if (const std::optional<int> code = stop_requested()) return *code;
      if (const std::optional<int> code = train_step(batches)) return *code;
    }
    if (st_.batch_in_epoch >= epoch_steps) end_epoch();
  }
  if (bad_steps_ == 0) {
    // the last step is evaluated unless it just was (a multiple of eval_every, or an epoch's end without it): a run
    // that max_steps cuts off mid-epoch is scored and has a best checkpoint too
    if (t.eval_every > 0 ? st_.step % t.eval_every != 0 : st_.batch_in_epoch > 0) evaluate();
    save(last_ckpt_);
  }
  test();
  const double total_s = elapsed_s();
  log_json({{"step", st_.step}, {"done", true}, {"elapsed_s", total_s}});
  progress_->message("done in " + std::to_string(static_cast<int>(total_s)) + " s; run directory " + dir_);
  comm_->barrier();  // the other ranks wait (asleep) for rank 0's last evaluation and save
  return 0;
}

// Between two steps, so the last one is fully logged (and saved, when the loop saves); every rank stops at the same
// step.
std::optional<int> TrainLoop::stop_requested() {
  double stop = g_stop_signal;
  if (comm_->size() > 1) comm_->all_reduce_host(&stop, 1, ReduceOp::Max);
  if (stop == 0) return std::nullopt;
  g_stop_signal = static_cast<int>(stop);
  const std::string name = g_stop_signal == SIGINT ? "SIGINT" : g_stop_signal == SIGHUP ? "SIGHUP" : "SIGTERM";
  if (bad_steps_ == 0) {
    save(last_ckpt_);
    progress_->message("stopped by " + name + " after step " + std::to_string(st_.step) + "; saved " + last_ckpt_ +
                       "; continue with: headroom train --resume " + dir_);
  } else {
    progress_->message("stopped by " + name + " during a streak of non-finite steps; the last good checkpoint is " +
                       last_ckpt_);
  }
  return 128 + g_stop_signal;
}

std::optional<int> TrainLoop::train_step(const std::vector<std::vector<int64_t>>& batches) {
  const TrainOptions& t = rc_.train;
  const float lr = sched_.at(st_.step);
  const StepResult r = step_->run(
      [&](int64_t micro) {
        const size_t bi = static_cast<size_t>(st_.batch_in_epoch * t.grad_accum + micro) % batches.size();
        const Batch global = task_->make_batch(batches[bi], t.device);
        window_tokens_ += global.tokens;
        auto loss_of = [&](const Batch& b) {
          Tensor loss = task_->loss(*model_, b, t.label_smoothing);
          if (Tensor p = model_->penalty(); p.defined()) loss = add(loss, p);
          return loss;
        };
        if (comm_->size() == 1) return loss_of(global);
        return shard_loss(*comm_, *task_, global, static_cast<int64_t>(batches[bi].size()), loss_of);
      },
      lr);
  ++st_.batch_in_epoch;
  ++st_.step;
  if (!r.applied) {
    ++bad_steps_;
    progress_->message("step " + std::to_string(st_.step) + ": non-finite loss or gradient; step skipped (" +
                       std::to_string(bad_steps_) + " in a row)");
    log_json({{"step", st_.step}, {"skipped", "non-finite loss or gradient"}});
    if (bad_steps_ < t.max_bad_steps) return std::nullopt;
    progress_->message("stopping: " + std::to_string(bad_steps_) + " consecutive steps with a non-finite loss. " +
                       (fs::exists(last_ckpt_) ? "The last good checkpoint is " + last_ckpt_ + "."
                                               : "No checkpoint had been saved yet."));
    return 3;
  }
  bad_steps_ = 0;
  log_step(r, lr);
  if (t.eval_every > 0 && st_.step % t.eval_every == 0) {
    const auto paused = Clock::now();  // tokens/s and step_ms count training alone
    evaluate();
    save(last_ckpt_);
    window_start_ += Clock::now() - paused;
  }
  return std::nullopt;
}

void TrainLoop::log_step(const StepResult& r, float lr) {
  const TrainOptions& t = rc_.train;
  window_loss_ += r.loss;
  window_grad_norm_ += r.grad_norm;
  window_grad_max_ = std::max(window_grad_max_, static_cast<double>(r.grad_norm));
  ++window_steps_;
  const bool log_now = st_.step % t.log_every == 0 || st_.step == total_steps_;
  const double secs = std::chrono::duration<double>(Clock::now() - window_start_).count();
  const double elapsed = elapsed_s();
  const double tps = secs > 0 ? static_cast<double>(window_tokens_) / secs : 0;
  const double eta = elapsed / static_cast<double>(st_.step) * static_cast<double>(total_steps_ - st_.step);
  const double n = static_cast<double>(window_steps_);
  progress_->update(st_.step, static_cast<float>(window_loss_ / n), lr, tps, eta, log_now);
  if (!log_now) return;
  tokens_seen_ += window_tokens_;
  log_json({{"step", st_.step}, {"epoch", st_.epoch}, {"loss", window_loss_ / n}, {"lr", lr}, {"tokens_per_s", tps},
            {"step_ms", 1e3 * secs / n}, {"tokens", tokens_seen_}, {"grad_norm", window_grad_norm_ / n},
            {"grad_norm_max", window_grad_max_}, {"elapsed_s", elapsed}});
  window_start_ = Clock::now();
  window_tokens_ = 0;
  window_loss_ = window_grad_norm_ = window_grad_max_ = 0;
  window_steps_ = 0;
}

void TrainLoop::end_epoch() {
  ++st_.epoch;
  st_.batch_in_epoch = 0;
  // during a streak of non-finite steps the weights are suspect: keep the last good checkpoint
  if (bad_steps_ == 0) {
    const auto paused = Clock::now();
    if (rc_.train.eval_every == 0) evaluate();
    save(last_ckpt_);
    window_start_ += Clock::now() - paused;
  }
}

// The final report: the best checkpoint on the test split (or the last one when there is no eval split).
void TrainLoop::test() {
  if (!task_->has_split("test")) return;
  const TrainOptions& t = rc_.train;
  const bool best = fs::exists(best_ckpt_);
  if (best) load_checkpoint(best_ckpt_, *model_, nullptr);
  EvalResult r = task_->evaluate(*model_, "test", t.device, t.batch_size * 2);
  log_json({{"step", st_.step}, {"test", r.metrics}, {"checkpoint", best ? "best" : "last"},
            {"elapsed_s", elapsed_s()}});
  std::string line = "test (" + std::string(best ? "best" : "last") + " checkpoint):";
  for (const auto& [k, v] : r.metrics) line += " " + k + " " + std::to_string(v);
  progress_->message(line);
}

}  // namespace hr
