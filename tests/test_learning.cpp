// The engine end to end: cross-entropy against PyTorch's numbers, and a tiny MLP trained with the tape and AdamW.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "tests/repo_files.h"
#include "framework/autograd.h"
#include "framework/module.h"
#include "framework/ops.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "framework/safetensors.h"

using namespace hr;
using hr::testing::fixture;


TEST_CASE("cross_entropy with ignore_index and label smoothing matches PyTorch's loss and gradient") {
  const SafeTensorsFile f = read_safetensors(fixture("cross_entropy.safetensors"));
  const SafeTensor& lg = f.tensors.at("logits");
  Tensor logits = Tensor::from_vector(to_f32(lg), lg.shape);
  logits.set_requires_grad(true);
  std::vector<int32_t> labels;
  for (int64_t y : to_i64(f.tensors.at("labels"))) labels.push_back(static_cast<int32_t>(y));
  const int32_t ignore = std::stoi(f.metadata.at("ignore_index"));
  const float smoothing = std::stof(f.metadata.at("label_smoothing"));
  CHECK(std::count(labels.begin(), labels.end(), ignore) == 1);

  Tensor loss = cross_entropy(logits, Tensor::from_ids(labels, {static_cast<int64_t>(labels.size())}), ignore, smoothing);
  CHECK(loss.item() == doctest::Approx(to_f32(f.tensors.at("loss"))[0]).epsilon(1e-5));
  backward(loss);
  const std::vector<float> g = logits.grad().to_vector(), ref = to_f32(f.tensors.at("grad.logits"));
  REQUIRE(g.size() == ref.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(ref[i]).epsilon(1e-5).scale(1e-6));
}

TEST_CASE("a tiny MLP fits a toy problem to near-zero loss with the tape and AdamW") {
  // y = sin(3 x0) + x1 * x2 on 64 fixed points: a smooth non-linear target a 2-layer tanh MLP can fit closely
  manual_seed(7);
  const int64_t N = 64;
  std::vector<float> xs, ys;
  for (int64_t i = 0; i < N; ++i) {
    const float a = std::sin(0.37f * static_cast<float>(i)), b = std::cos(0.91f * static_cast<float>(i)),
                c = std::sin(1.7f * static_cast<float>(i) + 0.3f);
    xs.insert(xs.end(), {a, b, c});
    ys.push_back(std::sin(3.f * a) + b * c);
  }
  const Tensor x = Tensor::from_vector(xs, {N, 3}), y = Tensor::from_vector(ys, {N, 1});
  Module mlp;
  Tensor& w1 = mlp.register_parameter("w1", {32, 3}, Init::normal(0.5f));
  Tensor& b1 = mlp.register_parameter("b1", {32}, Init::zeros());
  Tensor& w2 = mlp.register_parameter("w2", {1, 32}, Init::normal(0.2f));
  Tensor& b2 = mlp.register_parameter("b2", {1}, Init::zeros());
  AdamW opt(mlp.named_parameters(), {true, false, true, false}, AdamWOptions{0.9f, 0.999f, 1e-8f, 0.f});
  auto mse = [&] { return mean(square(sub(linear(tanh(linear(x, w1, b1)), w2, b2), y))); };
  float first = 0, last = 0;
  for (int step = 0; step < 1500; ++step) {
    mlp.zero_grad();
    Tensor loss = mse();
    if (step == 0) first = loss.item();
    backward(loss);
    opt.step(step < 1000 ? 1e-2f : 2e-3f);
  }
  {
    NoGradGuard ng;
    last = mse().item();
  }
  INFO("mse from " << first << " to " << last);
  CHECK(first > 0.3f);
  CHECK(last < 1e-3f);
}
