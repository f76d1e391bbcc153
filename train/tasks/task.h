// A training task: its data as token rows, how a batch is built, its loss and its evaluation. The training loop
// (train/trainer.h) is the same for every task; classification and extractive QA implement this interface.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "models/encoder_model.h"

namespace hr {

struct Batch {
  EncoderInput input;
  Tensor labels;          // classification: (B) i32
  Tensor start, end;      // span QA: (B) i32 token positions of the answer (0 = CLS when the window has none)
  Tensor span_mask;       // span QA: (B, T) f32, 1 where no answer can start or end (question, separators, padding)
  int64_t tokens = 0;     // real (unpadded) tokens
};

struct EvalResult {
  std::map<std::string, double> metrics;  // e.g. accuracy, macro_f1, oos_recall / exact_match, f1
  std::string primary;                    // the metric that picks the best checkpoint (higher is better)
  double primary_value() const { return metrics.at(primary); }
};

class Task {
 public:
  virtual ~Task() = default;
  virtual ModelDims dims() const = 0;
  virtual int64_t num_train() const = 0;            // training rows
  virtual int64_t train_length(int64_t row) const = 0;  // tokens of a training row (for length bucketing)
  virtual Batch make_batch(const std::vector<int64_t>& rows, Device d) const = 0;
  // The mean training loss of a batch (without regularisers; the loop adds the model's penalty).
  virtual Tensor loss(EncoderModel& model, const Batch& batch, float label_smoothing) const = 0;
  // Evaluates on a split ("eval" or "test"); false from has_split when the config has none.
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
};

}  // namespace hr
