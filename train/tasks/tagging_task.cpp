#include "train/tasks/tagging_task.h"

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "framework/autograd.h"
#include "framework/ops.h"
#include "train/data/conll_data.h"
#include "train/data/label_set.h"

namespace hr {

namespace {

constexpr int32_t kIgnore = -100;  // cross_entropy's ignore_index: positions that are no word's first piece

class TaggingHead : public TaskHead {
 public:
  TaggingHead(int64_t d_model, int64_t tags, float dropout)
      : weight(register_parameter("weight", {tags, d_model}, Init::normal(0.02f))),
        bias(register_parameter("bias", {tags}, Init::zeros())),
        dropout_(dropout) {}
  Tensor forward(const Tensor& h, const EncoderInput&) override {  // (B, T, D) -> (B, T, tags)
    return linear(dropout(h, dropout_, training()), weight, bias);
  }
  const char* name() const override { return "tagger"; }
  Tensor& weight;  // (tags, D)
  Tensor& bias;    // (tags)

 private:
  float dropout_;
};

class TaggingTask : public Task {
 public:
  TaggingTask(const TaskContext& ctx, std::optional<LabelSet> tags) : data_(ctx.data) {
    if (ctx.load_data) {
      const SplitFiles& files = data_.as<SplitFileOptions>().files;
      for (const char* split : {"train", "eval", "test"}) {
        const std::string& path = files.path(split);
        if (path.empty()) continue;
        ConllData d = load_conll(path, parse_on_error(data_.on_error));
        for (const DataIssue& i : d.issues) std::cerr << "data: " << i.message() << "\n";
        HR_CHECK(!d.sentences.empty(), "data: " + path + " holds no usable sentence");
        splits_[split].sentences = std::move(d.sentences);
      }
    }
    if (!tags) {
      HR_CHECK(splits_.count("train"), "tagging: without data.train_path, the tags come from the run's tags.txt");
      std::vector<std::string> all;
      for (const TaggedSentence& s : splits_["train"].sentences) all.insert(all.end(), s.tags.begin(), s.tags.end());
      tags = LabelSet(all);
    }
    tags_ = *tags;
  }

  ModelDims dims() const override { return {0, tags_.size(), 0}; }
  std::vector<std::string> training_texts() const override {
    std::vector<std::string> texts;
    if (splits_.count("train"))
      for (const TaggedSentence& s : splits_.at("train").sentences) texts.push_back(join(s.words, 0, s.words.size()));
    return texts;
  }
  void encode(const Tokenizer& tok, int64_t max_len) override {
    HR_CHECK(data_.max_seq_len <= max_len, "data.max_seq_len " + std::to_string(data_.max_seq_len) +
                                               " is longer than model.max_len " + std::to_string(max_len));
    tok_ = &tok;
    max_len_ = data_.max_seq_len > 0 ? data_.max_seq_len : max_len;
    for (auto& [name, s] : splits_) {
      s.rows.clear();
      for (const TaggedSentence& sentence : s.sentences) s.rows.push_back(row(sentence.words, &sentence.tags));
    }
    // a row without a tagged position would make the loss a mean over nothing
    if (auto it = splits_.find("train"); it != splits_.end()) {
      Split& t = it->second, kept;
      for (size_t i = 0; i < t.rows.size(); ++i) {
        if (std::all_of(t.rows[i].labels.begin(), t.rows[i].labels.end(), [](int32_t l) { return l == kIgnore; }))
          continue;
        kept.sentences.push_back(std::move(t.sentences[i]));
        kept.rows.push_back(std::move(t.rows[i]));
      }
      if (kept.rows.size() < t.rows.size())
        std::cerr << "data: " << t.rows.size() - kept.rows.size() << " training sentences have no word that fits "
                  << max_len_ << " tokens; not trained on\n";
      HR_CHECK(!kept.rows.empty(), "data: no training sentence has a word that fits " + std::to_string(max_len_) +
                                       " tokens");
      t = std::move(kept);
    }
  }
  void save(const std::string& run_dir) const override { write_label_file(tags_, run_dir + "/tags.txt"); }

  int64_t num_train() const override { return splits_.count("train") ? split_rows("train") : 0; }
  int64_t train_length(int64_t r) const override {
    return static_cast<int64_t>(splits_.at("train").rows[static_cast<size_t>(r)].ids.size());
  }
  Batch make_batch(const std::vector<int64_t>& rows, Device d) const override {
    return batch(splits_.at("train"), rows, d);
  }
  Tensor loss(EncoderModel& model, const Batch& b, float smoothing) const override {
    const Tensor logits = model.forward(b.input);  // (B, T, tags)
    return cross_entropy(reshape(logits, {-1, logits.dim(2)}), reshape(b.labels, {-1}), kIgnore, smoothing);
  }
  double loss_weight(const Batch& b) const override {  // the loss is a mean over tagged positions, not rows
    const std::vector<int32_t> l = b.labels.to_ids();
    return static_cast<double>(std::count_if(l.begin(), l.end(), [](int32_t x) { return x != kIgnore; }));
  }

  bool has_split(const std::string& split) const override { return split != "train" && splits_.count(split); }
  EvalResult evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) override {
    HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
    const Split& s = splits_.at(split);
    std::vector<std::vector<std::string>> gold, pred;
    const bool was_training = model.training();
    model.eval();
    NoGradGuard ng;
    for (size_t at = 0; at < s.rows.size(); at += static_cast<size_t>(batch_size)) {
      std::vector<int64_t> rows;
      for (size_t r = at; r < std::min(s.rows.size(), at + static_cast<size_t>(batch_size)); ++r)
        rows.push_back(static_cast<int64_t>(r));
      const Batch b = batch(s, rows, d);
      const std::vector<float> logits = model.forward(b.input).to_vector();  // (B, T, tags)
      const size_t row_size = static_cast<size_t>(b.input.ids.dim(1) * tags_.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        pred.push_back(best_tags(s.rows[static_cast<size_t>(rows[i])], logits.data() + i * row_size));
        gold.push_back(s.sentences[static_cast<size_t>(rows[i])].tags);
      }
    }
    model.train(was_training);
    EvalResult r;
    r.metrics = entity_scores(gold, pred);  // precision, recall, f1 of entities; accuracy of words
    r.primary = "f1";
    return r;
  }
  int64_t split_rows(const std::string& split) const override {
    HR_CHECK(splits_.count(split), "the run's data has no '" + split + "' split");
    return static_cast<int64_t>(splits_.at(split).rows.size());
  }
  Batch make_split_batch(const std::string& split, const std::vector<int64_t>& rows, Device d) const override {
    HR_CHECK(splits_.count(split), "the run's data has no '" + split + "' split");
    return batch(splits_.at(split), rows, d);
  }

  std::vector<std::string> input_fields() const override { return {"text"}; }
  // {"text", "tags": one per white-space separated word, "entities": [{"text", "type", "start", "end"}]} (word
  // indices, end exclusive)
  std::vector<nlohmann::json> predict(EncoderModel& model, const std::vector<nlohmann::json>& requests, Device d,
                                      int64_t batch_size, int) const override {
    HR_CHECK(tok_, "TaggingTask::predict before encode");
    const bool was_training = model.training();
    model.eval();
    NoGradGuard ng;
    std::vector<nlohmann::json> out;
    for (size_t at = 0; at < requests.size(); at += static_cast<size_t>(batch_size)) {
      const size_t stop = std::min(requests.size(), at + static_cast<size_t>(batch_size));
      std::vector<std::vector<std::string>> words;
      std::vector<Row> rows;
      std::vector<std::vector<int32_t>> ids;
      for (size_t i = at; i < stop; ++i) {
        std::istringstream in(requests[i]["text"].get<std::string>());
        words.emplace_back();
        for (std::string w; in >> w;) words.back().push_back(w);
        rows.push_back(row(words.back(), nullptr));
        ids.push_back(rows.back().ids);
      }
      const EncoderInput input = make_encoder_input(ids, tok_->vocab().pad_id(), d);
      const std::vector<float> logits = model.forward(input).to_vector();  // (B, T, tags)
      const size_t row_size = static_cast<size_t>(input.ids.dim(1) * tags_.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        const std::vector<std::string> tags = best_tags(rows[i], logits.data() + i * row_size);
        nlohmann::json entities = nlohmann::json::array();
        for (const EntitySpan& e : entity_spans(tags))
          entities.push_back({{"text", join(words[i], e.begin, e.end)}, {"type", e.type}, {"start", e.begin},
                              {"end", e.end}});
        out.push_back({{"text", requests[at + i]["text"]}, {"tags", tags}, {"entities", entities}});
      }
    }
    model.train(was_training);
    return out;
  }

 private:
  struct Row {
    std::vector<int32_t> ids, labels;  // labels: a word's tag id at its first piece, kIgnore elsewhere
    std::vector<int64_t> first_piece;  // each word's first piece in the row; -1 where the word is not in the row
  };
  struct Split {
    std::vector<TaggedSentence> sentences;
    std::vector<Row> rows;  // encode(): one per sentence
  };

  static std::string join(const std::vector<std::string>& words, size_t begin, size_t end) {
    std::string s;
    for (size_t w = begin; w < end; ++w) s += (w > begin ? " " : "") + words[w];
    return s;
  }
  // [CLS] the pieces of each word [SEP] in max_len_ tokens: a word is in whole or not at all, and none after the first
  // that did not fit; a word without pieces (e.g. a control character alone) has no position.
  Row row(const std::vector<std::string>& words, const std::vector<std::string>* tags) const {
    Row r{{tok_->vocab().cls_id()}, {kIgnore}, {}};
    bool full = false;
    for (size_t w = 0; w < words.size(); ++w) {
      const std::vector<int32_t> pieces = tok_->encode(words[w]).ids;
      if (full || pieces.empty() || static_cast<int64_t>(r.ids.size() + pieces.size()) >= max_len_) {
        full = full || !pieces.empty();
        r.first_piece.push_back(-1);
        continue;
      }
      r.first_piece.push_back(static_cast<int64_t>(r.ids.size()));
      const auto id = tags ? tags_.find((*tags)[w]) : std::nullopt;  // a tag that training never saw: no target
      for (size_t p = 0; p < pieces.size(); ++p) {
        r.ids.push_back(pieces[p]);
        r.labels.push_back(p == 0 && id ? *id : kIgnore);
      }
    }
    r.ids.push_back(tok_->vocab().sep_id());
    r.labels.push_back(kIgnore);
    return r;
  }
  // The best tag of each word from its row's logits (T, tags); O for a word that is not in the row.
  std::vector<std::string> best_tags(const Row& r, const float* logits) const {
    const size_t C = static_cast<size_t>(tags_.size());
    std::vector<std::string> out;
    for (int64_t at : r.first_piece) {
      if (at < 0) {
        out.push_back("O");
        continue;
      }
      const float* l = logits + static_cast<size_t>(at) * C;
      out.push_back(tags_.name(static_cast<int32_t>(std::max_element(l, l + C) - l)));
    }
    return out;
  }
  Batch batch(const Split& s, const std::vector<int64_t>& rows, Device d) const {
    size_t T = 1;
    for (int64_t r : rows) T = std::max(T, s.rows[static_cast<size_t>(r)].ids.size());
    std::vector<std::vector<int32_t>> ids;
    std::vector<int32_t> labels;
    Batch b;
    for (int64_t r : rows) {
      const Row& row = s.rows[static_cast<size_t>(r)];
      ids.push_back(row.ids);
      labels.insert(labels.end(), row.labels.begin(), row.labels.end());
      labels.resize(labels.size() + (T - row.ids.size()), kIgnore);  // padding
      b.tokens += static_cast<int64_t>(row.ids.size());
    }
    b.input = make_encoder_input(ids, tok_->vocab().pad_id(), d);
    b.labels = Tensor::from_ids(labels, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(T)}, d);  // (B, T)
    return b;
  }

  DataOptions data_;
  LabelSet tags_;
  std::map<std::string, Split> splits_;  // "train", "eval", "test": those the config names
  const Tokenizer* tok_ = nullptr;
  int64_t max_len_ = 0;
};

}  // namespace

std::unique_ptr<Task> make_tagging_task(const TaskContext& ctx) {
  std::optional<LabelSet> tags;
  if (!ctx.run_dir.empty()) tags = read_label_file(ctx.run_dir + "/tags.txt");
  return std::make_unique<TaggingTask>(ctx, std::move(tags));
}

std::unique_ptr<TaskHead> make_tagging_head(const Config&, const HeadSettings& s) {
  HR_CHECK(s.dims.num_labels > 0, "a tagger needs at least one tag");
  return std::make_unique<TaggingHead>(s.d_model, s.dims.num_labels, s.dropout);
}

}  // namespace hr
