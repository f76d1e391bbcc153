// The training config's non-model blocks (tokenizer:, data:, train:), read and validated up front so that a typo
// fails before any work starts. The model: block is read by build_model (models/encoder_model.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "framework/autocast.h"
#include "framework/config.h"
#include "kernels/backend.h"
#include "train/tasks/task_options.h"

namespace hr {

struct TokenizerOptions {
  std::string vocab;        // a vocab.txt path; empty: learn one of vocab_size from the training texts
  int64_t vocab_size = 8000;
  bool lower_case = true;
  // BERT's strip_accents: unset follows lower_case (tokenizer_config.json's null), as BasicTokenizer does
  std::optional<bool> strip_accents;
};

struct TrainOptions {
  int64_t epochs = 3;
  int64_t max_steps = 0;      // 0: epochs decide
  int64_t batch_size = 32;
  int64_t grad_accum = 1;     // micro-batches per optimizer step
  float lr = 1e-3f;
  float gate_lr = 0.f;        // peak learning rate of the L0 gates' log_alpha (same schedule); 0: lr
  float warmup = 0.1f;        // < 1: a fraction of the steps; >= 1: a number of steps
  std::string schedule = "linear";  // linear | cosine | constant
  float weight_decay = 0.01f;
  float clip = 1.f;           // global gradient norm; 0 disables
  float label_smoothing = 0.f;
  int64_t seed = 0;
  Device device = Device::CPU;
  int64_t eval_every = 0;     // steps; 0: at the end of every epoch (and after the last step, wherever it falls)
  int64_t log_every = 50;
  bool bucket_by_length = true;
  std::string init_from;      // a weights file (safetensors, keys = parameter names)
  int64_t max_bad_steps = 5;  // consecutive NaN/inf steps before the run stops
  std::string optimizer = "adamw";  // a registered optimizer (framework/optimizer_registry.h): adamw | sgd | lamb
  float adam_beta1 = 0.9f, adam_beta2 = 0.999f, adam_epsilon = 1e-8f;  // AdamW, LAMB (Hugging Face's names)
  float momentum = 0.9f;  // SGD
  bool nesterov = false;  // SGD
  Precision precision = Precision::F32;  // bf16: matmuls in bf16 with f32 master weights (framework/autocast.h)
  // data parallel under mpirun (train/run/data_parallel.h)
  float dp_bucket_mb = 25.f;   // gradient all-reduce bucket (PyTorch DDP's default)
  bool dp_overlap = true;      // start a bucket's all-reduce during backward, as soon as its gradients are complete
  float dp_timeout_s = 600.f;  // the longest wait for another rank (rank 0 evaluates and saves alone) before the job stops
};

struct RunConfig {
  Config root = Config::parse("{}", "<none>");  // replaced by the loaded config
  std::string name;  // the config file's stem
  TokenizerOptions tokenizer;
  DataOptions data;
  TrainOptions train;
};

// Loads the file, applies the --set overrides, reads tokenizer:/data:/train:. Paths in the config are relative to the
// current directory; `check_files` false skips checking that the data and vocabulary files exist (a run directory
// served by predict needs neither); `run_vocab` skips tokenizer.vocab alone (a run directory, whose own vocab.txt is
// its vocabulary). `check_all_read` runs after the model is built (train/run/trainer.cpp).
RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides, bool check_files = true,
                          bool run_vocab = false);
RunConfig read_run_config(Config root, const std::string& name, bool check_files = true, bool run_vocab = false);

// The config as a run directory stores it: its path keys (tokenizer.vocab, train.init_from, data.path,
// data.train_path / eval_path / test_path (a path or a list of them), data.cache_dir) made absolute, so that the run
// serves every command from any working directory.
std::string stored_config_text(const Config& root);
// Training needs its data (the task says which keys: data.train_path, or data.path of a CLINC150 file): a ConfigError
// naming the key, or a misspelt key meant for it, when it is missing or empty.
void require_train_data(const RunConfig& rc);

}  // namespace hr
