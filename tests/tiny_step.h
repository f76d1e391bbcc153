// What the training-step tests (test_training_step, test_gradient_reducer) share: a two-layer classifier small enough
// to compare gradients element by element, and an optimizer that records the gradients it was handed instead of
// stepping.
#pragma once

#include <memory>
#include <vector>

#include "framework/config.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "models/encoder_model.h"

namespace hr::testing {

// d_model 8, 2 layers of 2 heads of 4, no dropout; 20 token ids, 3 labels; the same weights on every call
inline std::unique_ptr<EncoderModel> tiny_model() {
  manual_seed(3);
  return build_model(Config::parse(R"(
type: encoder_classifier
d_model: 8
ffn_dim: 16
max_len: 8
dropout: 0.0
pooling: mean
layers:
  - repeat: 2
    attention: {heads: 2, head_dim: 4}
)", "<test>"), ModelDims{20, 3, 0});
}

// Each step keeps a copy of every parameter's gradient (in parameter order) and changes no weight.
class RecordingOptimizer : public Optimizer {
 public:
  explicit RecordingOptimizer(NamedTensors params) : Optimizer(std::move(params), {}) {}
  const char* name() const override { return "recording"; }
  void step(float) override {
    ++steps_;
    seen.clear();
    for (const auto& [n, p] : params_) seen.push_back(p.grad().to_vector());
  }
  std::vector<std::vector<float>> seen;
};

}  // namespace hr::testing
