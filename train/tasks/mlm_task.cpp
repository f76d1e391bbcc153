#include "train/tasks/mlm_task.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include "framework/autocast.h"
#include "framework/autograd.h"
#include "framework/ops.h"
#include "kernels/base/error.h"
#include "models/mlm_head.h"
#include "train/data/text_corpus.h"

namespace hr {

namespace {

constexpr int32_t kIgnore = -100;
constexpr uint64_t kEvalSeed = 0x5EED'E7A1ull;  // the eval and test rows' one masking, the same for every run

// The mlm head of an encoder_mlm model.
const MlmHead& mlm_head(const EncoderModel& model) {
  const auto* head = dynamic_cast<const MlmHead*>(&model.head());
  HR_CHECK(head, "data.task mlm needs model.type encoder_mlm");
  return *head;
}

// Flat positions (b * T + t) and labels of the masked tokens of labels (B, T).
void masked_positions(const Tensor& labels, std::vector<int64_t>& positions, std::vector<int32_t>& targets) {
  const std::vector<int32_t> l = labels.to_ids();
  for (size_t i = 0; i < l.size(); ++i)
    if (l[i] != kIgnore) {
      positions.push_back(static_cast<int64_t>(i));
      targets.push_back(l[i]);
    }
}

}  // namespace

MlmTask::MlmTask(const DataOptions& data, bool load_data) : data_(data), load_data_(load_data) {}

std::vector<std::string> MlmTask::training_texts() const {
  // the first documents of the training corpus, up to kTextBytes: enough for a WordPiece vocabulary of a few thousand
  // tokens, and a bound on the trainer's memory and time for a corpus of any size
  constexpr size_t kTextBytes = 16u << 20;
  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const std::string& f : options().train_files) {
    if (bytes >= kTextBytes) break;
    read_documents(f, std::cerr, [&](std::string_view doc) {
      if (bytes >= kTextBytes) return;
      texts.emplace_back(doc);
      bytes += doc.size();
    });
  }
  std::cerr << "data: a vocabulary from the first " << texts.size() << " documents of data.train_path ("
            << bytes / 1024 << " KB; set tokenizer.vocab to use a fixed one)\n";
  return texts;
}

void MlmTask::encode(const Tokenizer& tok, int64_t max_len) {
  HR_CHECK(data_.max_seq_len <= max_len, "data.max_seq_len " + std::to_string(data_.max_seq_len) +
                                             " is longer than model.max_len " + std::to_string(max_len));
  tok_ = &tok;
  row_len_ = data_.max_seq_len > 0 ? data_.max_seq_len : max_len;
  const MlmOptions& o = options();
  vocab_info_ = MlmVocabInfo::from(tok.vocab(), o.mask.whole_word, "tokenizer.vocab");
  if (!load_data_) return;
  const auto open = [&](const std::string& split) {
    TokenCache cache = TokenCache::open(o.files(split), tok, o.cache_dir, std::cerr);
    const int64_t rows = packed_rows(cache.size(), row_len_);
    std::cerr << "data: " << split << ": " << cache.documents() << " documents (" << cache.rules() << "), "
              << cache.size() << " tokens, " << rows << " rows of " << row_len_ << " (cache " << cache.path() << ")\n";
    if (rows == 0)
      throw ConfigError("data." + split + "_path: the corpus (" + std::to_string(cache.size()) +
                        " tokens) packs into no full row of " + std::to_string(row_len_) +
                        " tokens (data.max_seq_len, or model.max_len)");
    return std::pair{std::move(cache), rows};
  };
  if (!o.train_files.empty()) {
    auto [cache, rows] = open("train");
    train_.emplace(std::move(cache));
    train_rows_ = rows;
  }
  for (const char* split : {"eval", "test"}) {
    if (o.files(split).empty()) continue;
    auto [cache, rows] = open(split);
    if (o.max_eval_rows > 0) rows = std::min(rows, o.max_eval_rows);
    splits_.emplace(split, Split{std::move(cache), rows});
  }
}

const TokenCache* MlmTask::cache(const std::string& split) const {
  if (split == "train") return train_ ? &*train_ : nullptr;
  const auto it = splits_.find(split);
  return it == splits_.end() ? nullptr : &it->second.cache;
}

void MlmTask::start_epoch(int64_t epoch, uint64_t seed) {
  epoch_ = epoch;
  seed_ = seed;
}

Batch MlmTask::masked_batch(const TokenCache& cache, const std::vector<int64_t>& rows, uint64_t seed,
                            const std::vector<uint64_t>& draws, Device d) const {
  HR_CHECK(tok_ && vocab_info_, "mlm: encode() has not run");
  const int64_t B = static_cast<int64_t>(rows.size()), T = row_len_;
  std::vector<int32_t> ids(static_cast<size_t>(B * T)), labels(ids.size());
  const Vocab& v = tok_->vocab();
  for (int64_t b = 0; b < B; ++b) {
    int32_t* row = ids.data() + b * T;
    packed_row(cache, rows[static_cast<size_t>(b)], T, v.cls_id(), v.sep_id(), row);
    mlm_mask_row(options().mask, *vocab_info_, seed, draws[static_cast<size_t>(b)], row, labels.data() + b * T, T);
  }
  Batch batch;
  batch.input.ids = Tensor::from_ids(ids, {B, T}, d);
  batch.input.segments = Tensor::from_ids(std::vector<int32_t>(ids.size(), 0), {B, T}, d);
  batch.input.token_mask = Tensor::full({B, T}, 1.f, d);  // packed rows have no padding
  batch.input.key_mask = Tensor::zeros({B, T}, d);
  batch.labels = Tensor::from_ids(labels, {B, T}, d);
  batch.tokens = B * T;
  return batch;
}

Batch MlmTask::make_batch(const std::vector<int64_t>& rows, Device d) const {
  HR_CHECK(train_, "mlm: no training corpus (data.train_path)");
  // a row's draw index: which time it is drawn (its epoch) and which row, so no two draws of a run share one
  std::vector<uint64_t> draws;
  for (int64_t r : rows)
    draws.push_back(static_cast<uint64_t>(epoch_) * static_cast<uint64_t>(train_rows_) + static_cast<uint64_t>(r));
  return masked_batch(*train_, rows, seed_, draws, d);
}

Tensor MlmTask::loss(EncoderModel& model, const Batch& batch, float label_smoothing) const {
  std::vector<int64_t> positions;
  std::vector<int32_t> targets;
  masked_positions(batch.labels, positions, targets);
  const AutocastScope autocast(model.precision(), model.parameters());  // the head's products too
  const Tensor hidden = model.hidden_states(batch.input);  // (B, T, D)
  if (positions.empty()) return scale(sum(hidden), 0.f);  // no masked token: loss 0, no gradient
  const Tensor logits = mlm_head(model).logits_at(hidden, positions);  // (M, V)
  const Tensor labels = Tensor::from_ids(targets, {static_cast<int64_t>(targets.size())}, hidden.device());
  return cross_entropy(logits, labels, kIgnore, label_smoothing);
}

double MlmTask::loss_weight(const Batch& batch) const {
  const std::vector<int32_t> l = batch.labels.to_ids();
  return static_cast<double>(std::count_if(l.begin(), l.end(), [](int32_t x) { return x != kIgnore; }));
}

int64_t MlmTask::split_rows(const std::string& split) const {
  if (split == "train") return num_train();
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  return splits_.at(split).rows;
}

Batch MlmTask::make_split_batch(const std::string& split, const std::vector<int64_t>& rows, Device d) const {
  if (split == "train") return make_batch(rows, d);
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  return masked_batch(splits_.at(split).cache, rows, kEvalSeed, std::vector<uint64_t>(rows.begin(), rows.end()), d);
}

EvalResult MlmTask::evaluate(EncoderModel& model, const std::string& split, Device d, int64_t batch_size) {
  HR_CHECK(has_split(split), "the run's data has no '" + split + "' split");
  const int64_t n = splits_.at(split).rows;
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
  const AutocastScope autocast(model.precision(), model.parameters());
  const MlmHead& head = mlm_head(model);
  const int64_t V = head.bias.dim(0);
  constexpr size_t kChunk = 256;  // masked positions decoded at once: (256, V) logits on the host for the top-1
  double loss_sum = 0;
  int64_t masked = 0, correct = 0;
  for (int64_t at = 0; at < n; at += batch_size) {
    std::vector<int64_t> rows(static_cast<size_t>(std::min(batch_size, n - at)));
    std::iota(rows.begin(), rows.end(), at);
    const Batch b = make_split_batch(split, rows, d);
    std::vector<int64_t> positions;
    std::vector<int32_t> targets;
    masked_positions(b.labels, positions, targets);
    const Tensor hidden = model.hidden_states(b.input);
    for (size_t c = 0; c < positions.size(); c += kChunk) {
      const size_t e = std::min(positions.size(), c + kChunk);
      const std::vector<int64_t> pos(positions.begin() + static_cast<std::ptrdiff_t>(c),
                                     positions.begin() + static_cast<std::ptrdiff_t>(e));
      const std::vector<int32_t> tgt(targets.begin() + static_cast<std::ptrdiff_t>(c),
                                     targets.begin() + static_cast<std::ptrdiff_t>(e));
      const Tensor logits = head.logits_at(hidden, pos);  // (m, V)
      const Tensor labels = Tensor::from_ids(tgt, {static_cast<int64_t>(tgt.size())}, d);
      loss_sum += static_cast<double>(cross_entropy(logits, labels).item()) * static_cast<double>(tgt.size());
      const std::vector<float> l = logits.to_vector();
      for (size_t i = 0; i < tgt.size(); ++i) {
        const float* row = l.data() + static_cast<int64_t>(i) * V;
        correct += (std::max_element(row, row + V) - row) == tgt[i];
      }
      masked += static_cast<int64_t>(tgt.size());
    }
  }
  model.train(was_training);
  EvalResult r;
  const double loss = masked ? loss_sum / static_cast<double>(masked) : 0;
  r.metrics["mlm_loss"] = loss;
  r.metrics["perplexity"] = std::exp(loss);
  r.metrics["masked_accuracy"] = masked ? 100.0 * static_cast<double>(correct) / static_cast<double>(masked) : 0;
  r.metrics["masked_tokens"] = static_cast<double>(masked);
  r.primary = "masked_accuracy";
  return r;
}

std::vector<nlohmann::json> MlmTask::predict(EncoderModel& model, const std::vector<nlohmann::json>& requests,
                                             Device d, int64_t batch_size, int top) const {
  HR_CHECK(tok_ && vocab_info_, "mlm: encode() has not run");
  const Vocab& v = tok_->vocab();
  const int32_t mask_id = vocab_info_->mask_id;
  const std::string kMask = "[MASK]";
  std::vector<nlohmann::json> out;
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
  for (size_t at = 0; at < requests.size(); at += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(requests.size(), at + static_cast<size_t>(batch_size));
    std::vector<std::vector<int32_t>> rows;
    for (size_t i = at; i < end; ++i) {
      // the text around each literal [MASK] is tokenised on its own (BERT's tokenizer never splits [MASK])
      const std::string text = requests[i].at("text").get<std::string>();
      std::vector<int32_t> ids = {v.cls_id()};
      size_t from = 0;
      for (;;) {
        const size_t m = text.find(kMask, from);
        const Encoding e = tok_->encode(std::string_view(text).substr(from, m == std::string::npos ? m : m - from));
        ids.insert(ids.end(), e.ids.begin(), e.ids.end());
        if (m == std::string::npos) break;
        ids.push_back(mask_id);
        from = m + kMask.size();
      }
      ids.push_back(v.sep_id());
      HR_CHECK(static_cast<int64_t>(ids.size()) <= model.max_len(),
               "the text has " + std::to_string(ids.size()) + " tokens with [CLS] and [SEP], more than model.max_len " +
                   std::to_string(model.max_len()));
      HR_CHECK(std::count(ids.begin(), ids.end(), mask_id) > 0, "the text has no [MASK] to fill");
      rows.push_back(std::move(ids));
    }
    const EncoderInput in = make_encoder_input(rows, v.pad_id(), d);
    const int64_t T = in.ids.dim(1);
    std::vector<int64_t> positions;
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t t = 0; t < rows[r].size(); ++t)
        if (rows[r][t] == mask_id) positions.push_back(static_cast<int64_t>(r) * T + static_cast<int64_t>(t));
    const AutocastScope autocast(model.precision(), model.parameters());
    const MlmHead& head = mlm_head(model);
    const std::vector<float> logits = head.logits_at(model.hidden_states(in), positions).to_vector();  // (M, V)
    const int64_t V = head.bias.dim(0);
    size_t p = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      nlohmann::json masks = nlohmann::json::array();
      for (size_t t = 0; t < rows[r].size(); ++t) {
        if (rows[r][t] != mask_id) continue;
        const float* row = logits.data() + static_cast<int64_t>(p++) * V;
        const float mx = *std::max_element(row, row + V);
        double z = 0;
        for (int64_t k = 0; k < V; ++k) z += std::exp(static_cast<double>(row[k] - mx));
        std::vector<int32_t> order(static_cast<size_t>(V));
        std::iota(order.begin(), order.end(), 0);
        const int64_t k = std::min<int64_t>(std::max(top, 1), V);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int32_t a, int32_t b) { return row[a] > row[b]; });
        nlohmann::json cands = nlohmann::json::array();
        for (int64_t j = 0; j < k; ++j) {
          std::vector<int32_t> filled(rows[r].begin() + 1, rows[r].end() - 1);
          filled[t - 1] = order[static_cast<size_t>(j)];
          cands.push_back({{"token", v.token(order[static_cast<size_t>(j)])},
                           {"probability", std::exp(static_cast<double>(row[order[static_cast<size_t>(j)]] - mx)) / z},
                           {"sequence", tok_->decode(filled)}});
        }
        masks.push_back(std::move(cands));
      }
      out.push_back({{"text", requests[at + r].at("text")}, {"masks", std::move(masks)}});
    }
  }
  model.train(was_training);
  return out;
}

std::unique_ptr<Task> make_mlm_task(const TaskContext& ctx) {
  return std::make_unique<MlmTask>(ctx.data, ctx.load_data);
}

}  // namespace hr
