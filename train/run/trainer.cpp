#include "train/run/trainer.h"

#include <filesystem>
#include <iostream>

#include "kernels/base/error.h"
#include "train/run/train_loop.h"
#include "train/tasks/task_registry.h"
#include "train/tokenizer/wordpiece_trainer.h"

namespace fs = std::filesystem;

namespace hr {

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

std::string checkpoint_path(const std::string& dir, const std::string& which) {
  const std::string path = dir + "/checkpoint-" + which + ".safetensors", last = dir + "/checkpoint-last.safetensors";
  if (fs::exists(path)) return path;
  if (which == "best" && fs::exists(last)) {
    std::cerr << "note: " << dir << " has no checkpoint-best (it stopped before its first evaluation): using "
              << "checkpoint-last\n";
    return last;
  }
  throw UsageError("no checkpoint " + path + (which == "last" ? "" : " nor checkpoint-last") +
                   ": the run has not saved one yet (train --resume " + dir + " continues it)");
}

LoadedRun load_run(const std::string& dir, const std::string& which, bool load_data,
                   const std::vector<std::string>& overrides) {
  LoadedRun r;
  r.dir = dir;
  HR_CHECK(fs::exists(dir + "/config.yaml"), dir + " is not a headroom run directory (no config.yaml)");
  r.config = load_run_config(dir + "/config.yaml", overrides, /*check_files=*/load_data, /*run_vocab=*/true);
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
    const std::string ckpt = checkpoint_path(dir, which);
    const ModelRecord record = model_record(r.config.root.child("model"), dir);
    if (const std::string note = load_checkpoint(ckpt, *r.model, nullptr, &record).note; !note.empty())
      std::cerr << "note: " << note << "\n";
  }
  r.model->to(r.config.train.device);
  const TrainOptions& t = r.config.train;
  if (const std::string w =
          check_precision(t.device, t.precision, dir + "/config.yaml: train.precision (or --precision)");
      !w.empty())
    std::cerr << w << "\n";
  r.model->set_precision(t.precision);
  return r;
}

int train_command(const TrainArgs& args) { return TrainLoop(args).run(); }

}  // namespace hr
