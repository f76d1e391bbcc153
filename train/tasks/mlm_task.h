// Masked-language-model pretraining (data.task mlm, model.type encoder_mlm), BERT's recipe as Hugging Face's run_mlm
// runs it without line_by_line: the corpus is one token stream with [SEP] between documents, cut into rows of
// max_seq_len - 2 tokens framed by [CLS] ... [SEP], no next-sentence task. Training rows are masked anew every time
// they are drawn (RoBERTa's dynamic masking; the draws are keyed by seed, epoch and row, so a resumed or data-parallel
// run masks as one uninterrupted process does); the eval and test rows are masked once, with a fixed seed, so every
// evaluation of every run scores the same positions. The corpus is tokenised once into a memory-mapped token cache
// (train/data/token_cache.h): memory does not grow with it.
#pragma once

#include <optional>

#include "train/data/mlm_masking.h"
#include "train/data/token_cache.h"
#include "train/tasks/mlm_options.h"
#include "train/tasks/task.h"
#include "train/tasks/task_registry.h"

namespace hr {

class MlmTask : public Task {
 public:
  // With load_data the corpora are opened in encode() (the token caches need the tokenizer).
  MlmTask(const DataOptions& data, bool load_data);

  ModelDims dims() const override { return {0, 0, 2}; }  // BERT's two segments, so a fine-tuned pair task fits
  // the first 16 MB of the training corpus's documents (to learn a vocabulary when tokenizer.vocab is not set)
  std::vector<std::string> training_texts() const override;
  void encode(const Tokenizer& tok, int64_t max_len) override;
  int64_t num_train() const override { return train_rows_; }
  int64_t train_length(int64_t) const override { return row_len_; }
  void start_epoch(int64_t epoch, uint64_t seed) override;
  // labels (B, T) i32: the original token where a position was chosen, -100 elsewhere
  Batch make_batch(const std::vector<int64_t>& rows, Device d) const override;
  // Mean cross-entropy over the masked positions, decoded only there (MlmHead::logits_at).
  Tensor loss(EncoderModel& model, const Batch& batch, float label_smoothing) const override;
  double loss_weight(const Batch& batch) const override;  // masked positions: the loss is their mean
  bool has_split(const std::string& split) const override { return splits_.count(split) > 0; }
  // mlm_loss, perplexity (exp of the loss), masked_accuracy (top-1, percent; primary)
  EvalResult evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) override;
  int64_t split_rows(const std::string& split) const override;
  Batch make_split_batch(const std::string& split, const std::vector<int64_t>& rows, Device d) const override;
  std::vector<std::string> input_fields() const override { return {"text"}; }
  // A text with one or more "[MASK]": {"text", "masks": [[{"token", "probability", "sequence"}, ... the `top` best]
  // per [MASK], in order]}, as Hugging Face's fill-mask pipeline answers.
  std::vector<nlohmann::json> predict(EncoderModel& model, const std::vector<nlohmann::json>& requests, Device d,
                                      int64_t batch_size, int top) const override;

  const TokenCache* cache(const std::string& split) const;  // null when the split has no corpus

 private:
  struct Split {
    TokenCache cache;
    int64_t rows = 0;
  };
  const MlmOptions& options() const { return data_.as<MlmOptions>(); }
  // rows of `cache`, masked with (seed, draw index of each row)
  Batch masked_batch(const TokenCache& cache, const std::vector<int64_t>& rows, uint64_t seed,
                     const std::vector<uint64_t>& draws, Device d) const;

  DataOptions data_;
  bool load_data_;
  const Tokenizer* tok_ = nullptr;
  std::optional<MlmVocabInfo> vocab_info_;
  int64_t row_len_ = 0;
  std::optional<TokenCache> train_;
  int64_t train_rows_ = 0;
  std::map<std::string, Split> splits_;  // "eval", "test"
  int64_t epoch_ = 0;
  uint64_t seed_ = 0;
};

std::unique_ptr<Task> make_mlm_task(const TaskContext& ctx);

}  // namespace hr
