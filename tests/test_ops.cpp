// Every op's backward against central finite differences, and forward results against naive loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "framework/random.h"
#include "tests/gradcheck.h"

using namespace hr;
using hr::testing::gradcheck;
using hr::testing::rand_tensor;

namespace {

constexpr double kTol = 5e-3;  // f32 central differences with eps = 1e-2

void expect_grad(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                 float eps = 1e-2f) {
  const auto r = gradcheck(f, inputs, eps);
  INFO("worst: " << r.worst << " (" << r.checked << " coordinates)");
  CHECK(r.checked > 0);
  CHECK(r.max_error < kTol);
}

using V = std::vector<Tensor>;

}  // namespace

TEST_CASE("gradcheck catches a wrong backward") {
  // d(x^2)/dx recorded deliberately as 3x instead of 2x
  auto wrong_square = [](const V& in) {
    const Tensor& x = in[0];
    Tensor y;
    {
      NoGradGuard ng;
      y = mul(x, x);
    }
    if (needs_grad({&x}))
      Tape::current().record("wrong_square", y, [x](const Tensor& g) { accumulate_grad(x, mul(g, scale(x, 3.f))); });
    return y;
  };
  const auto r = gradcheck(wrong_square, {rand_tensor({4, 3}, 1)});
  CHECK(r.max_error > 0.1);
  // and passes the correct rule
  expect_grad([](const V& in) { return mul(in[0], in[0]); }, {rand_tensor({4, 3}, 1)});
}

TEST_CASE("elementwise binary ops with broadcasting") {
  const Tensor a = rand_tensor({2, 3, 4}, 1), bias = rand_tensor({4}, 2), col = rand_tensor({2, 1, 4}, 3);
  const Tensor pos = rand_tensor({2, 3, 4}, 4, 0.5f, 2.f), pos_row = rand_tensor({3, 1}, 5, 0.5f, 2.f);
  const Tensor s = rand_tensor({}, 6);
  expect_grad([](const V& x) { return add(x[0], x[1]); }, {a, bias});
  expect_grad([](const V& x) { return add(x[0], x[1]); }, {a, col});
  expect_grad([](const V& x) { return sub(x[0], x[1]); }, {col, a});
  expect_grad([](const V& x) { return mul(x[0], x[1]); }, {a, col});
  expect_grad([](const V& x) { return mul(x[0], x[1]); }, {a, s});
  expect_grad([](const V& x) { return div(x[0], x[1]); }, {a, pos});
  expect_grad([](const V& x) { return div(x[0], x[1]); }, {a, pos_row});
  CHECK_THROWS_WITH_AS(add(rand_tensor({2, 3}, 1), rand_tensor({4}, 2)), doctest::Contains("do not broadcast"),
                       hr::Error);
}

TEST_CASE("elementwise binary forward matches a naive loop") {
  const Tensor a = rand_tensor({2, 3, 4}, 7), b = rand_tensor({3, 1}, 8);
  const auto av = a.to_vector(), bv = b.to_vector(), out = mul(a, b).to_vector();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) CHECK(out[(i * 3 + j) * 4 + k] == doctest::Approx(av[(i * 3 + j) * 4 + k] * bv[j]));
}

TEST_CASE("unary ops") {
  const Tensor x = rand_tensor({3, 5}, 11, -2.f, 2.f), pos = rand_tensor({3, 5}, 12, 0.3f, 2.f);
  expect_grad([](const V& v) { return scale(v[0], -1.7f); }, {x});
  expect_grad([](const V& v) { return add_scalar(v[0], 0.3f); }, {x});
  expect_grad([](const V& v) { return neg(v[0]); }, {x});
  expect_grad([](const V& v) { return exp(v[0]); }, {x});
  expect_grad([](const V& v) { return log(v[0]); }, {pos});
  expect_grad([](const V& v) { return sigmoid(v[0]); }, {x});
  expect_grad([](const V& v) { return tanh(v[0]); }, {x});
  expect_grad([](const V& v) { return gelu(v[0]); }, {x});
  expect_grad([](const V& v) { return sqrt(v[0]); }, {pos});
  expect_grad([](const V& v) { return square(v[0]); }, {x});
  expect_grad([](const V& v) { return pow(v[0], 1.5f); }, {pos});
  // relu and clamp away from their kinks
  const Tensor away = Tensor::from_vector({-1.5f, -0.4f, 0.3f, 0.9f, 1.7f, -0.8f}, {6});
  expect_grad([](const V& v) { return relu(v[0]); }, {away});
  expect_grad([](const V& v) { return clamp(v[0], -0.6f, 1.2f); }, {away});
  const auto g = gelu(Tensor::from_vector({-1.f, 0.f, 2.f}, {3})).to_vector();
  CHECK(g[0] == doctest::Approx(-0.158655254).epsilon(1e-5));  // x * Phi(x), erf form
  CHECK(g[1] == 0.f);
  CHECK(g[2] == doctest::Approx(1.954499736).epsilon(1e-5));
}

TEST_CASE("mask_fill") {
  const Tensor x = rand_tensor({2, 4}, 13);
  const Tensor m = Tensor::from_vector({0, 1, 0, 1}, {4});
  expect_grad([m](const V& v) { return mask_fill(v[0], m, -5.f); }, {x});
  const auto y = mask_fill(x, m, -5.f).to_vector();
  CHECK(y[1] == -5.f);
  CHECK(y[0] == x.to_vector()[0]);
}

TEST_CASE("matmul: 2-d, transposes, batched, broadcast") {
  expect_grad([](const V& v) { return matmul(v[0], v[1]); }, {rand_tensor({3, 4}, 1), rand_tensor({4, 5}, 2)});
  expect_grad([](const V& v) { return matmul(v[0], v[1], true, false); }, {rand_tensor({4, 3}, 1), rand_tensor({4, 5}, 2)});
  expect_grad([](const V& v) { return matmul(v[0], v[1], false, true); }, {rand_tensor({3, 4}, 1), rand_tensor({5, 4}, 2)});
  expect_grad([](const V& v) { return matmul(v[0], v[1], true, true); }, {rand_tensor({4, 3}, 1), rand_tensor({5, 4}, 2)});
  expect_grad([](const V& v) { return matmul(v[0], v[1]); }, {rand_tensor({2, 3, 3, 4}, 3), rand_tensor({2, 3, 4, 2}, 4)});
  expect_grad([](const V& v) { return matmul(v[0], v[1], false, true); },
              {rand_tensor({2, 3, 4}, 3), rand_tensor({2, 5, 4}, 4)});
  // a 2-d operand broadcast over the other's batch, both sides, with transposes
  expect_grad([](const V& v) { return matmul(v[0], v[1]); }, {rand_tensor({2, 3, 4}, 5), rand_tensor({4, 2}, 6)});
  expect_grad([](const V& v) { return matmul(v[0], v[1], false, true); }, {rand_tensor({2, 3, 4}, 5), rand_tensor({2, 4}, 6)});
  expect_grad([](const V& v) { return matmul(v[0], v[1], true, false); }, {rand_tensor({2, 4, 3}, 5), rand_tensor({4, 2}, 6)});
  expect_grad([](const V& v) { return matmul(v[0], v[1]); }, {rand_tensor({3, 4}, 7), rand_tensor({2, 4, 5}, 8)});
}

TEST_CASE("matmul forward matches a naive loop") {
  const Tensor a = rand_tensor({2, 5, 7}, 21), b = rand_tensor({2, 6, 7}, 22);
  const auto c = matmul(a, b, false, true).to_vector(), av = a.to_vector(), bv = b.to_vector();
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) {
        double s = 0;
        for (int k = 0; k < 7; ++k) s += av[(n * 5 + i) * 7 + k] * bv[(n * 6 + j) * 7 + k];
        CHECK(c[(n * 5 + i) * 6 + j] == doctest::Approx(s).epsilon(1e-5));
      }
  CHECK_THROWS_WITH_AS(matmul(rand_tensor({3, 4}, 1), rand_tensor({5, 4}, 1)), doctest::Contains("inner dimensions"),
                       hr::Error);
}

namespace {
// What head_scores and head_context replace: the heads permuted out of (B, T, H*Dh) to (B, H, T, Dh), and back
Tensor split_heads(const Tensor& t, int64_t H) {
  return permute(reshape(t, {t.dim(0), t.dim(1), H, t.dim(2) / H}), {0, 2, 1, 3});
}
Tensor merge_heads(const Tensor& t) {
  return reshape(permute(t, {0, 2, 1, 3}), {t.dim(0), t.dim(2), t.dim(1) * t.dim(3)});
}
void check_same_values(const Tensor& got, const Tensor& want, const char* what) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= 1e-5f * (1 + std::abs(w[i])))) {
      FAIL_CHECK(what << ": element " << i << " is " << g[i] << ", the permuted product gives " << w[i]);
      return;
    }
}
}  // namespace

TEST_CASE("head_scores and head_context: gradients, and the products of heads permuted out, forward and backward") {
  expect_grad([](const V& v) { return head_scores(v[0], v[1], 2); }, {rand_tensor({2, 3, 8}, 1), rand_tensor({2, 5, 8}, 2)});
  expect_grad([](const V& v) { return head_context(v[0], v[1]); },
              {rand_tensor({2, 2, 3, 5}, 3), rand_tensor({2, 5, 8}, 4)});
  expect_grad([](const V& v) { return head_scores(v[0], v[1], 1); }, {rand_tensor({1, 4, 3}, 5), rand_tensor({1, 2, 3}, 6)});

  const int64_t B = 3, H = 4, Dh = 5, Tq = 6, Tk = 7;
  Tensor q = rand_tensor({B, Tq, H * Dh}, 7).set_requires_grad(), k = rand_tensor({B, Tk, H * Dh}, 8).set_requires_grad();
  Tensor p = rand_tensor({B, H, Tq, Tk}, 9).set_requires_grad(), v = rand_tensor({B, Tk, H * Dh}, 10).set_requires_grad();
  const Tensor rs = rand_tensor({B, H, Tq, Tk}, 11), rc = rand_tensor({B, Tq, H * Dh}, 12);  // gradients reaching out
  std::vector<Tensor> in_place, permuted;
  for (int pass = 0; pass < 2; ++pass) {
    for (Tensor* t : {&q, &k, &p, &v}) t->zero_grad();
    const Tensor scores = pass == 0 ? head_scores(q, k, H) : matmul(split_heads(q, H), split_heads(k, H), false, true);
    const Tensor context = pass == 0 ? head_context(p, v) : merge_heads(matmul(p, split_heads(v, H)));
    backward(add(sum(mul(scores, rs)), sum(mul(context, rc))));
    std::vector<Tensor>& results = pass == 0 ? in_place : permuted;
    results = {scores.detach(), context.detach()};
    for (const Tensor* t : {&q, &k, &p, &v}) results.push_back(t->grad().clone());
  }
  const char* what[] = {"scores", "context", "dq", "dk", "dprobs", "dv"};
  for (size_t i = 0; i < in_place.size(); ++i) check_same_values(in_place[i], permuted[i], what[i]);

  CHECK_THROWS_WITH_AS(head_scores(q, k, 3), doctest::Contains("not (B, T, H*Dh) for 3 heads"), hr::Error);
  CHECK_THROWS_WITH_AS(head_context(p, q), doctest::Contains("is not (B, H, Tq, Tk)"), hr::Error);
}

TEST_CASE("linear") {
  expect_grad([](const V& v) { return linear(v[0], v[1], v[2]); },
              {rand_tensor({2, 3, 4}, 1), rand_tensor({5, 4}, 2), rand_tensor({5}, 3)});
  expect_grad([](const V& v) { return linear(v[0], v[1], Tensor()); }, {rand_tensor({3, 4}, 1), rand_tensor({2, 4}, 2)});
  // y = x W^T + b, checked by hand
  const Tensor x = Tensor::from_vector({1, 2}, {1, 2}), w = Tensor::from_vector({1, 0, 3, 4}, {2, 2}),
               b = Tensor::from_vector({10, 20}, {2});
  const auto y = linear(x, w, b).to_vector();
  CHECK(y[0] == 11.f);
  CHECK(y[1] == 31.f);
}

TEST_CASE("linear_gelu: gelu(linear) recorded with gradients, one gemm with a GELU epilogue without") {
  expect_grad([](const V& v) { return linear_gelu(v[0], v[1], v[2]); },
              {rand_tensor({2, 3, 4}, 1), rand_tensor({5, 4}, 2), rand_tensor({5}, 3)});
  // sizes where the CPU's GELU runs through oneDNN's eltwise primitive and the epilogue through its matmul post-op
  const Tensor x = rand_tensor({4, 64, 96}, 4), w = rand_tensor({200, 96}, 5), b = rand_tensor({200}, 6);
  const std::vector<float> want = gelu(linear(x, w, b)).to_vector();
  std::vector<float> fused;
  {
    NoGradGuard ng;
    fused = linear_gelu(x, w, b).to_vector();
  }
  REQUIRE(fused.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::abs(fused[i] - want[i])) / (1 + std::abs(want[i])));
  CHECK(worst < 1e-5);
  // the inputs that need gradients take the recorded path, and its gradients are gelu's and linear's
  Tensor xg = rand_tensor({3, 4}, 7), wg = rand_tensor({5, 4}, 8);
  xg.set_requires_grad();
  wg.set_requires_grad();
  const Tensor yg = linear_gelu(xg, wg, Tensor());
  CHECK(yg.requires_grad());
  CHECK(yg.to_vector() == gelu(linear(xg.detach(), wg.detach(), Tensor())).to_vector());
}

TEST_CASE("shape ops") {
  const Tensor x = rand_tensor({2, 3, 4}, 31);
  expect_grad([](const V& v) { return reshape(v[0], {4, -1}); }, {x});
  expect_grad([](const V& v) { return permute(v[0], {2, 0, 1}); }, {x});
  expect_grad([](const V& v) { return transpose(v[0], 0, 2); }, {x});
  expect_grad([](const V& v) { return concat({v[0], v[1]}, 1); }, {x, rand_tensor({2, 2, 4}, 32)});
  expect_grad([](const V& v) { return concat({v[0], v[1]}, -1); }, {x, rand_tensor({2, 3, 1}, 33)});
  expect_grad([](const V& v) { return split(v[0], {1, 3}, 2)[1]; }, {x});
  expect_grad([](const V& v) { return slice(v[0], 1, 1, 3); }, {x});
  expect_grad([](const V& v) { return select(v[0], 0, 1); }, {x});
  expect_grad([](const V& v) { return index_select0(v[0], {1, 0, 1}); }, {x});
  // permute moves elements where expected
  const auto p = permute(x, {2, 0, 1}).to_vector(), xv = x.to_vector();
  CHECK(p[(3 * 2 + 1) * 3 + 2] == xv[(1 * 3 + 2) * 4 + 3]);  // p[3][1][2] == x[1][2][3]
  CHECK_THROWS_WITH_AS(reshape(x, {5, -1}), doctest::Contains("cannot infer"), hr::Error);
}

TEST_CASE("reductions") {
  const Tensor x = rand_tensor({2, 3, 4}, 41);
  expect_grad([](const V& v) { return sum(v[0]); }, {x});
  expect_grad([](const V& v) { return mean(v[0]); }, {x});
  expect_grad([](const V& v) { return sum(v[0], 1); }, {x});
  expect_grad([](const V& v) { return mean(v[0], -1, true); }, {x});
  expect_grad([](const V& v) { return sum(v[0], 0); }, {x});
  const auto s = sum(x, 1).to_vector(), xv = x.to_vector();
  CHECK(s[1 * 4 + 2] == doctest::Approx(xv[(1 * 3 + 0) * 4 + 2] + xv[(1 * 3 + 1) * 4 + 2] + xv[(1 * 3 + 2) * 4 + 2]));
}

TEST_CASE("softmax and log_softmax with mask and scale") {
  const Tensor x = rand_tensor({2, 3, 5}, 51, -2.f, 2.f);
  Tensor mask = Tensor::from_vector({0, 0, 0, -1e9f, -1e9f, 0, 0, 0, 0, 0}, {2, 5});  // batch 0: 2 keys padded
  expect_grad([](const V& v) { return softmax(v[0]); }, {x});
  expect_grad([mask](const V& v) { return softmax(v[0], mask, 0.7f); }, {x});
  expect_grad([](const V& v) { return log_softmax(v[0]); }, {x});
  // masked log-probabilities are about -1e9: zero them so they do not swamp the f32 objective
  const Tensor padded = Tensor::from_vector({0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, {2, 1, 5});
  expect_grad([mask, padded](const V& v) { return mask_fill(log_softmax(v[0], mask), padded, 0.f); }, {x});
  // forward against a naive loop
  const auto y = softmax(x, mask, 0.7f).to_vector(), xv = x.to_vector(), mv = mask.to_vector();
  for (int r = 0; r < 6; ++r) {
    const int b = r / 3;
    double mx = -1e30, z = 0;
    for (int j = 0; j < 5; ++j) mx = std::max(mx, 0.7 * xv[r * 5 + j] + mv[b * 5 + j]);
    for (int j = 0; j < 5; ++j) z += std::exp(0.7 * xv[r * 5 + j] + mv[b * 5 + j] - mx);
    for (int j = 0; j < 5; ++j)
      CHECK(y[r * 5 + j] == doctest::Approx(std::exp(0.7 * xv[r * 5 + j] + mv[b * 5 + j] - mx) / z).epsilon(1e-5));
  }
  CHECK(y[3] == 0.f);  // masked key
}

TEST_CASE("attention_weights: dropout(softmax) in one pass, the same draws, and its gradient") {
  const Tensor x = rand_tensor({2, 3, 4, 9}, 52, -2.f, 2.f);  // (B, H, T, T)
  std::vector<float> mv(18, 0.f);
  mv[7] = mv[8] = -1e9f;  // batch 0: 2 keys padded
  const Tensor mask = Tensor::from_vector(mv, {2, 9});
  expect_grad([mask](const V& v) { return attention_weights(v[0], mask, 0.7f, 0.3f, true); }, {x});
  expect_grad([mask](const V& v) { return attention_weights(v[0], mask, 0.7f, 0.f, true); }, {x});
  // the values and draws of the two ops it replaces, and the generator left where they leave it
  for (const bool training : {true, false}) {
    CAPTURE(training);
    manual_seed(5);
    const auto fused = attention_weights(x, mask, 0.7f, 0.3f, training).to_vector();
    const auto next_fused = rand_uniform({4}).to_vector();
    manual_seed(5);
    const auto apart = dropout(softmax(x, mask, 0.7f), 0.3f, training).to_vector();
    CHECK(rand_uniform({4}).to_vector() == next_fused);
    CHECK(fused == apart);
    if (training) CHECK(std::count(fused.begin(), fused.end(), 0.f) > 2 * 3 * 4 * 2);  // dropout zeros past the mask
  }
  CHECK_THROWS_WITH_AS(attention_weights(x, mask, 1.f, 1.f, true), doctest::Contains("attention_weights"), hr::Error);
}

TEST_CASE("layer_norm") {
  const Tensor x = rand_tensor({3, 2, 6}, 61, -2.f, 2.f), g = rand_tensor({6}, 62, 0.5f, 1.5f), b = rand_tensor({6}, 63);
  expect_grad([](const V& v) { return layer_norm(v[0], v[1], v[2]); }, {x, g, b});
  const auto y = layer_norm(x, g, b).to_vector(), xv = x.to_vector(), gv = g.to_vector(), bv = b.to_vector();
  for (int r = 0; r < 6; ++r) {
    double m = 0, var = 0;
    for (int j = 0; j < 6; ++j) m += xv[r * 6 + j] / 6.0;
    for (int j = 0; j < 6; ++j) var += (xv[r * 6 + j] - m) * (xv[r * 6 + j] - m) / 6.0;
    for (int j = 0; j < 6; ++j)
      CHECK(y[r * 6 + j] == doctest::Approx((xv[r * 6 + j] - m) / std::sqrt(var + 1e-5) * gv[j] + bv[j]).epsilon(1e-4));
  }
}

TEST_CASE("embedding: scatter-add backward with repeated ids, range check") {
  const Tensor ids = Tensor::from_ids({1, 3, 1, 0, 3, 3}, {2, 3});
  expect_grad([ids](const V& v) { return embedding(v[0], ids); }, {rand_tensor({5, 4}, 71)});
  CHECK_THROWS_WITH_AS(embedding(rand_tensor({5, 4}, 71), Tensor::from_ids({5}, {1})), doctest::Contains("id 5"),
                       hr::Error);
}

TEST_CASE("dropout: inverted, seeded, identity in eval") {
  const Tensor x = Tensor::full({10000}, 1.f);
  manual_seed(3);
  const auto y = dropout(x, 0.25f, true).to_vector();
  int zeros = 0;
  double s = 0;
  for (float v : y) {
    zeros += v == 0.f;
    s += v;
    CHECK((v == 0.f || v == doctest::Approx(1.f / 0.75f)));
  }
  CHECK(zeros > 2300);
  CHECK(zeros < 2700);
  CHECK(s / 10000 == doctest::Approx(1.0).epsilon(0.03));
  manual_seed(3);
  CHECK(dropout(x, 0.25f, true).to_vector() == y);
  CHECK(dropout(x, 0.25f, false).same(x));
  expect_grad([](const V& v) { return dropout(v[0], 0.3f, true); }, {rand_tensor({4, 8}, 81)});
}

TEST_CASE("cross_entropy with ignore_index and label smoothing") {
  const Tensor logits = rand_tensor({5, 4}, 91, -2.f, 2.f);
  const Tensor labels = Tensor::from_ids({0, 3, -100, 2, 1}, {5});
  expect_grad([labels](const V& v) { return cross_entropy(v[0], labels); }, {logits});
  expect_grad([labels](const V& v) { return cross_entropy(v[0], labels, -100, 0.1f); }, {logits});
  // forward against the definition
  const auto lv = logits.to_vector();
  const std::vector<int> lab = {0, 3, -100, 2, 1};
  double total = 0;
  for (int r = 0; r < 5; ++r) {
    if (lab[r] < 0) continue;
    double mx = -1e30, z = 0;
    for (int j = 0; j < 4; ++j) mx = std::max<double>(mx, lv[r * 4 + j]);
    for (int j = 0; j < 4; ++j) z += std::exp(lv[r * 4 + j] - mx);
    double sum_logp = 0;
    for (int j = 0; j < 4; ++j) sum_logp += lv[r * 4 + j] - mx - std::log(z);
    total += -0.9 * (lv[r * 4 + lab[r]] - mx - std::log(z)) - 0.1 / 4 * sum_logp;
  }
  CHECK(cross_entropy(logits, labels, -100, 0.1f).item() == doctest::Approx(total / 4).epsilon(1e-5));
  CHECK(cross_entropy(logits, Tensor::from_ids({-100, -100, -100, -100, -100}, {5})).item() == 0.f);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Tensor::from_ids({0, 4, 0, 0, 0}, {5})), doctest::Contains("label 4"),
                       hr::Error);
}

TEST_CASE("a composite expression: tensor used by several ops") {
  expect_grad([](const V& v) { return add(mul(v[0], v[0]), tanh(matmul(v[0], v[1]))); },
              {rand_tensor({3, 3}, 101), rand_tensor({3, 3}, 102)});
}
