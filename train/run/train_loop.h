// One training run in parts: the constructor sets it up (config, data, tokenizer, model, optimizer, schedule, a
// resume's state, the run directory), run() takes the steps, evaluating and saving as the config says, then tests the
// best checkpoint. `headroom train` (train_command, trainer.h) builds one and runs it.
#pragma once

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "framework/distributed/communicator.h"
#include "framework/optim.h"
#include "models/encoder_model.h"
#include "train/run/checkpoint.h"
#include "train/run/gradient_reducer.h"
#include "train/run/progress.h"
#include "train/run/run_config.h"
#include "train/run/run_lock.h"
#include "train/run/trainer.h"
#include "train/run/training_step.h"
#include "train/tasks/task.h"
#include "train/tokenizer/tokenizer.h"

namespace hr {

class TrainLoop {
 public:
  // Validates everything (a resume's --set against its checkpoint too) before it writes the run directory, so a
  // refused start leaves an existing run as it was. Throws ConfigError / UsageError.
  explicit TrainLoop(const TrainArgs& args);
  // The process exit code: 0 done (or a finished run resumed: nothing written), 3 stopped on repeated non-finite
  // losses, 128 + the signal when SIGINT, SIGTERM or SIGHUP stopped it (after saving checkpoint-last at the step
  // boundary).
  int run();

 private:
  using Clock = std::chrono::steady_clock;

  void open_run(const TrainArgs& args);   // the run directory and its config
  void build_model();                     // task, tokenizer, model, train.init_from
  void build_optimizer();                 // optimizer, training step, gradient reducer, schedule
  void load_resume_state();               // a resume's checkpoint
  void write_run_dir();                   // config.yaml, vocabulary, task files, metrics.jsonl
  std::optional<int> stop_requested();    // a signal: saves and returns the exit code
  std::optional<int> train_step(const std::vector<std::vector<int64_t>>& batches);  // 3: too many bad steps
  void log_step(const StepResult& r, float lr);
  void end_epoch();
  void evaluate();                        // rank 0 on the eval split; saves checkpoint-best when it improves
  void save(const std::string& path);
  void test();                            // the best checkpoint on the test split
  void log_json(const nlohmann::json& j);
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  bool resume_ = false, quiet_ = false;
  bool finished_ = false;  // a resume of a run that had ended (its "done" or test row logged): nothing to do
  std::string dir_, config_file_, last_ckpt_, best_ckpt_;
  RunConfig rc_;
  std::unique_ptr<Communicator> comm_;
  bool lead_ = true;  // rank 0: writes the run directory, logs, evaluates
  std::unique_ptr<Task> task_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<EncoderModel> model_;
  std::optional<RunDirLock> lock_;  // held until the run ends
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<TrainingStep> step_;
  std::unique_ptr<GradientReducer> reducer_;
  LrSchedule sched_;
  int64_t total_steps_ = 0;
  TrainState st_;
  ModelRecord record_;  // what every checkpoint records of the model (a new run's once labels.txt is written)
  std::ofstream metrics_;
  std::unique_ptr<Progress> progress_;
  // the window of steps since the last logged one
  Clock::time_point start_, window_start_;
  int64_t window_tokens_ = 0, window_steps_ = 0, bad_steps_ = 0;
  double window_loss_ = 0, window_grad_norm_ = 0, window_grad_max_ = 0;  // gradient norms before clipping
  int64_t tokens_seen_ = 0;  // by the steps logged so far, padding excluded
};

}  // namespace hr
