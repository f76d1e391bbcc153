// Extractive question answering (SQuAD v1.1 format): `[CLS] question [SEP] context-window [SEP]` -> the start and end
// token of the answer span. Long contexts are cut into overlapping windows; prediction takes the best valid span over
// all windows of a question and maps it back through the tokenizer's code-point offsets to the original text.
#pragma once

#include <optional>

#include "train/data/squad_data.h"
#include "train/tasks/qa_options.h"
#include "train/tasks/task.h"
#include "train/tasks/task_registry.h"
#include "train/tokenizer/tokenizer.h"

namespace hr {

struct QaWindowing {
  int64_t max_len = 384;       // tokens of a whole row, specials included
  int64_t max_query_len = 64;  // question tokens kept
  int64_t doc_stride = 128;    // tokens between the starts of two consecutive windows
};

// First and last context token (indices into the context's encoding) of an answer, inclusive.
struct TokenSpan {
  int64_t first = 0, last = 0;
  bool operator==(const TokenSpan&) const = default;
};

// One row: [CLS] question [SEP] context tokens [doc_begin, doc_begin + doc_len) [SEP], segments 0 then 1.
struct QaWindow {
  std::vector<int32_t> ids, segments;  // (L,)
  int64_t context_pos = 0;             // row position of the window's first context token
  int64_t doc_begin = 0, doc_len = 0;
  int32_t start = 0, end = 0;          // the answer's row positions; 0 (CLS) when the window lacks the whole answer
};

// The tokens whose code-point offsets overlap [begin, end): first..last; nullopt when no token does.
std::optional<TokenSpan> answer_token_span(const std::vector<Offset>& offsets, int64_t begin, int64_t end);

// The windows of one question. The question is cut to max_query_len tokens; window starts advance by doc_stride
// (or less, so no context token is skipped) until one reaches the end of the context. An empty context gives one
// window without context tokens. hr::Error when max_len cannot hold the question and one context token.
std::vector<QaWindow> make_qa_windows(const Vocab& vocab, const std::vector<int32_t>& question_ids,
                                      const std::vector<int32_t>& context_ids,
                                      const QaWindowing& w, std::optional<TokenSpan> answer);

// The best answer in one window: start <= end, both context tokens, at most max_answer_len tokens, by
// start_logit + end_logit over the top_k starts x top_k ends. Token indices are into the context's encoding.
struct SpanChoice {
  TokenSpan span;
  float score = 0;
};
std::optional<SpanChoice> best_span(const float* start_logits, const float* end_logits, const QaWindow& window,
                                    int64_t max_answer_len, int top_k = 20);

struct QaPrediction {
  bool found = false;      // false only when no window had a context token (an empty context)
  std::string text;        // the original context's substring (UTF-8)
  float score = 0;         // start_logit + end_logit
  int64_t begin = 0, end = 0;  // [begin, end) code points of the context
};

// Answers (question, context) pairs with the model in eval mode, windows run `batch_size` at a time.
std::vector<QaPrediction> predict_answers(EncoderModel& model, const Tokenizer& tok, const QaWindowing& w,
                                          int64_t max_answer_len,
                                          const std::vector<std::pair<std::string, std::string>>& questions,
                                          Device d, int64_t batch_size);

class QaTask : public Task {
 public:
  // Loads train_path (its train view: verified answers only) and eval_path / test_path (their eval views), or with
  // data.format recall generates the three splits (recall_data.h); nothing without load_data. Data issues, misplaced answers among them, are printed and counted; with data.on_error = fail
  // the first one throws. evaluate() writes {id: answer} into `predictions_dir` when set: predictions.json for the
  // eval split, predictions-<split>.json else.
  QaTask(const DataOptions& data, bool load_data = true, std::string predictions_dir = "");
  int64_t data_issues() const { return issues_; }
  int64_t misplaced_answers() const { return misplaced_; }
  int64_t num_train_questions() const { return static_cast<int64_t>(train_examples_.size()); }
  QaWindowing windowing(int64_t max_len) const { return {max_len, options().max_query_len, options().doc_stride}; }

  ModelDims dims() const override { return {0, 0, 2}; }  // segments: question and context
  std::vector<std::string> training_texts() const override;  // questions and contexts (to learn a vocabulary)
  void encode(const Tokenizer& tok, int64_t max_len) override;
  int64_t num_train() const override { return static_cast<int64_t>(train_rows_.size()); }
  int64_t train_length(int64_t row) const override {
    return static_cast<int64_t>(train_rows_[static_cast<size_t>(row)].ids.size());
  }
  Batch make_batch(const std::vector<int64_t>& rows, Device d) const override;
  // Mean of the start and end cross-entropies over the CLS and context positions only; label smoothing spreads over
  // those positions too.
  Tensor loss(EncoderModel& model, const Batch& batch, float label_smoothing) const override;
  bool has_split(const std::string& split) const override { return eval_splits_.count(split) > 0; }
  // exact_match and f1 (percent, the official SQuAD v1.1 metric); primary f1.
  EvalResult evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) override;
  std::vector<std::string> input_fields() const override { return {"question", "context"}; }
  // {"question", "answer", "score", "offsets": [begin, end) code points of the context}; null score and offsets when
  // the context has no token
  std::vector<nlohmann::json> predict(EncoderModel& model, const std::vector<nlohmann::json>& requests, Device d,
                                      int64_t batch_size, int top) const override;
  // exact match and F1 by answer length and question type (qa_breakdown.h)
  std::vector<BreakdownTable> error_breakdown(EncoderModel& model, const std::string& split, Device d,
                                              int64_t batch_size) override;
  nlohmann::json example_request(const std::string& split) const override;

 private:
  SquadData load(const std::string& path);
  std::map<std::string, std::string> answer_split(EncoderModel& model, const std::string& split, Device d,
                                                  int64_t batch_size) const;  // {id: answer text}
  const QaOptions& options() const { return data_.as<QaOptions>(); }

  DataOptions data_;
  std::vector<QaExample> train_examples_;
  std::map<std::string, std::vector<QaExample>> eval_splits_;  // "eval", "test"
  std::vector<QaWindow> train_rows_;
  const Tokenizer* tok_ = nullptr;
  int64_t max_len_ = 0;
  std::string predictions_dir_;
  int64_t issues_ = 0, misplaced_ = 0;
};

// The registry's factory: the run directory (when training) receives the predictions.
std::unique_ptr<Task> make_qa_task(const TaskContext& ctx);

}  // namespace hr
