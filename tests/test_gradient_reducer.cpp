// The data-parallel reducer's logic without MPI (train/run/gradient_reducer.h): a stand-in communicator plays a second
// rank that computed the same gradients. Checks that bucketed all-reduces started during backward give the gradient
// of a reduction after it, start in bucket order and cover the buffer once, that one rank's non-finite loss skips the
// step, that a rank without rows still takes part, and that a gradient written after its bucket started is an error.
#include <doctest/doctest.h>

#include "framework/autograd.h"
#include "framework/config.h"
#include "framework/ops.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "models/encoder_model.h"
#include "tests/tiny_step.h"
#include "train/run/gradient_reducer.h"

using namespace hr;
using namespace hr::testing;

namespace {

// Rank 0 of 2; "rank 1" computed exactly this rank's gradients (a sum doubles them) and reports `other_share` of the
// loss and `other_nonfinite` replicas with a non-finite loss. Sums apply when finished, as an asynchronous one would.
class MirrorCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "mirror"; }
  void broadcast(float*, int64_t, int) override {}
  void start_all_reduce_sum(float* data, int64_t n) override {
    started.push_back({data, n});
    pending.push_back({data, n});
    if (Tape::current().size() > 0) ++started_during_backward;  // the tape is cleared when backward ends
  }
  void finish_all_reduces() override {
    for (auto [data, n] : pending)
      for (int64_t i = 0; i < n; ++i) data[i] *= 2.f;
    pending.clear();
  }
  void all_reduce_host(double* v, int64_t n, ReduceOp op) override {
    if (op == ReduceOp::Sum && n == 2) v[0] += other_share, v[1] += other_nonfinite;
  }
  void barrier() override {}

  double other_share = 0, other_nonfinite = 0;
  std::vector<std::pair<float*, int64_t>> started, pending;
  int started_during_backward = 0;
};

Tensor batch_loss(EncoderModel& m) {
  const std::vector<std::vector<int32_t>> rows = {{1, 5, 7}, {2, 9, 4, 11}, {3, 3}, {8, 1, 6, 2}};
  return cross_entropy(m.forward(make_encoder_input(rows, 0, Device::CPU)), Tensor::from_ids({0, 1, 2, 1}, {4}));
}

}  // namespace

TEST_CASE("buckets started during backward give the gradient of one reduction after it, in order, each once") {
  auto model = tiny_model();
  RecordingOptimizer reference_opt(model->named_parameters());
  TrainingStep reference(*model, reference_opt, StepOptions{1, 0.f});
  reference.run([&](int64_t) { return batch_loss(*model); }, 1e-3f);  // the optimizer changes nothing
  const auto expected = reference_opt.seen;

  RecordingOptimizer opt(model->named_parameters());
  TrainingStep step(*model, opt, StepOptions{1, 0.f});
  MirrorCommunicator comm;
  GradientReducer reducer(comm, model->parameters(), step.gradients(), /*bucket_mb=*/0.0005, /*overlap=*/true);
  step.set_sync(&reducer);
  REQUIRE(reducer.stats().buckets > 3);
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    comm.started.clear();
    comm.started_during_backward = 0;
    comm.other_share = 0.25;
    // this rank's share of the rows is one half; "rank 1" doubles it back: exactly the reference gradient
    const StepResult r = step.run([&](int64_t) { return scale(batch_loss(*model), 0.5f); }, 1e-3f);
    REQUIRE(r.applied);
    CHECK(opt.seen == expected);
    // every bucket once, from the end of the flat buffer to its start (backward's order), covering all of it
    REQUIRE(static_cast<int>(comm.started.size()) == reducer.stats().buckets);
    const float* end = step.gradients().flat().data() + step.gradients().numel();
    for (auto [data, n] : comm.started) {
      CHECK(data + n == end);
      end = data;
    }
    CHECK(end == step.gradients().flat().data());
    // the first step only learns how often backward writes each gradient; later ones start buckets during backward
    if (s == 0) CHECK(comm.started_during_backward == 0);
    else CHECK(comm.started_during_backward > 0);
  }
}

TEST_CASE("the reported loss is the sum of the replicas' shares, and one replica's non-finite loss skips the step") {
  auto model = tiny_model();
  RecordingOptimizer opt(model->named_parameters());
  TrainingStep step(*model, opt, StepOptions{1, 0.f});
  MirrorCommunicator comm;
  GradientReducer reducer(comm, model->parameters(), step.gradients(), 25, true);
  step.set_sync(&reducer);
  float local = 0;
  comm.other_share = 0.75;
  StepResult r = step.run([&](int64_t) {
    Tensor l = scale(batch_loss(*model), 0.5f);
    local = l.item();
    return l;
  }, 1e-3f);
  CHECK(r.applied);
  CHECK(r.loss == doctest::Approx(local + 0.75));

  comm.other_nonfinite = 1;  // "rank 1" got NaN: this rank, whose loss is fine, must skip the step too
  const int64_t steps_before = opt.steps();
  r = step.run([&](int64_t) { return scale(batch_loss(*model), 0.5f); }, 1e-3f);
  CHECK_FALSE(r.applied);
  CHECK(opt.steps() == steps_before);
  for (float g : step.gradients().flat().to_vector()) REQUIRE(g == 0.f);
}

TEST_CASE("a replica without rows in the batch still takes part in every collective") {
  auto model = tiny_model();
  RecordingOptimizer opt(model->named_parameters());
  TrainingStep step(*model, opt, StepOptions{2, 0.f});  // two micro-batches, neither with rows here
  MirrorCommunicator comm;
  GradientReducer reducer(comm, model->parameters(), step.gradients(), 0.0005, true);
  step.set_sync(&reducer);
  comm.other_share = 1.5;
  const StepResult r = step.run([&](int64_t) { return Tensor(); }, 1e-3f);
  CHECK(r.applied);
  CHECK(r.loss == doctest::Approx(1.5));
  CHECK(static_cast<int>(comm.started.size()) == reducer.stats().buckets);
}

TEST_CASE("a gradient written again after its bucket's all-reduce started is an error, not a stale sum") {
  struct TwoParams : Module {
    TwoParams()
        : a(register_parameter("a", {3}, Init::constant(1.f))), b(register_parameter("b", {300}, Init::constant(1.f))) {}
    Tensor& a;
    Tensor& b;
  } m;
  RecordingOptimizer opt(m.named_parameters());
  TrainingStep step(m, opt, StepOptions{1, 0.f});
  MirrorCommunicator comm;
  GradientReducer reducer(comm, m.parameters(), step.gradients(), 0.0001, true);  // one bucket per parameter
  step.set_sync(&reducer);
  bool twice = false;
  auto loss = [&](int64_t) {
    // recorded first, so backward reaches it last: after a's bucket was complete in the learned count
    Tensor extra = twice ? sum(scale(m.a, 3.f)) : Tensor();
    Tensor l = add(sum(mul(m.a, m.a)), sum(m.b));
    return twice ? add(extra, l) : l;
  };
  step.run(loss, 1e-3f);  // learns: a is written once
  step.run(loss, 1e-3f);
  twice = true;
  CHECK_THROWS_WITH_AS(step.run(loss, 1e-3f), doctest::Contains("written after its bucket"), Error);
}
