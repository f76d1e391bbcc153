// The training step's arithmetic on its own (train/run/training_step.h): owned gradient buffers, the global norm,
// clipping, gradient accumulation over micro-batches, and the non-finite skip.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>

#include "framework/autograd.h"
#include "framework/config.h"
#include "framework/ops.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "models/encoder_model.h"
#include "tests/tiny_step.h"
#include "train/run/training_step.h"

using namespace hr;
using namespace hr::testing;

namespace {

// An optimizer that changes nothing and keeps a copy of every gradient it was given.
class TwoParams : public Module {
 public:
  TwoParams()
      : used(register_parameter("used", {3}, Init::constant(1.f))),
        unused(register_parameter("unused", {2, 2}, Init::constant(1.f))) {}
  Tensor& used;
  Tensor& unused;
};

double norm_of(const std::vector<std::vector<float>>& grads) {
  double s = 0;
  for (const auto& g : grads)
    for (float v : g) s += double(v) * v;
  return std::sqrt(s);
}

// Rows of random ids and labels, 4 rows per micro-batch.
struct Data {
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> labels;
};
Data make_data(int n) {
  Data d;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> r;
    for (int t = 0; t < 3 + i % 4; ++t) r.push_back(1 + (i * 7 + t * 3) % 19);
    d.rows.push_back(r);
    d.labels.push_back(i % 3);
  }
  return d;
}
Tensor loss_of_rows(EncoderModel& m, const Data& d, int first, int count) {
  std::vector<std::vector<int32_t>> rows(d.rows.begin() + first, d.rows.begin() + first + count);
  std::vector<int32_t> labels(d.labels.begin() + first, d.labels.begin() + first + count);
  return cross_entropy(m.forward(make_encoder_input(rows, 0, Device::CPU)), Tensor::from_ids(labels, {count}));
}

}  // namespace

TEST_CASE("every parameter owns a gradient buffer: zero when the loss does not reach it, never shared") {
  TwoParams m;
  backward(sum(mul(m.used, m.used)));
  REQUIRE(m.unused.grad().defined());
  CHECK(m.unused.grad().to_vector() == std::vector<float>(4, 0.f));
  CHECK(m.used.grad().to_vector() == std::vector<float>{2.f, 2.f, 2.f});

  // one upstream gradient feeding two parameters (add's backward hands both the same g): accumulating into one must
  // not change the other
  TwoParams n;
  Tensor two = reshape(n.unused, {4});
  backward(sum(add(slice(two, 0, 0, 3), n.used)));
  backward(sum(scale(n.used, 3.f)));
  CHECK(n.used.grad().to_vector() == std::vector<float>{4.f, 4.f, 4.f});
  CHECK(n.unused.grad().to_vector() == std::vector<float>{1.f, 1.f, 1.f, 0.f});

  // in a flat buffer the ranges are disjoint and cover it
  auto model = tiny_model();
  FlatGradients flat(model->parameters());
  std::set<const float*> starts;
  int64_t total = 0;
  for (const Tensor& p : model->parameters()) {
    const float* g = p.grad().data();
    CHECK(g >= flat.flat().data());
    CHECK(g + p.numel() <= flat.flat().data() + flat.numel());
    starts.insert(g);
    total += p.numel();
  }
  CHECK(starts.size() == model->parameters().size());
  CHECK(total == flat.numel());
}

TEST_CASE("the flat gradients' norm is the global L2 norm; the clip factor caps it and keeps the direction") {
  TwoParams m;
  FlatGradients flat(m.parameters());
  backward(add(sum(scale(m.used, 2.f)), sum(scale(m.unused, -4.f))));  // grads: 3 x 2 and 4 x -4
  const float expected = std::sqrt(3.f * 4.f + 4.f * 16.f);  // sqrt(76)
  CHECK(flat.norm() == doctest::Approx(expected).epsilon(1e-6));
  CHECK(clip_factor(expected, 100.f) == 1.f);  // below: untouched
  CHECK(clip_factor(std::numeric_limits<float>::infinity(), 1.f) == 1.f);  // a non-finite norm skips the step instead
  flat.scale(clip_factor(flat.norm(), 1.f));
  CHECK(flat.norm() == doctest::Approx(1.f).epsilon(1e-5));
  for (float v : m.used.grad().to_vector()) CHECK(v == doctest::Approx(2.f / expected).epsilon(1e-5));
  for (float v : m.unused.grad().to_vector()) CHECK(v == doctest::Approx(-4.f / expected).epsilon(1e-5));
}

TEST_CASE("the training step clips to the global norm, keeps the direction, and reports the norm before clipping") {
  for (const float clip : {0.f, 1e-3f}) {
    CAPTURE(clip);
    auto model = tiny_model();
    RecordingOptimizer opt(model->named_parameters());
    TrainingStep step(*model, opt, StepOptions{1, clip});
    const Data d = make_data(4);
    const StepResult r = step.run([&](int64_t) { return loss_of_rows(*model, d, 0, 4); }, 1.f);
    REQUIRE(r.applied);
    const double seen = norm_of(opt.seen);
    if (clip == 0.f) {
      CHECK(seen == doctest::Approx(r.grad_norm).epsilon(1e-5));
      CHECK(r.grad_norm > 1e-2f);  // so that 1e-3 really clips
    } else {
      CHECK(seen == doctest::Approx(clip).epsilon(1e-3));
      // the same direction as the unclipped gradient: compare with a fresh run without clipping
      auto ref_model = tiny_model();
      RecordingOptimizer ref(ref_model->named_parameters());
      TrainingStep ref_step(*ref_model, ref, StepOptions{1, 0.f});
      ref_step.run([&](int64_t) { return loss_of_rows(*ref_model, d, 0, 4); }, 1.f);
      CHECK(r.grad_norm == doctest::Approx(norm_of(ref.seen)).epsilon(1e-5));
      const double c = clip / norm_of(ref.seen);
      for (size_t i = 0; i < opt.seen.size(); ++i)
        for (size_t j = 0; j < opt.seen[i].size(); ++j)
          CHECK(opt.seen[i][j] == doctest::Approx(ref.seen[i][j] * c).epsilon(1e-3).scale(1e-7));
    }
  }
}

TEST_CASE("grad_accum: k micro-batches of b give the update of one batch of k*b (dropout off)") {
  const Data d = make_data(8);
  auto whole = tiny_model();
  RecordingOptimizer one(whole->named_parameters());
  TrainingStep big(*whole, one, StepOptions{1, 0.f});
  const StepResult rb = big.run([&](int64_t) { return loss_of_rows(*whole, d, 0, 8); }, 1.f);

  auto parts = tiny_model();
  RecordingOptimizer two(parts->named_parameters());
  TrainingStep accum(*parts, two, StepOptions{2, 0.f});
  const StepResult ra = accum.run([&](int64_t micro) { return loss_of_rows(*parts, d, 4 * static_cast<int>(micro), 4); },
                                  1.f);
  REQUIRE(rb.applied);
  REQUIRE(ra.applied);
  // equal-sized micro-batches: the mean of the two means is the mean of the whole batch
  CHECK(ra.loss == doctest::Approx(rb.loss).epsilon(1e-5));
  CHECK(ra.grad_norm == doctest::Approx(rb.grad_norm).epsilon(1e-4));
  REQUIRE(one.seen.size() == two.seen.size());
  for (size_t i = 0; i < one.seen.size(); ++i)
    for (size_t j = 0; j < one.seen[i].size(); ++j)
      CHECK(two.seen[i][j] == doctest::Approx(one.seen[i][j]).epsilon(1e-4).scale(1e-6));
}

TEST_CASE("a non-finite loss skips the step: no update, gradients zero, the tape freed") {
  auto model = tiny_model();
  RecordingOptimizer opt(model->named_parameters());
  TrainingStep step(*model, opt, StepOptions{2, 1.f});
  const Data d = make_data(8);
  const StepResult r = step.run(
      [&](int64_t micro) {
        Tensor l = loss_of_rows(*model, d, 0, 4);
        return micro == 1 ? scale(l, std::numeric_limits<float>::infinity()) : l;
      },
      1.f);
  CHECK_FALSE(r.applied);
  CHECK(opt.steps() == 0);
  CHECK(Tape::current().size() == 0);
  for (const Tensor& p : model->parameters())
    for (float g : p.grad().to_vector()) CHECK(g == 0.f);
}

TEST_CASE("under bf16 the weights' copies outlive a step: AdamW rewrites them, and the weights stay bitwise those of "
          "rounding afresh every step") {
  const Data d = make_data(4);
  for (const bool adamw : {true, false}) {
    CAPTURE(adamw);
    const auto make_opt = [&](EncoderModel& m) -> std::unique_ptr<Optimizer> {
      const NamedTensors p = m.named_parameters();
      if (adamw) return std::make_unique<AdamW>(p, matrix_decay_flags(p), AdamWOptions{});
      return std::make_unique<SGD>(p, matrix_decay_flags(p), 0.9f, 0.01f);  // rewrites no copies: rounded afresh
    };
    auto model = tiny_model();
    auto opt = make_opt(*model);
    TrainingStep step(*model, *opt, StepOptions{1, 0.f, Precision::BF16});
    // the reference: a scope of its own every step, so every weight is rounded from its f32 values
    auto ref_model = tiny_model();
    auto ref_opt = make_opt(*ref_model);
    const std::vector<Tensor> ref_params = ref_model->parameters();
    const auto ref_step = [&](float lr) {
      for (const Tensor& p : ref_params) p.grad().fill_(0.f);
      {
        const AutocastScope scope(Precision::BF16, ref_params);
        backward(loss_of_rows(*ref_model, d, 0, 4));
      }
      ref_opt->step(lr);
    };
    std::vector<int64_t> conversions;
    for (int s = 0; s < 4; ++s) {
      const int64_t before = autocast::weight_conversions();
      REQUIRE(step.run([&](int64_t) { return loss_of_rows(*model, d, 0, 4); }, 0.05f).applied);
      conversions.push_back(autocast::weight_conversions() - before);
      ref_step(0.05f);
      if (s == 1) {  // the weights move outside the step: its copies must not be used again
        opt->step(0.05f);
        ref_opt->step(0.05f);
      }
    }
    const std::vector<Tensor> params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      CAPTURE(i);
      CHECK(params[i].to_vector() == ref_params[i].to_vector());
    }
    CHECK(conversions[0] > 0);  // the first step rounds every weight the matmuls read
    if (adamw) {
      CHECK(conversions[1] == 0);  // ... AdamW kept the copies current
      CHECK(conversions[2] == conversions[0]);  // ... not after an update outside the step
      CHECK(conversions[3] == 0);
    } else {
      for (int s = 1; s < 4; ++s) CHECK(conversions[s] == conversions[0]);
    }
  }
}
