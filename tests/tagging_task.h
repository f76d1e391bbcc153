// The worked example of README "Adding a task": token classification (tagging) in one file. A task brings its Task
// class, its head when none fits (here a per-token linear layer), and one register_task line. Data: JSONL lines
// {"words": [...], "tags": [...]}; each word's first wordpiece carries its tag, every other position is ignored.
#pragma once

#include <fstream>

#include "framework/autograd.h"
#include "framework/ops.h"
#include "train/data/label_set.h"
#include "train/tasks/task_registry.h"

namespace hr {

class TaggingHead : public TaskHead {
 public:
  TaggingHead(int64_t d_model, int64_t tags)
      : weight(register_parameter("weight", {tags, d_model}, Init::normal(0.02f))),
        bias(register_parameter("bias", {tags}, Init::zeros())) {}
  Tensor forward(const Tensor& h, const EncoderInput&) override { return linear(h, weight, bias); }  // (B, T, tags)
  const char* name() const override { return "tagger"; }
  Tensor& weight;  // (tags, D)
  Tensor& bias;    // (tags)
};

class TaggingTask : public Task {
 public:
  explicit TaggingTask(const TaskContext& ctx) {
    std::vector<std::string> tags;
    if (std::ifstream f(ctx.run_dir + "/tags.txt"); !ctx.run_dir.empty() && f)
      for (std::string line; std::getline(f, line);) tags.push_back(line);
    if (ctx.load_data) {
      const SplitFiles& files = ctx.data.as<SplitFileOptions>().files;
      train_ = read(files.train_path);
      if (!files.eval_path.empty()) eval_ = read(files.eval_path);
      if (tags.empty())
        for (const auto& s : train_) tags.insert(tags.end(), s.tags.begin(), s.tags.end());
    }
    tags_ = LabelSet(tags);
  }
  ModelDims dims() const override { return {0, tags_.size(), 0}; }
  std::vector<std::string> training_texts() const override {
    std::vector<std::string> t;
    for (const auto& s : train_) t.push_back(join(s.words));
    return t;
  }
  void encode(const Tokenizer& tok, int64_t max_len) override {
    tok_ = &tok;
    max_len_ = max_len;
    for (auto* split : {&train_, &eval_})
      for (auto& s : *split) s.row = row(s.words, s.tags);
  }
  void save(const std::string& run_dir) const override {
    std::ofstream f(run_dir + "/tags.txt");
    for (const auto& t : tags_.labels()) f << t << "\n";
  }
  int64_t num_train() const override { return static_cast<int64_t>(train_.size()); }
  int64_t train_length(int64_t r) const override { return static_cast<int64_t>(train_[static_cast<size_t>(r)].row.ids.size()); }
  Batch make_batch(const std::vector<int64_t>& rows, Device d) const override { return batch(train_, rows, d); }
  Tensor loss(EncoderModel& model, const Batch& b, float smoothing) const override {
    const Tensor logits = model.forward(b.input);  // (B, T, tags)
    return cross_entropy(reshape(logits, {-1, logits.dim(2)}), b.labels, -100, smoothing);
  }
  bool has_split(const std::string& split) const override { return split == "eval" && !eval_.empty(); }
  EvalResult evaluate(EncoderModel& model, const std::string&, Device d, int64_t batch_size) override {
    int64_t right = 0, total = 0;
    const bool was_training = model.training();
    model.eval();
    NoGradGuard ng;
    for (size_t at = 0; at < eval_.size(); at += static_cast<size_t>(batch_size)) {
      std::vector<int64_t> rows;
      for (size_t r = at; r < std::min(eval_.size(), at + static_cast<size_t>(batch_size)); ++r)
        rows.push_back(static_cast<int64_t>(r));
      const Batch b = batch(eval_, rows, d);
      const std::vector<float> logits = model.forward(b.input).to_vector();
      const std::vector<int32_t> gold = b.labels.to_ids();
      const size_t C = static_cast<size_t>(tags_.size());
      for (size_t i = 0; i < gold.size(); ++i) {
        if (gold[i] < 0) continue;
        const float* l = logits.data() + i * C;
        right += std::max_element(l, l + C) - l == gold[i];
        ++total;
      }
    }
    model.train(was_training);
    return {{{"token_accuracy", total ? static_cast<double>(right) / static_cast<double>(total) : 0.0}},
            "token_accuracy"};
  }
  std::vector<std::string> input_fields() const override { return {"text"}; }
  std::vector<nlohmann::json> predict(EncoderModel& model, const std::vector<nlohmann::json>& requests, Device d,
                                      int64_t, int) const override {
    const bool was_training = model.training();
    model.eval();
    NoGradGuard ng;
    std::vector<nlohmann::json> out;
    for (const auto& r : requests) {
      std::vector<std::string> words;
      std::istringstream in(r["text"].get<std::string>());
      for (std::string w; in >> w;) words.push_back(w);
      const Row row_ = row(words, {});
      const std::vector<float> logits =
          model.forward(make_encoder_input({row_.ids}, tok_->vocab().pad_id(), d)).to_vector();
      nlohmann::json tags = nlohmann::json::array();
      const size_t C = static_cast<size_t>(tags_.size());
      for (size_t t = 0; t < row_.first_piece.size(); ++t) {
        const float* l = logits.data() + static_cast<size_t>(row_.first_piece[t]) * C;
        tags.push_back(tags_.name(static_cast<int32_t>(std::max_element(l, l + C) - l)));
      }
      out.push_back({{"text", r["text"]}, {"tags", tags}});
    }
    model.train(was_training);
    return out;
  }

 private:
  struct Row {
    std::vector<int32_t> ids, labels;  // labels: -100 where no word starts
    std::vector<int64_t> first_piece;  // position of each word's first piece (words that fit)
  };
  struct Sentence {
    std::vector<std::string> words, tags;
    Row row;
  };
  static std::string join(const std::vector<std::string>& words) {
    std::string s;
    for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
    return s;
  }
  static std::vector<Sentence> read(const std::string& path) {
    std::vector<Sentence> out;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);) {
      const auto j = nlohmann::json::parse(line);
      out.push_back({j.at("words"), j.at("tags"), {}});
      HR_CHECK(out.back().words.size() == out.back().tags.size(), path + ": words and tags differ in length");
    }
    return out;
  }
  // [CLS] pieces of each word [SEP], cut to max_len
  Row row(const std::vector<std::string>& words, const std::vector<std::string>& tags) const {
    Row r{{tok_->vocab().cls_id()}, {-100}, {}};
    for (size_t w = 0; w < words.size(); ++w) {
      const std::vector<int32_t> pieces = tok_->encode(words[w]).ids;
      if (pieces.empty() || static_cast<int64_t>(r.ids.size() + pieces.size()) >= max_len_) break;
      r.first_piece.push_back(static_cast<int64_t>(r.ids.size()));
      for (size_t p = 0; p < pieces.size(); ++p) {
        r.ids.push_back(pieces[p]);
        r.labels.push_back(p == 0 && !tags.empty() ? tags_.id(tags[w]) : -100);
      }
    }
    r.ids.push_back(tok_->vocab().sep_id());
    r.labels.push_back(-100);
    return r;
  }
  Batch batch(const std::vector<Sentence>& split, const std::vector<int64_t>& rows, Device d) const {
    std::vector<std::vector<int32_t>> ids;
    size_t T = 1;
    for (int64_t r : rows) T = std::max(T, split[static_cast<size_t>(r)].row.ids.size());
    std::vector<int32_t> labels;
    Batch b;
    for (int64_t r : rows) {
      const Row& row = split[static_cast<size_t>(r)].row;
      ids.push_back(row.ids);
      labels.insert(labels.end(), row.labels.begin(), row.labels.end());
      labels.resize(labels.size() + (T - row.ids.size()), -100);  // padding
      b.tokens += static_cast<int64_t>(row.ids.size());
    }
    b.input = make_encoder_input(ids, tok_->vocab().pad_id(), d);
    b.labels = Tensor::from_ids(labels, {static_cast<int64_t>(labels.size())}, d);  // (B*T)
    return b;
  }

  std::vector<Sentence> train_, eval_;
  LabelSet tags_;
  const Tokenizer* tok_ = nullptr;
  int64_t max_len_ = 0;
};

// The one registration line: data.task "tagging" trains model.type "encoder_tagger", whose head is TaggingHead.
inline void register_tagging_task() {
  register_task("tagging", {"encoder_tagger", [](const TaskContext& c) { return std::make_unique<TaggingTask>(c); },
                            [](const Config&, const HeadSettings& s) {
                              return std::make_unique<TaggingHead>(s.d_model, s.dims.num_labels);
                            },
                            nullptr});  // no read_options: its data: keys are train_path, eval_path, test_path
}

}  // namespace hr
