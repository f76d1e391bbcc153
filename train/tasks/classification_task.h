// Text classification: [CLS] text [SEP] -> label (intents), or for sentence pairs (data.text_field: [a, b], MNLI)
// [CLS] a [SEP] b [SEP] with segments 0 and 1 -> label. Loads the configured splits (CLINC150 JSON, CSV/TSV, JSONL),
// builds the label set from train (or takes the run's labels.txt), and reports accuracy, macro-F1 and, when the
// data has an `oos` label, out-of-scope recall.
#pragma once

#include <optional>

#include "train/data/classification_data.h"
#include "train/data/label_set.h"
#include "train/tasks/classification_options.h"
#include "train/tasks/task.h"
#include "train/tasks/task_registry.h"
#include "train/tokenizer/tokenizer.h"

namespace hr {

class ClassificationTask : public Task {
 public:
  // Reads every configured split (none without load_data: then `labels` is required). Data issues are printed (each
  // with file and line) and counted; with data.on_error = fail the first one throws.
  ClassificationTask(const DataOptions& data, std::optional<LabelSet> labels, bool load_data = true);
  const LabelSet& labels() const { return labels_; }

  ModelDims dims() const override;
  std::vector<std::string> training_texts() const override;
  void encode(const Tokenizer& tok, int64_t max_len) override;
  void save(const std::string& run_dir) const override;  // labels.txt, one label a line in id order
  int64_t num_train() const override { return static_cast<int64_t>(train_.ids.size()); }
  int64_t train_length(int64_t row) const override { return static_cast<int64_t>(train_.ids[row].size()); }
  Batch make_batch(const std::vector<int64_t>& rows, Device d) const override;
  Tensor loss(EncoderModel& model, const Batch& batch, float label_smoothing) const override;
  bool has_split(const std::string& split) const override;
  EvalResult evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) override;
  int64_t split_rows(const std::string& split) const override;
  Batch make_split_batch(const std::string& split, const std::vector<int64_t>& rows, Device d) const override;
  // {"text"}, or the pair's two field names (data.text_field), e.g. {"premise", "hypothesis"}
  std::vector<std::string> input_fields() const override;
  // {<input_fields()>, "label": the best label, "top": [{"label", "probability"}] the `top` best}
  std::vector<nlohmann::json> predict(EncoderModel& model, const std::vector<nlohmann::json>& requests, Device d,
                                      int64_t batch_size, int top) const override;
  // the most confused label pairs and the labels with the lowest F1 (classification_breakdown.h)
  std::vector<BreakdownTable> error_breakdown(EncoderModel& model, const std::string& split, Device d,
                                              int64_t batch_size) override;
  nlohmann::json example_request(const std::string& split) const override;

 private:
  struct Split {
    std::vector<TextExample> examples;
    std::vector<std::vector<int32_t>> ids;
    std::vector<std::vector<int32_t>> segments;  // sentence pairs only; empty for single texts
    std::vector<int32_t> labels;
  };
  bool pairs() const { return !options().pair_field.empty(); }
  const ClassificationOptions& options() const { return data_.as<ClassificationOptions>(); }
  std::vector<TextExample> load(const std::string& which, const std::optional<LabelSet>& known);
  void encode_split(Split& s) const;
  Batch batch_of(const Split& s, const std::vector<int64_t>& rows, Device d) const;
  std::vector<int32_t> predicted_labels(EncoderModel& model, const Split& s, Device d, int64_t batch_size) const;

  DataOptions data_;
  LabelSet labels_;
  Split train_;
  std::map<std::string, Split> eval_splits_;  // "eval", "test"
  const Tokenizer* tok_ = nullptr;
  int64_t max_len_ = 0;
};

// The registry's factory: labels from the run directory's labels.txt when there is one.
std::unique_ptr<Task> make_classification_task(const TaskContext& ctx);

// Token rows for texts: [CLS] wordpieces [SEP], truncated to max_len (pre-tokenised ids are wrapped the same way).
std::vector<int32_t> encode_text_row(const Tokenizer& tok, const TextExample& ex, int64_t max_len);

struct PairRow {
  std::vector<int32_t> ids;       // [CLS] a [SEP] b [SEP]
  std::vector<int32_t> segments;  // 0 for [CLS], a and the first [SEP]; 1 for b and its [SEP]
};
// A sentence pair (ex.text, ex.text_pair) as BERT encodes it. When it exceeds max_len, the longer text loses its last
// token, one token at a time, until it fits (Hugging Face's `truncation=True`, longest_first; on a tie the second
// text is cut).
PairRow encode_pair_row(const Tokenizer& tok, const TextExample& ex, int64_t max_len);

// accuracy, macro_f1 (over the labels present in gold or predictions), and oos_recall / in_scope_accuracy when
// `oos_label` >= 0.
std::map<std::string, double> classification_metrics(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                                     int32_t num_labels, int32_t oos_label);

}  // namespace hr
