// The tape: accumulation, modes, freeing, deep chains, misuse errors.
#include <doctest/doctest.h>

#include <cmath>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "tests/gradcheck.h"

using namespace hr;

TEST_CASE("gradient accumulates when a tensor feeds several ops") {
  Tensor x = Tensor::from_vector({1.f, -2.f, 3.f}, {3});
  x.set_requires_grad(true);
  backward(sum(add(mul(x, x), x)));  // d/dx (x^2 + x) = 2x + 1
  CHECK(x.grad().to_vector() == std::vector<float>{3.f, -3.f, 7.f});
  // a second backward adds to the parameter gradient (accumulation over micro-batches) ...
  backward(sum(x));
  CHECK(x.grad().to_vector() == std::vector<float>{4.f, -2.f, 8.f});
  // ... until zero_grad, which zeroes the leaf's own buffer
  x.zero_grad();
  CHECK(x.grad().to_vector() == std::vector<float>{0.f, 0.f, 0.f});
}

TEST_CASE("an intermediate that feeds several linears and adds: gradients added in place only into its own buffer") {
  // h's gradient arrives from adds that pass one buffer to h and to c alike (which h must not write into) and from
  // linears that add theirs straight into a buffer h owns; c's gradient would show any write into the shared one
  const auto f = [](const std::vector<Tensor>& v) {
    const Tensor h = tanh(v[0]), c = sigmoid(v[3]);
    const Tensor a = add(h, c);  // backward runs last
    const Tensor p = linear(h, v[1], Tensor()), q = linear(h, v[2], Tensor());
    const Tensor s = add(h, c);  // backward runs first
    return add(add(sum(mul(p, q)), sum(mul(a, a))), sum(mul(s, tanh(s))));
  };
  const auto r = hr::testing::gradcheck(
      f, {hr::testing::rand_tensor({3, 4}, 1), hr::testing::rand_tensor({5, 4}, 2), hr::testing::rand_tensor({5, 4}, 3),
          hr::testing::rand_tensor({3, 4}, 4)},
      1e-2f);
  INFO("worst: " << r.worst);
  CHECK(r.checked > 0);
  CHECK(r.max_error < 5e-3);
}

TEST_CASE("the tape keeps the values that backward rules read, not every op's output") {
  Backend& be = backend(Device::CPU);
  Tensor x = Tensor::full({64, 64}, 0.5f).set_requires_grad();  // 16 KiB, a size class of its own
  const size_t base = be.bytes_in_use();
  Tensor loss;
  {
    const Tensor h = exp(x);        // its backward reads h: kept
    const Tensor s = add(h, h);     // add's backward reads neither input: s is freed with this scope
    const Tensor d = dropout(s, 0.5f, true);  // dropout draws its mask again: d is not kept
    const Tensor r = reshape(d, {4096});      // a view of d
    loss = sum(r);                  // a reduction's backward reads nothing
    CHECK(r.grad_ref().same(r));
    CHECK_FALSE(r.grad_ref().has_values());
    CHECK_THROWS_AS(r.grad_ref().data(), Error);
  }
  CHECK(be.bytes_in_use() - base == 64 * 64 * sizeof(float) + 64);  // h, and loss (one 64-byte block)
  backward(loss);
  // each element's gradient is 2 e^x / (1 - p) where dropout kept it, else 0: the backward rules ran on what they kept
  int kept = 0;
  for (float g : x.grad().to_vector()) {
    if (g != 0.f) CHECK(g == doctest::Approx(4.f * std::exp(0.5f)));
    kept += g != 0.f;
  }
  CHECK(kept > 1000);
  CHECK(kept < 3000);
}

TEST_CASE("NoGradGuard records nothing; the tape is freed after backward") {
  Tensor x = Tensor::from_vector({1.f, 2.f}, {2});
  x.set_requires_grad(true);
  Tape::current().clear();
  {
    NoGradGuard ng;
    Tensor y = mul(x, x);
    CHECK_FALSE(y.requires_grad());
    CHECK(Tape::current().size() == 0);
  }
  Tensor y = sum(mul(x, x));
  CHECK(Tape::current().size() == 2);
  backward(y);
  CHECK(Tape::current().size() == 0);
}

TEST_CASE("a chain of 100,000 ops neither overflows the stack nor leaks the tape") {
  Tensor x = Tensor::from_vector({0.5f}, {1});
  x.set_requires_grad(true);
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = add_scalar(y, 1e-6f);
  backward(sum(y));
  CHECK(x.grad().item() == 1.f);
  CHECK(Tape::current().size() == 0);
}

TEST_CASE("misuse gives clear errors") {
  Tensor x = Tensor::from_vector({1.f, 2.f}, {2});
  x.set_requires_grad(true);
  Tensor loss = sum(mul(x, x));
  backward(loss);
  CHECK_THROWS_WITH_AS(backward(loss), doctest::Contains("backward() called twice"), hr::Error);
  Tensor v = mul(x, x);
  CHECK_THROWS_WITH_AS(backward(v), doctest::Contains("needs a seed gradient"), hr::Error);
  backward(v, Tensor::from_vector({1.f, 10.f}, {2}));  // with a seed it works
  CHECK(x.grad().to_vector() == std::vector<float>{2.f + 2.f, 4.f + 40.f});
  Tensor c = Tensor::from_vector({1.f}, {1});
  CHECK_THROWS_WITH_AS(backward(sum(c)), doctest::Contains("does not require grad"), hr::Error);
  CHECK_THROWS_WITH_AS(Tensor::from_ids({1}, {1}).set_requires_grad(true), doctest::Contains("cannot require grad"),
                       hr::Error);
}

TEST_CASE("ops whose output got no gradient are skipped") {
  Tensor x = Tensor::from_vector({1.f, 2.f}, {2});
  Tensor w = Tensor::from_vector({3.f, 4.f}, {2});
  x.set_requires_grad(true);
  w.set_requires_grad(true);
  Tensor unused = mul(w, w);  // recorded, but the loss does not depend on it
  backward(sum(mul(x, x)));
  CHECK_FALSE(w.grad().defined());
  CHECK(x.grad().to_vector() == std::vector<float>{2.f, 4.f});
}
