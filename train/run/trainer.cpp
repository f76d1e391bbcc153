#include "train/run/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "framework/atomic_file.h"
#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "framework/random.h"
#include "models/head_pruning.h"
#include "train/run/data_parallel.h"
#include "train/run/gradient_reducer.h"
#include "train/run/run_lock.h"
#include "train/run/run_session.h"
#include "train/run/training_step.h"
#include "train/tasks/task_registry.h"
#include "train/tokenizer/wordpiece_trainer.h"

namespace fs = std::filesystem;

namespace hr {

namespace {

using Clock = std::chrono::steady_clock;

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

// The run's vocab.txt when there is one, else tokenizer.vocab, else one learned from the task's training texts.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& t, const Task& task, const std::string& run_vocab) {
  BasicTokenizer basic(t.lower_case, t.strip_accents);
  if (!run_vocab.empty() && fs::exists(run_vocab)) return std::make_unique<Tokenizer>(Vocab::load(run_vocab), basic);
  if (!t.vocab.empty()) return std::make_unique<Tokenizer>(Vocab::load(t.vocab), basic);
  const std::vector<std::string> texts = task.training_texts();
  HR_CHECK(!texts.empty(), "tokenizer.vocab is required: there are no training texts to learn a vocabulary from");
  std::cerr << "learning a WordPiece vocabulary of " << t.vocab_size << " tokens from the training texts\n";
  return std::make_unique<Tokenizer>(learn_wordpiece_vocab(texts, static_cast<int>(t.vocab_size), basic), basic);
}

std::unique_ptr<Optimizer> make_optimizer(const TrainOptions& t, const EncoderModel& model) {
  const NamedTensors params = model.named_parameters();
  if (t.optimizer == "sgd") return std::make_unique<SGD>(params, matrix_decay_flags(params), 0.9f, t.weight_decay);
  return std::make_unique<AdamW>(params, matrix_decay_flags(params), AdamWOptions{t.adam_beta1, t.adam_beta2, t.adam_epsilon, t.weight_decay},
                                 lr_scales(model, params, t));
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
                     rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), at + static_cast<size_t>(batch))));
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

// SIGINT / SIGTERM (a scheduler's preemption): the loop saves a checkpoint at the next step boundary and stops. The
// handler re-arms the default action, so a second signal ends the process at once.
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
  std::ifstream in(path);
  if (!in) return 0;
  std::string kept;
  int64_t tokens = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step) continue;
    if (j.is_object() && j.contains("tokens") && j["tokens"].is_number_integer()) tokens = j["tokens"].get<int64_t>();
    kept += line + "\n";
  }
  write_file_atomically(path, [&](std::ostream& f) { f << kept; });
  return tokens;
}

class Progress {
 public:
  // silent: a data-parallel rank other than 0 prints nothing
  Progress(int64_t total, bool quiet, bool silent = false)
      : total_(total), tty_(!quiet && !silent && isatty(fileno(stdout))), quiet_(quiet || silent), silent_(silent) {}
  void update(int64_t step, float loss, float lr, double tokens_per_s, double eta_s, bool log_line) {
    if (tty_) {
      const int width = 30;
      const int filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, total_)));
      std::printf("\r[%s%s] %lld/%lld loss %.4f lr %.2e %.0f tok/s ETA %s   ", std::string(filled, '#').c_str(),
                  std::string(width - filled, '.').c_str(), static_cast<long long>(step),
                  static_cast<long long>(total_), loss, lr, tokens_per_s, eta(eta_s).c_str());
      std::fflush(stdout);
    } else if (log_line && !quiet_) {
      std::printf("step %lld/%lld loss %.4f lr %.3e %.0f tok/s ETA %s\n", static_cast<long long>(step),
                  static_cast<long long>(total_), loss, lr, tokens_per_s, eta(eta_s).c_str());
      std::fflush(stdout);
    }
  }
  void message(const std::string& m) {
    if (silent_) return;
    if (tty_) std::printf("\r%-100s\n", m.c_str());
    else std::printf("%s\n", m.c_str());
    std::fflush(stdout);
  }

 private:
  static std::string eta(double s) {
    char buf[32];
    const int t = static_cast<int>(s);
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, (t / 60) % 60, t % 60);
    return buf;
  }
  int64_t total_;
  bool tty_, quiet_, silent_;
};

}  // namespace

LoadedRun load_run(const std::string& dir, const std::string& which, bool load_data,
                   const std::vector<std::string>& overrides) {
  LoadedRun r;
  r.dir = dir;
  HR_CHECK(fs::exists(dir + "/config.yaml"), dir + " is not a headroom run directory (no config.yaml)");
  r.config = load_run_config(dir + "/config.yaml", overrides, /*check_files=*/load_data);
  // the run's own vocabulary, never one learned again from whatever the data file holds now
  HR_CHECK(fs::exists(dir + "/vocab.txt"), dir + "/vocab.txt is missing: the run's vocabulary cannot be rebuilt");
  r.task = make_task(r.config.root, TaskContext{r.config.data, dir, load_data, ""});
  r.tokenizer = make_tokenizer(r.config.tokenizer, *r.task, dir + "/vocab.txt");
  ModelDims dims = r.task->dims();
  dims.vocab_size = r.tokenizer->vocab().size();
  r.model = build_model(r.config.root.child("model"), dims);
  r.task->encode(*r.tokenizer, r.model->max_len());
  r.config.root.check_all_read();
  if (!which.empty()) {
    const std::string ckpt = dir + "/checkpoint-" + which + ".safetensors";
    HR_CHECK(fs::exists(ckpt), "no checkpoint " + ckpt);
    if (const std::string note = load_checkpoint(ckpt, *r.model, nullptr).note; !note.empty())
      std::cerr << "note: " << note << "\n";
  }
  r.model->to(r.config.train.device);
  const TrainOptions& t = r.config.train;
  if (const std::string w = check_precision(t.device, t.precision, dir + "/config.yaml: train.precision (or --precision)");
      !w.empty())
    std::cerr << w << "\n";
  r.model->set_precision(t.precision);
  return r;
}

int train_command(const TrainArgs& args) {
  const bool resume = !args.resume_dir.empty();
  std::string dir;
  RunConfig rc;
  if (resume) {
    dir = args.resume_dir;
    HR_CHECK(fs::exists(dir + "/config.yaml"), dir + " is not a headroom run directory (no config.yaml)");
    rc = load_run_config(dir + "/config.yaml", args.overrides);
  } else {
    rc = load_run_config(args.config_path, args.overrides);
    dir = args.out_dir.empty() ? "runs/" + rc.name + "-" + timestamp() : args.out_dir;
    if (fs::exists(dir + "/config.yaml"))
      throw UsageError(dir + " already holds a run: continue it with --resume " + dir + ", or choose another --out");
  }
  require_train_data(rc);
  const TrainOptions& t = rc.train;
  // the processes of an mpirun job (one alone otherwise); every rank has checked --out above before rank 0 writes
  const std::unique_ptr<Communicator> comm = make_communicator(t.device, t.dp_timeout_s);
  const bool lead = comm->rank() == 0;  // writes the run directory, logs, evaluates
  comm->barrier();
  if (t.device == Device::CUDA) backend(Device::CUDA);  // a missing GPU is a clear error now, not mid-run
  const std::string config_file = resume ? dir + "/config.yaml" : args.config_path;
  if (const std::string w = check_precision(t.device, t.precision, config_file + ": train.precision"); !w.empty() && lead)
    std::cerr << w << "\n";

  // ---- data, tokenizer, model
  // the task files (labels.txt) of a resumed run, or of the run train.init_from comes from: its label ids are the
  // rows of the classifier it initialises (an imported checkpoint keeps its own label order)
  const std::string task_dir = resume ? dir : t.init_from.empty() ? "" : fs::path(t.init_from).parent_path().string();
  std::unique_ptr<Task> task = make_task(rc.root, TaskContext{rc.data, task_dir, true, dir});
  // train.init_from's token embeddings are rows of the vocabulary beside it (a run's, an import's): a new run
  // tokenises with that one, and a tokenizer.vocab that differs is an error
  const std::string init_vocab = resume || task_dir.empty() ? "" : task_dir + "/vocab.txt";
  const bool has_init_vocab = !init_vocab.empty() && fs::exists(init_vocab);
  std::unique_ptr<Tokenizer> tok = make_tokenizer(
      rc.tokenizer, *task, resume ? dir + "/vocab.txt" : has_init_vocab && rc.tokenizer.vocab.empty() ? init_vocab : "");
  if (has_init_vocab && !rc.tokenizer.vocab.empty() && Vocab::load(init_vocab).tokens() != tok->vocab().tokens())
    rc.root.child("tokenizer").fail("vocab", "'" + rc.tokenizer.vocab + "' is not the vocabulary of train.init_from (" +
                                                 init_vocab + "), whose token embeddings the run loads: leave "
                                                 "tokenizer.vocab out to use that one");
  manual_seed(static_cast<uint64_t>(t.seed));
  ModelDims dims = task->dims();
  dims.vocab_size = tok->vocab().size();
  std::unique_ptr<EncoderModel> model = build_model(rc.root.child("model"), dims);
  rc.root.check_all_read();
  task->encode(*tok, model->max_len());
  model->to(t.device);
  model->set_precision(t.precision);
  if (!t.init_from.empty() && !resume) {
    const std::string note = load_weights(t.init_from, *model);
    if (!note.empty() && lead) std::cerr << note << "\n";
  }

  std::optional<RunDirLock> lock;  // held until the run ends
  if (lead) {
    lock.emplace(dir);
    // a new run's directory may have received a run since it was checked, from a process that has finished
    if (!resume && fs::exists(dir + "/config.yaml"))
      throw UsageError(dir + " already holds a run: continue it with --resume " + dir + ", or choose another --out");
    // the resolved config, --set overrides of a resume included, so that the next resume keeps them; writing it also
    // finds a read-only run directory before any step is spent
    write_file_atomically(dir + "/config.yaml", [&](std::ostream& f) { f << rc.root.dump() << "\n"; });
    if (!resume) {
      tok->vocab().save(dir + "/vocab.txt");
      task->save(dir);
    }
    remove_stale_temp_files(dir);
  }

  std::unique_ptr<Optimizer> optimizer = make_optimizer(t, *model);
  TrainingStep step(*model, *optimizer, StepOptions{t.grad_accum, t.clip, t.precision});
  std::unique_ptr<GradientReducer> reducer;
  if (comm->size() > 1)
    reducer = std::make_unique<GradientReducer>(*comm, model->parameters(), step.gradients(), t.dp_bucket_mb,
                                                t.dp_overlap);
  step.set_sync(reducer.get());

  const int64_t batches_per_epoch = (task->num_train() + t.batch_size - 1) / t.batch_size;
  if (t.grad_accum > batches_per_epoch)
    rc.root.child("train").fail("grad_accum", "is " + std::to_string(t.grad_accum) + ", more micro-batches than an epoch has (" +
                                                  std::to_string(batches_per_epoch) + " of batch_size " +
                                                  std::to_string(t.batch_size) + ")");
  const int64_t steps_per_epoch = std::max<int64_t>(1, batches_per_epoch / t.grad_accum);
  const int64_t total_steps = t.max_steps > 0 ? t.max_steps : t.epochs * steps_per_epoch;
  LrSchedule sched;
  sched.peak = t.lr;
  sched.total = total_steps;
  sched.warmup = t.warmup < 1.f ? static_cast<int64_t>(t.warmup * static_cast<float>(total_steps))
                                : static_cast<int64_t>(t.warmup);
  sched.decay = t.schedule == "linear" ? LrSchedule::Linear : t.schedule == "cosine" ? LrSchedule::Cosine
                                                                                      : LrSchedule::Constant;

  const std::string last_ckpt = dir + "/checkpoint-last.safetensors", best_ckpt = dir + "/checkpoint-best.safetensors";
  TrainState st;
  st.rng_seed = static_cast<uint64_t>(t.seed);
  int64_t tokens_seen = 0;  // by the steps logged so far, padding excluded
  if (resume) {
    HR_CHECK(fs::exists(last_ckpt), "cannot resume: no " + last_ckpt);
    st = load_checkpoint(last_ckpt, *model, optimizer.get());
    if (!st.note.empty() && lead) std::cerr << "note: " << st.note << "\n";
    if (lead) tokens_seen = drop_metrics_after(dir + "/metrics.jsonl", st.step);
    global_generator() = Generator{st.rng_seed, st.rng_offset};
    if (lead) std::cout << "resuming " << dir << " at step " << st.step << "\n";
  }
  // every rank starts from rank 0's weights (they agree already, as the same seed and files made them: this makes
  // sure); the optimizer state came from the same checkpoint file on every rank
  broadcast_parameters(*comm, model->parameters());

  const std::string metrics_path = dir + "/metrics.jsonl";
  std::ofstream metrics;
  if (lead) metrics.open(metrics_path, resume ? std::ios::app : std::ios::trunc);
  HR_CHECK(!lead || metrics.good(), "cannot write " + metrics_path);
  auto log_json = [&](const nlohmann::json& j) {
    if (!lead) return;
    metrics << j.dump() << "\n";
    metrics.flush();
    HR_CHECK(metrics.good(), "cannot write " + metrics_path + " (disk full?)");
  };
  log_json({{"step", st.step}, {"session", run_session(t, comm->size(), resume)}});
  if (lead)
    std::cout << "run directory: " << dir << "\n"
              << "model: " << model->num_parameters() << " parameters, " << model->num_layers() << " layers; "
              << task->num_train() << " training rows, " << total_steps << " steps on " << device_name(t.device)
              << (comm->size() > 1 ? "; data parallel: " + comm->name() : "") << "\n";

  Progress progress(total_steps, args.quiet, !lead);
  auto save_to = [&](const std::string& path) {
    if (!lead) return;
    st.rng_seed = global_generator().seed;
    st.rng_offset = global_generator().offset;
    save_checkpoint(path, *model, optimizer.get(), st);
  };
  const auto start = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  // evaluation runs on rank 0 alone; the other ranks wait for it in their next collective
  auto run_eval = [&]() {
    if (!lead || !task->has_split("eval")) return;
    const auto eval_start = Clock::now();
    EvalResult r = task->evaluate(*model, "eval", t.device, t.batch_size * 2);
    nlohmann::json j = {{"step", st.step}, {"eval", r.metrics},
                        {"eval_s", std::chrono::duration<double>(Clock::now() - eval_start).count()},
                        {"elapsed_s", elapsed_s()}};
    j["primary"] = r.primary;  // the metric that picks the best checkpoint
    if (!r.scorer.empty()) j["metric"] = r.scorer;
    if (nlohmann::json g = gate_report(*model); !g.is_null()) j["gates"] = g;
    log_json(j);
    std::string line = "step " + std::to_string(st.step) + " eval:";
    for (const auto& [k, v] : r.metrics) line += " " + k + " " + std::to_string(v);
    progress.message(line);
    if (r.primary_value() > st.best_metric) {
      st.best_metric = r.primary_value();
      st.best_step = st.step;
      save_to(best_ckpt);
    }
  };

  g_stop_signal = 0;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  struct RestoreSignals {
    ~RestoreSignals() {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
    }
  } restore_signals;

  model->train();
  auto window_start = Clock::now();
  int64_t window_tokens = 0, bad_steps = 0;
  double window_loss = 0, window_grad_norm = 0, window_grad_max = 0;  // grad norms before clipping
  int64_t window_steps = 0;
  while (st.step < total_steps) {
    task->start_epoch(st.epoch, static_cast<uint64_t>(t.seed));
    const auto batches = epoch_batches(*task, st.epoch, t.seed, t.batch_size, t.bucket_by_length);
    const int64_t steps_this_epoch = static_cast<int64_t>(batches.size()) / t.grad_accum;
    while (st.batch_in_epoch < std::max<int64_t>(1, steps_this_epoch) && st.step < total_steps) {
      double stop = g_stop_signal;
      if (comm->size() > 1) comm->all_reduce_host(&stop, 1, ReduceOp::Max);  // every rank stops at the same step
      if (stop != 0) {
        g_stop_signal = static_cast<int>(stop);  // between two steps: the last one is fully logged (and saved, when the loop saves)
        const std::string name = g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
        if (bad_steps == 0) {
          save_to(last_ckpt);
          progress.message("stopped by " + name + " after step " + std::to_string(st.step) + "; saved " + last_ckpt +
                           "; continue with: headroom train --resume " + dir);
        } else {
          progress.message("stopped by " + name + " during a streak of non-finite steps; the last good checkpoint is " +
                           last_ckpt);
        }
        return 128 + g_stop_signal;
      }
      const float lr = sched.at(st.step);
      const StepResult r = step.run(
          [&](int64_t micro) {
            const size_t bi = static_cast<size_t>(st.batch_in_epoch * t.grad_accum + micro) % batches.size();
            const Batch global = task->make_batch(batches[bi], t.device);
            window_tokens += global.tokens;
            auto loss_of = [&](const Batch& b) {
              Tensor loss = task->loss(*model, b, t.label_smoothing);
              if (Tensor p = model->penalty(); p.defined()) loss = add(loss, p);
              return loss;
            };
            if (comm->size() == 1) return loss_of(global);
            const int64_t rows = static_cast<int64_t>(batches[bi].size());
            const Shard s = shard_of(rows, comm->rank(), comm->size());
            if (s.count == 0) return Tensor();
            BatchRowsScope scope(BatchRows{s.first, s.count, rows});
            // weighted by this shard's share of what the loss is a mean over (rows; MLM: masked tokens)
            const Batch shard = batch_rows(global, s);
            const auto whole = static_cast<float>(task->loss_weight(global));
            const float share = whole > 0 ? static_cast<float>(task->loss_weight(shard)) / whole
                                          : static_cast<float>(s.count) / static_cast<float>(rows);
            return scale(loss_of(shard), share);
          },
          lr);
      ++st.batch_in_epoch;
      ++st.step;
      if (!r.applied) {
        ++bad_steps;
        progress.message("step " + std::to_string(st.step) + ": non-finite loss or gradient; step skipped (" +
                         std::to_string(bad_steps) + " in a row)");
        log_json({{"step", st.step}, {"skipped", "non-finite loss or gradient"}});
        if (bad_steps >= t.max_bad_steps) {
          progress.message("stopping: " + std::to_string(bad_steps) + " consecutive steps with a non-finite loss. " +
                           (fs::exists(last_ckpt) ? "The last good checkpoint is " + last_ckpt + "."
                                                  : "No checkpoint had been saved yet."));
          return 3;
        }
        continue;
      }
      bad_steps = 0;
      window_loss += r.loss;
      window_grad_norm += r.grad_norm;
      window_grad_max = std::max(window_grad_max, static_cast<double>(r.grad_norm));
      ++window_steps;
      const bool log_now = st.step % t.log_every == 0 || st.step == total_steps;
      const double secs = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double elapsed = elapsed_s();
      const double tps = secs > 0 ? static_cast<double>(window_tokens) / secs : 0;
      const double eta = elapsed / static_cast<double>(st.step) * static_cast<double>(total_steps - st.step);
      progress.update(st.step, static_cast<float>(window_loss / static_cast<double>(window_steps)), lr, tps, eta, log_now);
      if (log_now) {
        tokens_seen += window_tokens;
        const double n = static_cast<double>(window_steps);
        log_json({{"step", st.step}, {"epoch", st.epoch}, {"loss", window_loss / n}, {"lr", lr},
                  {"tokens_per_s", tps}, {"step_ms", 1e3 * secs / n}, {"tokens", tokens_seen},
                  {"grad_norm", window_grad_norm / n}, {"grad_norm_max", window_grad_max}, {"elapsed_s", elapsed}});
        window_start = Clock::now();
        window_tokens = 0;
        window_loss = window_grad_norm = window_grad_max = 0;
        window_steps = 0;
      }
      if (t.eval_every > 0 && st.step % t.eval_every == 0) {
        const auto paused = Clock::now();  // tokens/s and step_ms count training alone
        run_eval();
        save_to(last_ckpt);
        window_start += Clock::now() - paused;
      }
    }
    if (st.batch_in_epoch >= std::max<int64_t>(1, steps_this_epoch)) {
      ++st.epoch;
      st.batch_in_epoch = 0;
      // during a streak of non-finite steps the weights are suspect: keep the last good checkpoint
      if (bad_steps == 0) {
        const auto paused = Clock::now();
        if (t.eval_every == 0) run_eval();
        save_to(last_ckpt);
        window_start += Clock::now() - paused;
      }
    }
  }
  if (bad_steps == 0) {
    if (t.eval_every > 0 && st.step % t.eval_every != 0) run_eval();
    save_to(last_ckpt);
  }

  // final report: the best checkpoint on the test split (or the last one when there is no eval split)
  if (task->has_split("test")) {
    if (fs::exists(best_ckpt)) load_checkpoint(best_ckpt, *model, nullptr);
    EvalResult r = task->evaluate(*model, "test", t.device, t.batch_size * 2);
    log_json({{"step", st.step}, {"test", r.metrics}, {"checkpoint", fs::exists(best_ckpt) ? "best" : "last"},
              {"elapsed_s", elapsed_s()}});
    std::string line = "test (" + std::string(fs::exists(best_ckpt) ? "best" : "last") + " checkpoint):";
    for (const auto& [k, v] : r.metrics) line += " " + k + " " + std::to_string(v);
    progress.message(line);
  }
  const double total_s = elapsed_s();
  progress.message("done in " + std::to_string(static_cast<int>(total_s)) + " s; run directory " + dir);
  comm->barrier();  // the other ranks wait (asleep) for rank 0's last evaluation and save
  return 0;
}

}  // namespace hr
