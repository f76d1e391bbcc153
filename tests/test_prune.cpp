// Head pruning (exact against the gated model, with talking heads and residual logits), head importance (per-example
// gradients of a head mask, checked against finite differences), and head reordering absorbed by the projection.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "models/encoder_layer.h"
#include "tests/temp_dir.h"
#include "train/run/checkpoint.h"
#include "train/tools/head_importance.h"
#include "train/tools/prune.h"

using namespace hr;

namespace {

constexpr int64_t kVocab = 40, kLabels = 5;

const char* kHeader = R"(
type: encoder_classifier
d_model: 16
ffn_dim: 24
max_len: 12
dropout: 0.1
pooling: mean
)";

std::unique_ptr<EncoderModel> make_model(const std::string& yaml) {
  return build_model(Config::parse(yaml, "<test>"), ModelDims{kVocab, kLabels});
}

// Larger random weights than the initialisation, so that every head visibly matters.
void randomize(EncoderModel& m, uint32_t seed, float std = 0.4f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, std);
  for (auto& [name, t] : m.named_parameters()) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    for (float& x : v) x = n(rng);
    t.copy_from(Tensor::from_vector(v, t.shape()));
  }
}

MultiHeadAttention& attn(EncoderModel& m, size_t i) { return dynamic_cast<EncoderLayer&>(m.layer(i)).attn; }

void set(Tensor& t, const std::vector<float>& v) { t.copy_from(Tensor::from_vector(v, t.shape())); }

EncoderInput sample_input() {
  std::vector<std::vector<int32_t>> rows = {{1, 5, 9, 13, 2}, {1, 7, 3, 30, 22, 17, 11, 2}, {1, 38, 2}};
  return make_encoder_input(rows, 0, Device::CPU);
}

std::vector<float> eval_logits(EncoderModel& m, const EncoderInput& in) {
  m.eval();
  NoGradGuard ng;
  return m.forward(in).to_vector();
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// Prunes `m` by gates at threshold 0 and checks the pruned model's logits against the gated model's.
PrunePlan prune_and_compare(EncoderModel& m, const std::string& yaml, std::unique_ptr<EncoderModel>* out = nullptr) {
  const PrunePlan plan = plan_pruning(m, PruneOptions{}, nullptr);
  PrunedModel p = prune_model(m, Config::parse(yaml, "<test>"), plan);
  const EncoderInput in = sample_input();
  const std::vector<float> ref = eval_logits(m, in), got = eval_logits(*p.model, in);
  CHECK(max_abs_diff(ref, got) < 1e-5f);
  if (out) *out = std::move(p.model);
  return plan;
}

}  // namespace

TEST_CASE("pruning closed gates is exact: different head counts per layer, a layer left with no head") {
  const std::string yaml = std::string(kHeader) + R"(
layers:
  - repeat: 2
    attention: {heads: 4, head_dim: 5, gates: {type: l0}}
  - attention: {heads: 3, head_dim: 4, gates: {type: l0}}
  - attention: {heads: 2, head_dim: 6}
)";
  auto m = make_model(yaml);
  randomize(*m, 1);
  // eval z = clamp(sigmoid(log_alpha) * 1.2 - 0.1, 0, 1): -10 -> 0 (closed), 0 -> 0.5, 3 -> 1, -1.5 -> 0.118
  set(attn(*m, 0).gates->log_alpha, {-10.f, 0.f, 3.f, -1.5f});
  set(attn(*m, 1).gates->log_alpha, {0.5f, -10.f, -10.f, 1.f});
  set(attn(*m, 2).gates->log_alpha, {-10.f, -12.f, -10.f});
  std::unique_ptr<EncoderModel> pruned;
  const PrunePlan plan = prune_and_compare(*m, yaml, &pruned);
  CHECK(plan.exact);
  CHECK(plan.keep == std::vector<std::vector<int64_t>>{{1, 2, 3}, {0, 3}, {}, {0, 1}});
  CHECK(plan.notes.empty());
  CHECK(attn(*pruned, 0).options().heads == 3);
  CHECK(attn(*pruned, 2).options().heads == 0);
  CHECK(attn(*pruned, 2).q == nullptr);
  CHECK(attn(*pruned, 3).options().heads == 2);
  for (size_t i = 0; i < 4; ++i) CHECK(attn(*pruned, i).gates == nullptr);
  // a head of dim Dh holds Dh (4 * 16 + 3) weights (q, k, v rows and biases, o columns); 3 closed heads of dim 5,
  // 3 of dim 4, and the 4 + 4 + 3 gates
  const int64_t removed = 3 * 5 * (4 * 16 + 3) + 3 * 4 * (4 * 16 + 3) + (4 + 4 + 3);
  CHECK(pruned->num_parameters() == m->num_parameters() - removed);

  // the gate fold matters: without it (o columns copied as they are) the outputs differ
  PrunedModel unfolded = prune_model(*m, Config::parse(yaml, "<test>"), plan);
  for (auto& [name, t] : unfolded.model->named_parameters())
    if (name == "layers.0.attn.o.weight") t.copy_from(Tensor::from_vector(
        [&] {
          const std::vector<float> w = attn(*m, 0).o.weight.to_vector();  // (16, 20) -> heads 1..3: columns 5..19
          std::vector<float> v;
          for (int r = 0; r < 16; ++r) v.insert(v.end(), w.begin() + r * 20 + 5, w.begin() + r * 20 + 20);
          return v;
        }(),
        t.shape()));
  CHECK(max_abs_diff(eval_logits(*m, sample_input()), eval_logits(*unfolded.model, sample_input())) > 1e-3f);
}

TEST_CASE("pruning by keep N ranks heads over the whole model by open probability") {
  const std::string yaml = std::string(kHeader) + R"(
layers:
  - repeat: 2
    attention: {heads: 3, head_dim: 4, gates: {type: l0}}
)";
  auto m = make_model(yaml);
  randomize(*m, 2);
  set(attn(*m, 0).gates->log_alpha, {2.f, -1.f, 0.5f});
  set(attn(*m, 1).gates->log_alpha, {1.f, 3.f, -3.f});
  PruneOptions opt;
  opt.keep = 3;
  const PrunePlan plan = plan_pruning(*m, opt, nullptr);
  CHECK(plan.keep == std::vector<std::vector<int64_t>>{{0}, {0, 1}});
  CHECK_FALSE(plan.exact);  // head 2 of layer 0 was partly open
  opt.keep = 0;
  CHECK(plan_pruning(*m, opt, nullptr).keep == std::vector<std::vector<int64_t>>{{}, {}});
}

TEST_CASE("talking heads: a closed head is removed only when its mixing rows reach no kept head") {
  const std::string yaml = std::string(kHeader) + R"(
norm: post
layers:
  - attention: {heads: 4, head_dim: 4, talking_heads: true, gates: {type: l0}}
  - attention: {heads: 3, head_dim: 4, gates: {type: l0}}
)";
  auto m = make_model(yaml);
  randomize(*m, 3);
  set(attn(*m, 0).gates->log_alpha, {1.f, -10.f, 0.f, 2.f});
  set(attn(*m, 1).gates->log_alpha, {1.f, 1.f, -10.f});
  // dense mixing: head 1's logits and weights feed the kept heads, so it must stay (its gate folds its output to 0)
  PrunePlan plan = prune_and_compare(*m, yaml);
  CHECK(plan.keep[0] == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(plan.keep[1] == std::vector<int64_t>{0, 1});
  CHECK(plan.notes.size() == 1);
  // removing it anyway is not exact
  PrunePlan forced = plan;
  forced.keep[0] = {0, 2, 3};
  PrunedModel approx = prune_model(*m, Config::parse(yaml, "<test>"), forced);
  CHECK(max_abs_diff(eval_logits(*m, sample_input()), eval_logits(*approx.model, sample_input())) > 1e-3f);

  // head 1 mixing only into itself (row 1 zero outside [1, 1]): now it goes, and the 3x3 mixing blocks stay exact
  for (Tensor* t : {attn(*m, 0).talk_logits, attn(*m, 0).talk_weights}) {
    std::vector<float> v = t->to_vector();
    for (int j = 0; j < 4; ++j)
      if (j != 1) v[static_cast<size_t>(4 + j)] = 0.f;
    set(*t, v);
  }
  std::unique_ptr<EncoderModel> pruned;
  plan = prune_and_compare(*m, yaml, &pruned);
  CHECK(plan.keep[0] == std::vector<int64_t>{0, 2, 3});
  CHECK(plan.notes.empty());
  CHECK(attn(*pruned, 0).talk_logits->shape() == Shape{3, 3});
}

TEST_CASE("residual logits: linked layers keep their heads, a layer whose logits go nowhere is pruned") {
  const std::string yaml = std::string(kHeader) + R"(
layers:
  - attention: {heads: 4, head_dim: 4, cross_layer: residual_logits, gates: {type: l0}}
  - attention: {heads: 3, head_dim: 4, cross_layer: residual_logits}
  - attention: {heads: 4, head_dim: 4, gates: {type: l0}}
  - attention: {heads: 2, head_dim: 4, cross_layer: residual_logits, gates: {type: l0}}
)";
  auto m = make_model(yaml);
  randomize(*m, 4);
  REQUIRE(attn(*m, 1).cross_map != nullptr);  // 4 -> 3 heads: a learned map
  set(attn(*m, 0).gates->log_alpha, {1.f, -10.f, 0.f, 2.f});
  set(attn(*m, 2).gates->log_alpha, {-10.f, 1.f, 1.f, 1.f});
  set(attn(*m, 3).gates->log_alpha, {-10.f, 2.f});
  std::unique_ptr<EncoderModel> pruned;
  const PrunePlan plan = prune_and_compare(*m, yaml, &pruned);
  CHECK(plan.keep == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {0, 1, 2}, {1, 2, 3}, {1}});
  CHECK(plan.notes.size() == 1);
  CHECK(attn(*pruned, 3).cross_map == nullptr);  // layer 2 breaks the chain: layer 3 receives no logits
}

TEST_CASE("a pruned checkpoint has no optimizer state and loads into the pruned config") {
  const std::string yaml = std::string(kHeader) + R"(
layers:
  - attention: {heads: 3, head_dim: 4, gates: {type: l0}}
)";
  auto m = make_model(yaml);
  randomize(*m, 5);
  set(attn(*m, 0).gates->log_alpha, {1.f, -10.f, 0.f});
  PrunedModel p = prune_model(*m, Config::parse(yaml, "<test>"), plan_pruning(*m, PruneOptions{}, nullptr));
  const hr::testing::TempDir d;
  const std::string path = d / "pruned.safetensors";
  save_checkpoint(path, *p.model, nullptr, TrainState{});
  auto reloaded = build_model(Config::parse(p.model_yaml, "<pruned>"), ModelDims{kVocab, kLabels});
  load_checkpoint(path, *reloaded, nullptr);
  CHECK(max_abs_diff(eval_logits(*m, sample_input()), eval_logits(*reloaded, sample_input())) < 1e-5f);
  NamedTensors params = reloaded->named_parameters();
  AdamW adamw(params, std::vector<bool>(params.size(), true), AdamWOptions{});
  CHECK_THROWS_AS(load_checkpoint(path, *reloaded, &adamw), Error);
}

TEST_CASE("reordering heads before the output projection changes nothing") {
  const std::string yaml = std::string(kHeader) + R"(
layers:
  - attention: {heads: 4, head_dim: 3}
  - attention: {heads: 2, head_dim: 5}
)";
  auto m = make_model(yaml);
  randomize(*m, 6);
  const std::vector<float> before = eval_logits(*m, sample_input());
  MultiHeadAttention& a = attn(*m, 0);
  const std::vector<int64_t> perm = {2, 0, 3, 1};  // new head h is old head perm[h]
  const int64_t Dh = 3, D = 16, HD = 12;
  for (Linear* lin : {a.q, a.k, a.v}) {
    const std::vector<float> w = lin->weight.to_vector(), b = lin->bias.to_vector();
    std::vector<float> w2(w.size()), b2(b.size());
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t d = 0; d < Dh; ++d) {
        const int64_t to = h * Dh + d, from = perm[static_cast<size_t>(h)] * Dh + d;
        b2[static_cast<size_t>(to)] = b[static_cast<size_t>(from)];
        for (int64_t c = 0; c < D; ++c) w2[static_cast<size_t>(to * D + c)] = w[static_cast<size_t>(from * D + c)];
      }
    set(lin->weight, w2);
    set(lin->bias, b2);
  }
  const std::vector<float> o = a.o.weight.to_vector();  // (D, H*Dh)
  std::vector<float> o2(o.size());
  for (int64_t r = 0; r < D; ++r)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t d = 0; d < Dh; ++d)
        o2[static_cast<size_t>(r * HD + h * Dh + d)] = o[static_cast<size_t>(r * HD + perm[static_cast<size_t>(h)] * Dh + d)];
  set(a.o.weight, o2);
  CHECK(max_abs_diff(before, eval_logits(*m, sample_input())) < 1e-5f);
  // permuting the o columns alone does change the outputs
  set(a.o.weight, o);
  CHECK(max_abs_diff(before, eval_logits(*m, sample_input())) > 1e-3f);
}

namespace {

// A fixed labelled split for the importance code.
class ToyTask : public Task {
 public:
  std::vector<std::vector<int32_t>> rows = {{1, 5, 9, 13, 2}, {1, 7, 3, 30, 22, 17, 11, 2}, {1, 38, 2},
                                            {1, 4, 4, 8, 2},   {1, 19, 2, 6},                 {1, 25, 26, 27, 28, 2}};
  std::vector<int32_t> labels = {0, 3, 1, 4, 2, 0};
  ModelDims dims() const override { return {kVocab, kLabels, 0}; }
  std::vector<std::string> training_texts() const override { return {}; }
  void encode(const Tokenizer&, int64_t) override {}
  std::vector<std::string> input_fields() const override { return {"text"}; }
  std::vector<nlohmann::json> predict(EncoderModel&, const std::vector<nlohmann::json>&, Device, int64_t,
                                      int) const override {
    return {};
  }
  int64_t num_train() const override { return static_cast<int64_t>(rows.size()); }
  int64_t train_length(int64_t r) const override { return static_cast<int64_t>(rows[static_cast<size_t>(r)].size()); }
  Batch make_batch(const std::vector<int64_t>& idx, Device d) const override {
    std::vector<std::vector<int32_t>> ids;
    std::vector<int32_t> l;
    for (int64_t r : idx) ids.push_back(rows[static_cast<size_t>(r)]), l.push_back(labels[static_cast<size_t>(r)]);
    Batch b;
    b.input = make_encoder_input(ids, 0, d);
    b.labels = Tensor::from_ids(l, {static_cast<int64_t>(l.size())}, d);
    return b;
  }
  Tensor loss(EncoderModel& model, const Batch& b, float smoothing) const override {
    return cross_entropy(model.forward(b.input), b.labels, -100, smoothing);
  }
  bool has_split(const std::string& s) const override { return s == "eval"; }
  EvalResult evaluate(EncoderModel&, const std::string&, Device, int64_t) override { return {}; }
  int64_t split_rows(const std::string&) const override { return num_train(); }
  Batch make_split_batch(const std::string&, const std::vector<int64_t>& idx, Device d) const override {
    return make_batch(idx, d);
  }
};

const std::string kImportanceYaml = std::string(kHeader) + R"(
layers:
  - attention: {heads: 3, head_dim: 4}
  - attention: {heads: 2, head_dim: 4, gates: {type: l0}}
)";

}  // namespace

TEST_CASE("head importance: the mask gradient matches finite differences, a head with zero output scores 0") {
  auto m = make_model(kImportanceYaml);
  randomize(*m, 7);
  m->eval();
  ToyTask task;
  MultiHeadAttention& a = attn(*m, 0);
  // zero o columns of head 1: its output never reaches the residual stream
  std::vector<float> o = a.o.weight.to_vector();  // (16, 12)
  for (int r = 0; r < 16; ++r)
    for (int d = 0; d < 4; ++d) o[static_cast<size_t>(r * 12 + 4 + d)] = 0.f;
  set(a.o.weight, o);

  // d loss / d xi for an (H) mask at xi = 1 against central differences
  const Batch b = task.make_batch({0, 1, 2, 3, 4, 5}, Device::CPU);
  Tensor mask = Tensor::full({3}, 1.f).set_requires_grad();
  a.set_head_mask(mask);
  backward(task.loss(*m, b, 0.f));
  const std::vector<float> grad = mask.grad().to_vector();
  for (int h = 0; h < 3; ++h) {
    auto loss_at = [&](float xi) {
      NoGradGuard ng;
      std::vector<float> mask = {1.f, 1.f, 1.f};
      mask[static_cast<size_t>(h)] = xi;
      a.set_head_mask(Tensor::from_vector(mask, {3}));
      return task.loss(*m, b, 0.f).item();
    };
    const float eps = 1e-2f, fd = (loss_at(1.f + eps) - loss_at(1.f - eps)) / (2 * eps);
    CHECK(grad[static_cast<size_t>(h)] == doctest::Approx(fd).epsilon(1e-2).scale(1e-3));
  }
  CHECK(std::fabs(grad[1]) == 0.f);
  CHECK(std::fabs(grad[0]) > 1e-4f);
  a.set_head_mask(Tensor());
  m->zero_grad();

  // importance = mean over examples of |per-example gradient|, checked against one example at a time
  ImportanceOptions opt;
  opt.batch_size = 4;  // two batches, the second one short
  const HeadScores imp = head_importance(*m, task, opt);
  REQUIRE(imp.size() == 2);
  HeadScores expected = {{0, 0, 0}, {0, 0}};
  for (int64_t r = 0; r < 6; ++r) {
    const Batch one = task.make_batch({r}, Device::CPU);
    std::vector<Tensor> masks;
    for (size_t i = 0; i < 2; ++i) {
      masks.push_back(Tensor::full({i == 0 ? 3 : 2}, 1.f).set_requires_grad());
      attn(*m, i).set_head_mask(masks.back());
    }
    backward(task.loss(*m, one, 0.f));
    for (size_t i = 0; i < 2; ++i) {
      const std::vector<float> g = masks[i].grad().to_vector();
      for (size_t h = 0; h < g.size(); ++h) expected[i][h] += std::fabs(g[h]) / 6.f;
      attn(*m, i).set_head_mask(Tensor());
    }
  }
  m->zero_grad();
  for (size_t i = 0; i < 2; ++i)
    for (size_t h = 0; h < expected[i].size(); ++h) CHECK(imp[i][h] == doctest::Approx(expected[i][h]).epsilon(1e-4).scale(1e-4));
  CHECK(imp[0][1] == 0.f);
  CHECK(imp[0][0] > 0.f);

  const HeadScores norm = normalize_per_layer(imp);
  for (const auto& row : norm) {
    double s = 0;
    for (float v : row) s += double(v) * v;
    CHECK(s == doctest::Approx(1.0).epsilon(1e-5));
  }

  // pruning by importance keeps the top heads over both layers; head 1 of layer 0 is never among them
  PruneOptions popt;
  popt.by = "importance";
  popt.keep = 3;
  const PrunePlan plan = plan_pruning(*m, popt, &norm);
  int64_t kept = 0;
  for (const auto& k : plan.keep) kept += static_cast<int64_t>(k.size());
  CHECK(kept == 3);
  CHECK_FALSE(std::binary_search(plan.keep[0].begin(), plan.keep[0].end(), int64_t{1}));
  CHECK_THROWS_AS(plan_pruning(*m, popt, nullptr), Error);
}
