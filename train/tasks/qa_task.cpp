#include "train/tasks/qa_task.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <numeric>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "train/data/squad_metric.h"
#include "train/data/utf8_codepoints.h"
#include "train/tasks/qa_breakdown.h"

namespace hr {

std::optional<TokenSpan> answer_token_span(const std::vector<Offset>& offsets, int64_t begin, int64_t end) {
  std::optional<TokenSpan> span;
  for (size_t k = 0; k < offsets.size(); ++k) {
    if (offsets[k].first >= end || offsets[k].second <= begin) continue;
    if (!span) span = TokenSpan{static_cast<int64_t>(k), static_cast<int64_t>(k)};
    span->last = static_cast<int64_t>(k);
  }
  return span;
}

std::vector<QaWindow> make_qa_windows(const Vocab& vocab, const std::vector<int32_t>& question_ids,
                                      const std::vector<int32_t>& context_ids, const QaWindowing& w,
                                      std::optional<TokenSpan> answer) {
  const int64_t q_len = std::min<int64_t>(static_cast<int64_t>(question_ids.size()), w.max_query_len);
  const int64_t room = w.max_len - q_len - 3;  // context tokens per window: [CLS] q [SEP] ... [SEP]
  HR_CHECK(room >= 1, "model.max_len " + std::to_string(w.max_len) + " cannot hold a question of " +
                          std::to_string(q_len) + " tokens (data.max_query_len " + std::to_string(w.max_query_len) +
                          ") and any context");
  const int64_t n = static_cast<int64_t>(context_ids.size());
  std::vector<QaWindow> out;
  for (int64_t begin = 0;;) {
    QaWindow win;
    win.doc_begin = begin;
    win.doc_len = std::min(room, n - begin);
    win.context_pos = q_len + 2;
    win.ids.push_back(vocab.cls_id());
    win.ids.insert(win.ids.end(), question_ids.begin(), question_ids.begin() + q_len);
    win.ids.push_back(vocab.sep_id());
    win.segments.assign(win.ids.size(), 0);
    win.ids.insert(win.ids.end(), context_ids.begin() + begin, context_ids.begin() + begin + win.doc_len);
    win.ids.push_back(vocab.sep_id());
    win.segments.resize(win.ids.size(), 1);
    if (answer && answer->first >= begin && answer->last < begin + win.doc_len) {
      win.start = static_cast<int32_t>(win.context_pos + answer->first - begin);
      win.end = static_cast<int32_t>(win.context_pos + answer->last - begin);
    }
    out.push_back(std::move(win));
    if (begin + room >= n) break;
    begin += std::min(room, w.doc_stride);
  }
  return out;
}

std::optional<SpanChoice> best_span(const float* start_logits, const float* end_logits, const QaWindow& window,
                                    int64_t max_answer_len, int top_k) {
  // row positions of the context tokens, best first
  auto top = [&](const float* logits) {
    std::vector<int64_t> pos(static_cast<size_t>(window.doc_len));
    std::iota(pos.begin(), pos.end(), window.context_pos);
    const size_t k = std::min(pos.size(), static_cast<size_t>(top_k));
    std::partial_sort(pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(k), pos.end(),
                      [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
    pos.resize(k);
    return pos;
  };
  std::optional<SpanChoice> best;
  for (int64_t s : top(start_logits)) {
    for (int64_t e : top(end_logits)) {
      if (e < s || e - s + 1 > max_answer_len) continue;
      const float score = start_logits[s] + end_logits[e];
      if (!best || score > best->score)
        best = SpanChoice{{window.doc_begin + s - window.context_pos, window.doc_begin + e - window.context_pos}, score};
    }
  }
  return best;
}

namespace {

// 1 at every position of a row where no answer can start or end: all but CLS and the window's context tokens.
std::vector<float> excluded_positions(const QaWindow& w, size_t T) {
  std::vector<float> m(T, 1.f);
  m[0] = 0.f;
  for (int64_t p = w.context_pos; p < w.context_pos + w.doc_len; ++p) m[static_cast<size_t>(p)] = 0.f;
  return m;
}

// Cross-entropy of (B, T) logits over the allowed positions (excluded = 1 elsewhere), with label smoothing spread over
// the allowed positions only: a uniform term over masked-out positions would be unbounded.
Tensor span_cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& excluded, float smoothing) {
  const Tensor masked = mask_fill(logits, excluded, -1e9f);  // (B, T)
  Tensor loss = cross_entropy(masked, labels);
  if (smoothing == 0.f) return loss;
  const Tensor allowed = add_scalar(neg(excluded), 1.f);                      // (B, T)
  const Tensor mean_logp = div(sum(mul(log_softmax(masked), allowed), 1), sum(allowed, 1));  // (B)
  return sub(scale(loss, 1.f - smoothing), scale(mean(mean_logp), smoothing));
}

}  // namespace

std::vector<QaPrediction> predict_answers(EncoderModel& model, const Tokenizer& tok, const QaWindowing& w,
                                          int64_t max_answer_len,
                                          const std::vector<std::pair<std::string, std::string>>& questions,
                                          Device d, int64_t batch_size) {
  struct Pending {
    size_t question;
    QaWindow window;
  };
  std::vector<Encoding> contexts;
  std::vector<Pending> windows;
  for (size_t q = 0; q < questions.size(); ++q) {
    contexts.push_back(tok.encode(questions[q].second));
    for (QaWindow& win : make_qa_windows(tok.vocab(), tok.encode(questions[q].first).ids, contexts.back().ids, w, {}))
      windows.push_back({q, std::move(win)});
  }
  std::vector<std::optional<SpanChoice>> best(questions.size());
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
  for (size_t at = 0; at < windows.size(); at += static_cast<size_t>(batch_size)) {
    const size_t stop = std::min(windows.size(), at + static_cast<size_t>(batch_size));
    std::vector<std::vector<int32_t>> ids, segments;
    for (size_t i = at; i < stop; ++i) {
      ids.push_back(windows[i].window.ids);
      segments.push_back(windows[i].window.segments);
    }
    const Tensor logits = model.forward(make_encoder_input(ids, tok.vocab().pad_id(), d, &segments));  // (B, T, 2)
    const size_t T = static_cast<size_t>(logits.dim(1));
    const std::vector<float> all = logits.to_vector();
    for (size_t i = at; i < stop; ++i) {
      std::vector<float> start(T), end(T);
      for (size_t t = 0; t < T; ++t) {
        start[t] = all[((i - at) * T + t) * 2];
        end[t] = all[((i - at) * T + t) * 2 + 1];
      }
      const auto choice = best_span(start.data(), end.data(), windows[i].window, max_answer_len);
      auto& b = best[windows[i].question];
      if (choice && (!b || choice->score > b->score)) b = choice;
    }
  }
  model.train(was_training);
  std::vector<QaPrediction> out(questions.size());
  for (size_t q = 0; q < questions.size(); ++q) {
    if (!best[q]) continue;
    const std::vector<Offset>& off = contexts[q].offsets;
    QaPrediction& p = out[q];
    p.found = true;
    p.score = best[q]->score;
    p.begin = off[static_cast<size_t>(best[q]->span.first)].first;
    p.end = off[static_cast<size_t>(best[q]->span.last)].second;
    p.text = utf8_slice_codepoints(questions[q].second, p.begin, p.end - p.begin);
  }
  return out;
}

SquadData QaTask::load(const std::string& path) {
  SquadData d = load_squad(path, parse_on_error(data_.on_error));
  for (const DataIssue& i : d.issues) std::cerr << "data: " << i.message() << "\n";
  if (d.misplaced_answers > 0)
    std::cerr << "data: " << path << ": " << d.misplaced_answers
              << " answers are not at their answer_start; they are not trained on\n";
  issues_ += static_cast<int64_t>(d.issues.size());
  misplaced_ += d.misplaced_answers;
  return d;
}

QaTask::QaTask(const DataOptions& data, bool load_data, std::string predictions_dir)
    : data_(data), predictions_dir_(std::move(predictions_dir)) {
  if (!load_data) return;
  const QaOptions& o = options();
  if (o.format == "recall") {  // generated in memory: eval and test are the held-out splits (recall_data.h)
    RecallData r = make_recall_data(o.recall);
    train_examples_ = std::move(r.train);
    eval_splits_["eval"] = std::move(r.eval);
    if (!r.test.empty()) eval_splits_["test"] = std::move(r.test);
    return;
  }
  if (!o.files.train_path.empty()) {
    train_examples_ = load(o.files.train_path).train;
    HR_CHECK(!train_examples_.empty(), o.files.train_path + ": no question with a verified answer to train on");
  }
  for (const auto& [split, path] : {std::pair{"eval", o.files.eval_path}, {"test", o.files.test_path}}) {
    if (path.empty()) continue;
    eval_splits_[split] = load(path).eval;
    HR_CHECK(!eval_splits_[split].empty(), path + ": the " + split + " split has no question to evaluate on");
  }
}

std::vector<std::string> QaTask::training_texts() const {
  std::vector<std::string> t;
  const std::string* last_context = nullptr;  // the questions of a paragraph follow each other and share its context
  for (const QaExample& e : train_examples_) {
    t.push_back(e.question);
    if (!last_context || e.context != *last_context) t.push_back(e.context);
    last_context = &e.context;
  }
  return t;
}

void QaTask::encode(const Tokenizer& tok, int64_t max_len) {
  HR_CHECK(data_.max_seq_len <= max_len, "data.max_seq_len " + std::to_string(data_.max_seq_len) +
                                             " is longer than model.max_len " + std::to_string(max_len));
  tok_ = &tok;
  max_len_ = data_.max_seq_len > 0 ? data_.max_seq_len : max_len;  // the window length
  train_rows_.clear();
  int64_t no_tokens = 0;
  for (const QaExample& e : train_examples_) {
    const Encoding context = tok.encode(e.context);
    const Answer& a = e.answers.front();
    const auto span = answer_token_span(context.offsets, a.start, a.start + utf8_codepoint_count(a.text));
    if (!span) {  // an answer of white space or dropped characters only
      ++no_tokens;
      continue;
    }
    for (QaWindow& w : make_qa_windows(tok.vocab(), tok.encode(e.question).ids, context.ids, windowing(max_len_), span))
      train_rows_.push_back(std::move(w));
  }
  if (no_tokens > 0) std::cerr << "data: " << no_tokens << " answers cover no token; not trained on\n";
}

Batch QaTask::make_batch(const std::vector<int64_t>& rows, Device d) const {
  std::vector<std::vector<int32_t>> ids, segments;
  std::vector<int32_t> start, end;
  size_t T = 1;
  for (int64_t r : rows) T = std::max(T, train_rows_[static_cast<size_t>(r)].ids.size());
  std::vector<float> excluded;
  Batch b;
  for (int64_t r : rows) {
    const QaWindow& w = train_rows_[static_cast<size_t>(r)];
    ids.push_back(w.ids);
    segments.push_back(w.segments);
    start.push_back(w.start);
    end.push_back(w.end);
    const std::vector<float> m = excluded_positions(w, T);
    excluded.insert(excluded.end(), m.begin(), m.end());
    b.tokens += static_cast<int64_t>(w.ids.size());
  }
  const int64_t B = static_cast<int64_t>(rows.size());
  b.input = make_encoder_input(ids, tok_->vocab().pad_id(), d, &segments);
  b.start = Tensor::from_ids(start, {B}, d);
  b.end = Tensor::from_ids(end, {B}, d);
  b.span_mask = Tensor::from_vector(excluded, {B, static_cast<int64_t>(T)}, d);
  return b;
}

Tensor QaTask::loss(EncoderModel& model, const Batch& batch, float label_smoothing) const {
  const Tensor logits = model.forward(batch.input);  // (B, T, 2)
  const Tensor start = span_cross_entropy(select(logits, 2, 0), batch.start, batch.span_mask, label_smoothing);
  const Tensor end = span_cross_entropy(select(logits, 2, 1), batch.end, batch.span_mask, label_smoothing);
  return scale(add(start, end), 0.5f);
}

std::map<std::string, std::string> QaTask::answer_split(EncoderModel& model, const std::string& split, Device d,
                                                        int64_t batch_size) const {
  HR_CHECK(tok_, "QaTask: answering before encode");
  const std::vector<QaExample>& gold = eval_splits_.at(split);
  std::vector<std::pair<std::string, std::string>> questions;
  for (const QaExample& e : gold) questions.emplace_back(e.question, e.context);
  const std::vector<QaPrediction> answers =
      predict_answers(model, *tok_, windowing(max_len_), options().max_answer_len, questions, d, batch_size);
  std::map<std::string, std::string> predictions;
  for (size_t i = 0; i < gold.size(); ++i) predictions[gold[i].id] = answers[i].text;
  return predictions;
}

std::vector<BreakdownTable> QaTask::error_breakdown(EncoderModel& model, const std::string& split, Device d,
                                                    int64_t batch_size) {
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  return qa_breakdown(eval_splits_.at(split), answer_split(model, split, d, batch_size),
                      parse_qa_metric(options().metric), split);
}

nlohmann::json QaTask::example_request(const std::string& split) const {
  if (!has_split(split) || eval_splits_.at(split).empty()) return nullptr;
  const QaExample& e = eval_splits_.at(split).front();
  return {{"question", e.question}, {"context", e.context}};
}

EvalResult QaTask::evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) {
  const std::vector<QaExample>& gold = eval_splits_.at(split);
  const std::map<std::string, std::string> predictions = answer_split(model, split, d, batch_size);
  if (!predictions_dir_.empty()) {
    const std::string name = split == "eval" ? "predictions.json" : "predictions-" + split + ".json";
    write_predictions_json((std::filesystem::path(predictions_dir_) / name).string(), predictions);
  }
  const SquadScore s = evaluate_squad(gold, predictions, parse_qa_metric(options().metric));
  EvalResult r;
  r.metrics = {{"exact_match", s.exact_match}, {"f1", s.f1}};
  r.primary = "f1";
  r.scorer = s.metric;
  return r;
}

std::vector<nlohmann::json> QaTask::predict(EncoderModel& model, const std::vector<nlohmann::json>& requests, Device d,
                                            int64_t batch_size, int) const {
  HR_CHECK(tok_, "QaTask::predict before encode");
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& r : requests) inputs.emplace_back(r["question"], r["context"]);
  const auto answers = predict_answers(model, *tok_, windowing(max_len_), options().max_answer_len, inputs, d, batch_size);
  std::vector<nlohmann::json> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const QaPrediction& a = answers[i];
    nlohmann::json j = {{"question", inputs[i].first}, {"answer", a.text}};
    j["score"] = a.found ? nlohmann::json(a.score) : nlohmann::json(nullptr);
    j["offsets"] = a.found ? nlohmann::json::array({a.begin, a.end}) : nlohmann::json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

std::unique_ptr<Task> make_qa_task(const TaskContext& ctx) {
  return std::make_unique<QaTask>(ctx.data, ctx.load_data, ctx.output_dir);
}

}  // namespace hr
