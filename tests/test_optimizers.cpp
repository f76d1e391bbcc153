// Optimizers come from a registry (framework/optimizer_registry.h): LAMB, the worked example of adding one in one file
// plus one line, against steps worked out by hand; SGD's Nesterov momentum likewise; the train: settings reach AdamW
// through the registry; an unknown name lists the registered ones; a tiny run trains with LAMB, resumes exactly, and
// lowers its loss.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "framework/autograd.h"
#include "framework/lamb.h"
#include "framework/ops.h"
#include "framework/optimizer_registry.h"
#include "tests/tiny_run.h"

using namespace hr;
using namespace hr::testing;

namespace {

Tensor parameter(const std::vector<float>& values, const Shape& shape) {
  Tensor p = Tensor::from_vector(values, shape);
  p.set_requires_grad();
  return p;
}

// Sets p's gradient to g: the gradient of sum(p * g).
void set_grad(Tensor& p, const std::vector<float>& g) {
  p.zero_grad();
  backward(sum(mul(p, Tensor::from_vector(g, p.shape()))));
}

void check_near(const Tensor& t, const std::vector<double>& expected, double tolerance = 2e-6) {
  const std::vector<float> got = t.to_vector();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << expected[i]);
    CHECK(std::abs(got[i] - expected[i]) <= tolerance * std::max(1.0, std::abs(expected[i])));
  }
}

}  // namespace

TEST_CASE("LAMB's update against steps worked out by hand") {
  // w (a 1x2 matrix, decayed) = [3, 4], ||w|| = 5; b1 0.9, b2 0.999, eps 1e-6, weight decay 0.1, lr 0.01.
  // Step 1, g = [0.5, -2]: the bias-corrected moments are g and g^2, so Adam's step is g / (|g| + eps)
  //   = [0.999998, -0.9999995]; u = that + 0.1 w = [1.299998, -0.5999995], ||u|| = 1.4317797;
  //   trust ratio 5 / 1.4317797 = 3.4921564; w = w - 0.01 * 3.4921564 * u = [2.9546020, 4.0209529].
  // Step 2, g = [1, 1]: m = [0.145, -0.08], v = [0.00124975, 0.004996] (bias corrections 0.19 and 0.001999):
  //   w = [2.9049912, 4.0156103] (the same arithmetic in double, by hand in a Python shell).
  // b (a 1-d bias, not decayed) = [0, 0]: ||b|| = 0, so the trust ratio is 1 and b takes Adam's step: -0.01 * sign(g);
  //   at step 2 (g unchanged) ||b|| = 0.0141421, ||u|| = 1.4142136: ratio 0.01, b = [-0.0101, 0.0101].
  Tensor w = parameter({3.f, 4.f}, {1, 2}), b = parameter({0.f, 0.f}, {2});
  OptimizerSettings s;
  s.beta1 = 0.9f, s.beta2 = 0.999f, s.eps = 1e-6f, s.weight_decay = 0.1f;
  std::unique_ptr<Optimizer> lamb = build_optimizer("lamb", {{{"w", w}, {"b", b}}, {}, {}}, s);
  CHECK(std::string(lamb->name()) == "lamb");
  set_grad(w, {0.5f, -2.f});
  set_grad(b, {1.f, -1.f});
  lamb->step(0.01f);
  check_near(w, {2.954602036396478, 4.020952921053});
  check_near(b, {-0.009999990000010001, 0.009999990000010001});
  set_grad(w, {1.f, 1.f});
  set_grad(b, {1.f, -1.f});
  lamb->step(0.01f);
  check_near(w, {2.904991247858302, 4.015610335602051});
  check_near(b, {-0.010099989900010101, 0.010099989900010101});
  // its moments are its state, saved under its own slot names
  const NamedTensors state = lamb->state();
  REQUIRE(state.size() == 4);
  CHECK(state[0].first == "w.lamb_m");
  CHECK(state[1].first == "w.lamb_v");
  check_near(state[0].second, {0.145, -0.08});
}

TEST_CASE("SGD: heavy-ball and Nesterov momentum, by hand") {
  // p = 1, g = 0.5 each step, momentum 0.9, lr 0.1. Heavy ball: v = 0.5, p = 0.95; v = 0.95, p = 0.855.
  // Nesterov (PyTorch): the step is g + 0.9 v: 0.95, p = 0.905; then v = 0.95, step 1.355, p = 0.7695.
  OptimizerSettings s;
  s.momentum = 0.9f, s.weight_decay = 0.f;
  for (const bool nesterov : {false, true}) {
    s.nesterov = nesterov;
    Tensor p = parameter({1.f}, {1});
    std::unique_ptr<Optimizer> sgd = build_optimizer("sgd", {{{"p", p}}, {}, {}}, s);
    set_grad(p, {0.5f});
    sgd->step(0.1f);
    check_near(p, {nesterov ? 0.905 : 0.95});
    set_grad(p, {0.5f});
    sgd->step(0.1f);
    check_near(p, {nesterov ? 0.7695 : 0.855});
  }
}

TEST_CASE("the registry passes the train: settings and per-parameter scales: AdamW bit for bit as built directly") {
  OptimizerSettings s;
  s.beta1 = 0.8f, s.beta2 = 0.99f, s.eps = 1e-6f, s.weight_decay = 0.1f;
  Tensor a = parameter({0.5f, -1.f, 2.f, 0.25f}, {2, 2}), b = parameter({0.5f, -1.f, 2.f, 0.25f}, {2, 2});
  std::unique_ptr<Optimizer> from_registry = build_optimizer("adamw", {{{"a", a}}, {true}, {0.5f}}, s);
  AdamW direct({{"b", b}}, {true}, AdamWOptions{0.8f, 0.99f, 1e-6f, 0.1f}, {0.5f});
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = {0.1f * static_cast<float>(step + 1), -0.3f, 0.7f, 0.05f};
    set_grad(a, g);
    set_grad(b, g);
    from_registry->step(0.01f);
    direct.step(0.01f);
  }
  CHECK(a.to_vector() == b.to_vector());
}

TEST_CASE("an optimizer is one registration line; an unknown name lists the registered ones") {
  const std::vector<std::string> names = registered_optimizers();
  for (const char* name : {"adamw", "sgd", "lamb"}) CHECK(std::find(names.begin(), names.end(), name) != names.end());
  register_optimizer("lamb_again", make_lamb);  // what framework/optimizer_registry.cpp does for "lamb"
  Tensor p = parameter({1.f}, {1});
  CHECK(std::string(build_optimizer("lamb_again", {{{"p", p}}, {}, {}}, {})->name()) == "lamb");
  CHECK_THROWS_WITH_AS(build_optimizer("adam", {{{"p", p}}, {}, {}}, {}),
                       doctest::Contains("unknown optimizer 'adam' (registered: adamw, lamb, lamb_again, sgd)"),
                       Error);
}

TEST_CASE("a tiny run trains with LAMB: finite losses that fall, and a resume that continues it exactly") {
  TempDir d;
  const std::string cfg = setup(d);
  // LAMB moves each tensor by lr times its norm: it wants a larger lr than AdamW's 3e-3 (0.01 barely moves this run)
  const std::string sets = " --set train.optimizer=lamb --set train.lr=0.03 --set train.max_steps=60";
  const Result full = headroom("train --quiet " + quote(cfg) + sets + " --out " + quote(d / "full"));
  REQUIRE_MESSAGE(full.code == 0, full.output);
  const auto l = losses(d / "full");
  REQUIRE(l.size() == 60);
  for (const auto& [step, loss] : l) CHECK(std::isfinite(loss));
  const double first = (l.at(1) + l.at(2) + l.at(3)) / 3, last = (l.at(58) + l.at(59) + l.at(60)) / 3;
  CHECK(last < 0.7 * first);  // 1.11 -> 0.41 when written
  const std::string ckpt = read_file(d / "full/checkpoint-last.safetensors");
  CHECK(ckpt.find("\"optimizer\":\"lamb\"") != std::string::npos);
  CHECK(ckpt.find(".lamb_v\"") != std::string::npos);

  const Result cut = headroom("train --quiet " + quote(cfg) + sets + " --set train.max_steps=30 --out " +
                              quote(d / "cut"));
  REQUIRE_MESSAGE(cut.code == 0, cut.output);
  const Result resumed = headroom("train --quiet --resume " + quote(d / "cut") + " --set train.max_steps=60");
  REQUIRE_MESSAGE(resumed.code == 0, resumed.output);
  const auto r = losses(d / "cut");
  REQUIRE(r.size() == 60);
  for (int64_t step = 31; step <= 60; ++step) CHECK(r.at(step) == doctest::Approx(l.at(step)).epsilon(1e-6));
}
