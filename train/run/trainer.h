// Runs and run directories: `headroom train` (train_command; the loop itself is train/run/train_loop.h) and loading a
// run directory back for eval, predict, resume, prune and the analysis tools.
#pragma once

#include <memory>
#include <string>

#include "models/encoder_model.h"
#include "train/run/checkpoint.h"
#include "train/run/run_config.h"
#include "train/tasks/task.h"
#include "train/tokenizer/tokenizer.h"

namespace hr {

// The run's vocab.txt when there is one, else tokenizer.vocab, else one learned from the task's training texts.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& t, const Task& task, const std::string& run_vocab);

// Everything a run directory holds, loaded back for eval / predict / resume / prune.
struct LoadedRun {
  std::string dir;
  RunConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Task> task;
  std::unique_ptr<EncoderModel> model;
};

// Reads DIR/config.yaml (with `overrides` applied, e.g. another data file), vocab.txt, labels.txt and builds the
// model on the config's device; loads DIR/checkpoint-<which> unless which is empty. `load_data` false skips reading
// the datasets (predict, attention maps).
LoadedRun load_run(const std::string& dir, const std::string& which, bool load_data = true,
                   const std::vector<std::string>& overrides = {});

// DIR/checkpoint-<which>.safetensors; for "best" of a run stopped before its first evaluation (a signal; no eval split)
// checkpoint-last, with a note on stderr. UsageError when the run has neither.
std::string checkpoint_path(const std::string& dir, const std::string& which);

struct TrainArgs {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string out_dir;     // empty: runs/<config name>-<date-time>
  std::string resume_dir;  // continue this run
  bool quiet = false;
};

// Returns the process exit code: 0 done, 3 stopped on repeated non-finite losses, 128 + the signal when SIGINT,
// SIGTERM or SIGHUP stopped it (after saving checkpoint-last at the step boundary). An --out that already holds a run,
// and an --out with --resume, are UsageErrors. A resume writes its run directory only after the config (its --set
// overrides included) has built the model and loaded the checkpoint.
int train_command(const TrainArgs& args);

}  // namespace hr
