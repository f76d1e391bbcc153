#include "train/tasks/classification_task.h"

#include <algorithm>
#include <iostream>
#include <numeric>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "train/tasks/classification_breakdown.h"

namespace hr {

std::vector<int32_t> encode_text_row(const Tokenizer& tok, const TextExample& ex, int64_t max_len) {
  const Vocab& v = tok.vocab();
  std::vector<int32_t> body = ex.input_ids.empty() ? tok.encode(ex.text).ids : ex.input_ids;
  for (int32_t id : body)
    HR_CHECK(id >= 0 && id < v.size(), ex.source + ": input id " + std::to_string(id) + " outside the vocabulary of " +
                                           std::to_string(v.size()));
  const size_t keep = std::min(body.size(), static_cast<size_t>(std::max<int64_t>(0, max_len - 2)));
  std::vector<int32_t> row;
  row.reserve(keep + 2);
  row.push_back(v.cls_id());
  row.insert(row.end(), body.begin(), body.begin() + static_cast<std::ptrdiff_t>(keep));
  row.push_back(v.sep_id());
  return row;
}

PairRow encode_pair_row(const Tokenizer& tok, const TextExample& ex, int64_t max_len) {
  const Vocab& v = tok.vocab();
  const std::vector<int32_t> a = tok.encode(ex.text).ids, b = tok.encode(ex.text_pair).ids;
  // longest first, one token at a time: the result of transformers' slow-tokenizer loop, whose tie cuts the second
  size_t keep_a = a.size(), keep_b = b.size();
  const size_t budget = static_cast<size_t>(std::max<int64_t>(0, max_len - 3));  // [CLS], two [SEP]
  while (keep_a + keep_b > budget) (keep_a > keep_b ? keep_a : keep_b) -= 1;
  PairRow row;
  row.ids.reserve(keep_a + keep_b + 3);
  row.ids.push_back(v.cls_id());
  row.ids.insert(row.ids.end(), a.begin(), a.begin() + static_cast<std::ptrdiff_t>(keep_a));
  row.ids.push_back(v.sep_id());
  row.segments.assign(row.ids.size(), 0);
  row.ids.insert(row.ids.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(keep_b));
  row.ids.push_back(v.sep_id());
  row.segments.resize(row.ids.size(), 1);
  return row;
}

std::map<std::string, double> classification_metrics(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                                     int32_t num_labels, int32_t oos_label) {
  std::vector<int64_t> tp(static_cast<size_t>(num_labels)), fp(tp.size()), fn(tp.size());
  int64_t correct = 0, in_scope = 0, in_scope_correct = 0, oos = 0, oos_found = 0;
  for (size_t i = 0; i < gold.size(); ++i) {
    const int32_t g = gold[i], p = pred[i];
    if (g == p) {
      ++correct;
      ++tp[static_cast<size_t>(g)];
    } else {
      ++fn[static_cast<size_t>(g)];
      ++fp[static_cast<size_t>(p)];
    }
    if (g == oos_label) {
      ++oos;
      oos_found += p == oos_label;
    } else {
      ++in_scope;
      in_scope_correct += g == p;
    }
  }
  double f1_sum = 0;
  int64_t present = 0;
  for (size_t c = 0; c < tp.size(); ++c) {
    if (tp[c] + fp[c] + fn[c] == 0) continue;  // a label neither in gold nor predicted
    ++present;
    f1_sum += 2.0 * static_cast<double>(tp[c]) / static_cast<double>(2 * tp[c] + fp[c] + fn[c]);
  }
  std::map<std::string, double> m;
  m["accuracy"] = gold.empty() ? 0 : static_cast<double>(correct) / static_cast<double>(gold.size());
  m["macro_f1"] = present ? f1_sum / static_cast<double>(present) : 0;
  if (oos_label >= 0) {
    m["oos_recall"] = oos ? static_cast<double>(oos_found) / static_cast<double>(oos) : 0;
    m["in_scope_accuracy"] = in_scope ? static_cast<double>(in_scope_correct) / static_cast<double>(in_scope) : 0;
  }
  return m;
}

std::vector<TextExample> ClassificationTask::load(const std::string& which, const std::optional<LabelSet>& known) {
  const ClassificationOptions& d = options();
  ClassificationDataOptions o;
  o.format = parse_data_format(d.format);
  o.on_error = parse_on_error(data_.on_error);
  o.text_field = d.text_field;
  o.pair_field = d.pair_field;
  o.label_field = d.label_field;
  o.include_oos = d.include_oos;
  o.known_labels = known;
  if (o.format == DataFormat::clinc150) {
    o.path = d.path;
    o.split = which == "train" ? d.train_split : which == "eval" ? d.eval_split : d.test_split;
  } else {
    o.path = d.files.path(which);
  }
  LoadResult r = load_classification_data(o);
  for (const DataIssue& i : r.issues) std::cerr << "data: " << i.message() << " (skipped)\n";
  return std::move(r.examples);
}

ClassificationTask::ClassificationTask(const DataOptions& data, std::optional<LabelSet> labels, bool load_data)
    : data_(data) {
  if (!load_data) {
    HR_CHECK(labels, "classification: without the data, the labels must come from the run's labels.txt");
    labels_ = *labels;
    return;
  }
  const ClassificationOptions& o = options();
  if (o.has_split("train")) {
    train_.examples = load("train", labels);
    const std::string file = o.format == "clinc150" ? o.path + " (split " + o.train_split + ")" : o.files.path("train");
    HR_CHECK(!train_.examples.empty(), "no training examples were loaded from " + file + ": every row was skipped "
                                       "(the messages above say why) or the file is empty");
  }
  HR_CHECK(labels || !train_.examples.empty(), "classification: without data.train_path, the labels must come from the "
                                               "run's labels.txt");
  labels_ = labels ? *labels : LabelSet::from_examples(train_.examples);
  for (const char* split : {"eval", "test"}) {
    if (!o.has_split(split)) continue;
    eval_splits_[split].examples = load(split, labels_);
    HR_CHECK(!eval_splits_[split].examples.empty(), std::string("data: the ") + split + " split has no usable rows");
  }
}

std::vector<std::string> ClassificationTask::training_texts() const {
  std::vector<std::string> t;
  for (const auto& e : train_.examples) {
    t.push_back(e.text);
    if (pairs()) t.push_back(e.text_pair);
  }
  return t;
}

void ClassificationTask::encode_split(Split& s) const {
  s.ids.clear();
  s.segments.clear();
  s.labels.clear();
  for (const auto& e : s.examples) {
    if (pairs()) {
      PairRow row = encode_pair_row(*tok_, e, max_len_);
      s.ids.push_back(std::move(row.ids));
      s.segments.push_back(std::move(row.segments));
    } else {
      s.ids.push_back(encode_text_row(*tok_, e, max_len_));
    }
    s.labels.push_back(labels_.id(e.label));
  }
}

void ClassificationTask::encode(const Tokenizer& tok, int64_t max_len) {
  HR_CHECK(data_.max_seq_len <= max_len, "data.max_seq_len " + std::to_string(data_.max_seq_len) +
                                             " is longer than model.max_len " + std::to_string(max_len));
  tok_ = &tok;
  max_len_ = data_.max_seq_len > 0 ? data_.max_seq_len : max_len;
  encode_split(train_);
  for (auto& [name, s] : eval_splits_) encode_split(s);
}

// a pair's second text is segment 1, so pairs need segment embeddings (an imported BERT has them either way)
ModelDims ClassificationTask::dims() const { return {0, labels_.size(), pairs() ? 2 : 0}; }

std::vector<std::string> ClassificationTask::input_fields() const {
  if (pairs()) return {options().text_field, options().pair_field};
  return {"text"};
}

void ClassificationTask::save(const std::string& run_dir) const { write_label_file(labels_, run_dir + "/labels.txt"); }

std::unique_ptr<Task> make_classification_task(const TaskContext& ctx) {
  std::optional<LabelSet> labels;
  if (!ctx.run_dir.empty()) labels = read_label_file(ctx.run_dir + "/labels.txt");
  return std::make_unique<ClassificationTask>(ctx.data, std::move(labels), ctx.load_data);
}

Batch ClassificationTask::batch_of(const Split& s, const std::vector<int64_t>& rows, Device d) const {
  std::vector<std::vector<int32_t>> ids, segments;
  std::vector<int32_t> labels;
  Batch b;
  for (int64_t r : rows) {
    const size_t i = static_cast<size_t>(r);
    ids.push_back(s.ids[i]);
    if (pairs()) segments.push_back(s.segments[i]);
    labels.push_back(s.labels[i]);
    b.tokens += static_cast<int64_t>(ids.back().size());
  }
  b.input = make_encoder_input(ids, tok_->vocab().pad_id(), d, pairs() ? &segments : nullptr);
  b.labels = Tensor::from_ids(labels, {static_cast<int64_t>(labels.size())}, d);
  return b;
}

Batch ClassificationTask::make_batch(const std::vector<int64_t>& rows, Device d) const {
  return batch_of(train_, rows, d);
}

Tensor ClassificationTask::loss(EncoderModel& model, const Batch& batch, float label_smoothing) const {
  return cross_entropy(model.forward(batch.input), batch.labels, -100, label_smoothing);
}

int64_t ClassificationTask::split_rows(const std::string& split) const {
  if (split == "train") return num_train();
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  return static_cast<int64_t>(eval_splits_.at(split).ids.size());
}

Batch ClassificationTask::make_split_batch(const std::string& split, const std::vector<int64_t>& rows, Device d) const {
  if (split == "train") return make_batch(rows, d);
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  return batch_of(eval_splits_.at(split), rows, d);
}

bool ClassificationTask::has_split(const std::string& split) const { return eval_splits_.count(split) > 0; }

std::vector<int32_t> ClassificationTask::predicted_labels(EncoderModel& model, const Split& s, Device d,
                                                         int64_t batch_size) const {
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
  std::vector<int32_t> pred;
  for (size_t at = 0; at < s.ids.size(); at += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(s.ids.size(), at + static_cast<size_t>(batch_size));
    std::vector<int64_t> rows(end - at);
    std::iota(rows.begin(), rows.end(), static_cast<int64_t>(at));
    const std::vector<float> logits = model.forward(batch_of(s, rows, d).input).to_vector();
    const size_t C = static_cast<size_t>(labels_.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto* row = logits.data() + i * C;
      pred.push_back(static_cast<int32_t>(std::max_element(row, row + C) - row));
    }
  }
  model.train(was_training);
  return pred;
}

EvalResult ClassificationTask::evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) {
  const Split& s = eval_splits_.at(split);
  const std::vector<int32_t> pred = predicted_labels(model, s, d, batch_size);
  const auto oos = labels_.find("oos");
  EvalResult r;
  r.metrics = classification_metrics(s.labels, pred, labels_.size(), oos ? *oos : -1);
  r.primary = "accuracy";
  return r;
}

std::vector<BreakdownTable> ClassificationTask::error_breakdown(EncoderModel& model, const std::string& split, Device d,
                                                                int64_t batch_size) {
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  const Split& s = eval_splits_.at(split);
  return classification_breakdown(s.labels, predicted_labels(model, s, d, batch_size), labels_.labels(), split);
}

nlohmann::json ClassificationTask::example_request(const std::string& split) const {
  if (!has_split(split) || eval_splits_.at(split).examples.empty()) return nullptr;
  const TextExample& e = eval_splits_.at(split).examples.front();
  const std::vector<std::string> fields = input_fields();
  nlohmann::json r = {{fields[0], e.text}};
  if (pairs()) r[fields[1]] = e.text_pair;
  return r;
}

std::vector<nlohmann::json> ClassificationTask::predict(EncoderModel& model, const std::vector<nlohmann::json>& requests,
                                                        Device d, int64_t batch_size, int top) const {
  HR_CHECK(tok_, "ClassificationTask::predict before encode");
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
  std::vector<nlohmann::json> out;
  const std::vector<std::string> fields = input_fields();
  const size_t C = static_cast<size_t>(labels_.size());
  for (size_t at = 0; at < requests.size(); at += static_cast<size_t>(batch_size)) {
    const size_t stop = std::min(requests.size(), at + static_cast<size_t>(batch_size));
    std::vector<std::vector<int32_t>> rows, segments;
    for (size_t i = at; i < stop; ++i) {
      TextExample ex;
      ex.source = "<input>";
      ex.text = requests[i][fields[0]].get<std::string>();
      if (pairs()) {
        ex.text_pair = requests[i][fields[1]].get<std::string>();
        PairRow row = encode_pair_row(*tok_, ex, max_len_);
        rows.push_back(std::move(row.ids));
        segments.push_back(std::move(row.segments));
      } else {
        rows.push_back(encode_text_row(*tok_, ex, max_len_));
      }
    }
    const EncoderInput in = make_encoder_input(rows, tok_->vocab().pad_id(), d, pairs() ? &segments : nullptr);
    const std::vector<float> p = softmax(model.forward(in)).to_vector();
    for (size_t i = at; i < stop; ++i) {
      const float* probs = p.data() + (i - at) * C;
      std::vector<int32_t> order(C);
      for (size_t c = 0; c < C; ++c) order[c] = static_cast<int32_t>(c);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
      nlohmann::json top_k = nlohmann::json::array();
      for (int k = 0; k < top && k < static_cast<int>(C); ++k)
        top_k.push_back({{"label", labels_.name(order[static_cast<size_t>(k)])}, {"probability", probs[order[static_cast<size_t>(k)]]}});
      nlohmann::json answer;
      for (const std::string& f : fields) answer[f] = requests[i][f];
      answer["label"] = top_k[0]["label"];
      answer["top"] = top_k;
      out.push_back(std::move(answer));
    }
  }
  model.train(was_training);
  return out;
}

}  // namespace hr
