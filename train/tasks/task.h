// A training task: its data as token rows, how a batch is built, its loss, its evaluation, how it answers a prediction
// request and which files it keeps in a run directory. The training loop (train/run/trainer.h), eval, predict, head
// importance and the attention maps use only this interface; tasks are chosen by `data.task` from the registry
// (train/tasks/task_registry.h), each naming the model.type (task head) it trains.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "models/encoder_model.h"
#include "train/tokenizer/tokenizer.h"

namespace hr {

struct Batch {
  EncoderInput input;
  Tensor labels;          // classification: (B) i32; token classification: (B, T) i32
  Tensor start, end;      // span QA: (B) i32 token positions of the answer (0 = CLS when the window has none)
  Tensor span_mask;       // span QA: (B, T) f32, 1 where no answer can start or end (question, separators, padding)
  int64_t tokens = 0;     // real (unpadded) tokens
};

// One table of a run report's error breakdown (train/tools/run_report.h): cells already formatted.
struct BreakdownTable {
  std::string title;
  std::string note;  // what the rows are and how they were chosen
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct EvalResult {
  std::map<std::string, double> metrics;  // e.g. accuracy, macro_f1, oos_recall / exact_match, f1
  std::string primary;                    // the metric that picks the best checkpoint (higher is better)
  std::string scorer;                     // which definition scored, when a task has several (QA: "squad" | "cmrc")
  double primary_value() const { return metrics.at(primary); }
};

class Task {
 public:
  virtual ~Task() = default;
  // What the model's head needs from the data (labels, segments); the vocabulary size comes from the tokenizer.
  virtual ModelDims dims() const = 0;
  // The texts a vocabulary is learned from when the config names none.
  virtual std::vector<std::string> training_texts() const = 0;
  // Tokenizes every loaded split; `tok` must outlive the task (evaluation and prediction tokenize with it).
  virtual void encode(const Tokenizer& tok, int64_t max_len) = 0;
  // Writes what the task needs to be rebuilt from the run directory (e.g. labels.txt).
  virtual void save(const std::string& run_dir) const { (void)run_dir; }

  // ---- training
  virtual int64_t num_train() const = 0;                // training rows
  virtual int64_t train_length(int64_t row) const = 0;  // tokens of a training row (for length bucketing)
  // Before the batches of an epoch are drawn (the training loop): a task that draws its batches at random (MLM's
  // masking) keys its draws by the epoch and the run's seed, so a resumed run draws what an uninterrupted one does.
  virtual void start_epoch(int64_t epoch, uint64_t seed) { (void)epoch, (void)seed; }
  virtual Batch make_batch(const std::vector<int64_t>& rows, Device d) const = 0;
  // The mean training loss of a batch (without regularisers; the step adds the model's penalty).
  virtual Tensor loss(EncoderModel& model, const Batch& batch, float label_smoothing) const = 0;
  // What loss() is a mean over: its rows, or e.g. the masked tokens of MLM. A data-parallel shard's loss is weighted
  // by its share of the batch's weight, so that N processes train on the loss of one.
  virtual double loss_weight(const Batch& batch) const { return static_cast<double>(batch.input.ids.dim(0)); }

  // ---- evaluation on a split ("eval" or "test"); false from has_split when the config has none
  virtual bool has_split(const std::string& split) const = 0;
  virtual EvalResult evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) = 0;
  // Labelled batches of any split ("train", "eval", "test"), for analyses that need the loss on held-out data (head
  // importance). Tasks that do not provide them say so.
  virtual int64_t split_rows(const std::string& split) const {
    throw Error("this task does not provide batches of the '" + split + "' split");
  }
  virtual Batch make_split_batch(const std::string& split, const std::vector<int64_t>& rows, Device d) const {
    (void)rows, (void)d;
    throw Error("this task does not provide batches of the '" + split + "' split");
  }

  // ---- prediction
  // The text fields of one request, e.g. {"text"} or {"question", "context"}: the first is segment 0, the second
  // segment 1 (predict's flags and JSONL keys, attention maps).
  virtual std::vector<std::string> input_fields() const = 0;
  // One JSON answer per request (an object holding input_fields()), with the model in eval mode.
  virtual std::vector<nlohmann::json> predict(EncoderModel& model, const std::vector<nlohmann::json>& requests,
                                              Device d, int64_t batch_size, int top) const = 0;

  // ---- the run report (train/tools/run_report.h)
  // Where the model goes wrong on a split ("eval" or "test"), as tables: one pass over the split. Empty for a task
  // without a breakdown.
  virtual std::vector<BreakdownTable> error_breakdown(EncoderModel& model, const std::string& split, Device d,
                                                      int64_t batch_size) {
    (void)model, (void)split, (void)d, (void)batch_size;
    return {};
  }
  // A request (an object holding input_fields()) made of the split's first row, the example of the report's attention
  // maps; null when the split is not loaded or the task keeps no texts.
  virtual nlohmann::json example_request(const std::string& split) const {
    (void)split;
    return nullptr;
  }
};

}  // namespace hr
