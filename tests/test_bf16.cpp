// bf16 mixed precision (framework/autocast.h): rounding, autocast's matmul and linear forward and backward against
// references built from the rounded operands, the weight copies made once per scope, a tiny run trained in bf16
// against f32, a bf16 checkpoint resumed in f32, and the choice made from the CPU's instruction set (native, or
// emulated with the same numbers). The bf16 gemm kernel itself is tested in test_cpu_backend.cpp.
#include <doctest/doctest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "framework/autocast.h"
#include "framework/autograd.h"
#include "framework/ops.h"
#include "framework/random.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/math/bf16.h"
#include "models/attention.h"
#include "tests/tiny_run.h"

using namespace hr;
using namespace hr::testing;

namespace {


std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

float round_bf16(float x) { return math::from_bf16(math::to_bf16(x)); }

// out (M, N) = op(a) op(b) in double from bf16-rounded row-major operands a (M, K) or (K, M) and b (K, N) or (N, K)
std::vector<double> rounded_product(const std::vector<float>& a, const std::vector<float>& b, int64_t M, int64_t N,
                                    int64_t K, bool ta, bool tb) {
  std::vector<double> out(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(round_bf16(a[ta ? k * M + i : i * K + k])) * round_bf16(b[tb ? j * K + k : k * N + j]);
      out[i * N + j] = s;
    }
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-5 * (1 + std::abs(want[i])))) {
      FAIL_CHECK(std::string(what) << ": element " << i << " is " << got[i] << ", expected " << want[i]);
      return;
    }
}

}  // namespace

TEST_CASE("to_bf16 rounds to nearest even and keeps NaN, infinities and signs") {
  const auto bits = [](uint32_t u) { return __builtin_bit_cast(float, u); };
  CHECK(math::to_bf16(1.f) == 0x3F80);
  CHECK(math::to_bf16(bits(0x3F808000u)) == 0x3F80);  // a tie, to the even neighbour below
  CHECK(math::to_bf16(bits(0x3F818000u)) == 0x3F82);  // a tie, to the even neighbour above
  CHECK(math::to_bf16(bits(0x3F808001u)) == 0x3F81);  // just above the tie
  CHECK(math::to_bf16(-2.5f) == 0xC020);
  CHECK(math::to_bf16(FLT_MAX) == 0x7F80);            // overflows to infinity, as IEEE rounding does
  CHECK(math::to_bf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
  CHECK(std::isnan(math::from_bf16(math::to_bf16(bits(0x7F800001u)))));  // a NaN whose payload would carry into inf
  CHECK(std::isnan(math::from_bf16(math::to_bf16(std::nanf("")))));

  // the backend's conversion is the same function, on every element: ties, NaN, infinities, signed zeros, denormals
  // (oneDNN's reorder would be faster alone, but per call it cost more than it saved in a training step: measured)
  for (const size_t size : {1000, 5000}) {
    CAPTURE(size);
    std::vector<float> x = random_values(size, 7);
    for (const uint32_t u : {0x3F808000u, 0x3F818000u, 0x3F808001u, 0x7F7FFFFFu, 0x7F800001u, 0x7F800000u, 0xFF800000u,
                             0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00018000u})
      x.push_back(bits(u));
    std::vector<uint16_t> y(x.size());
    backend(Device::CPU).to_bf16(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      CAPTURE(i);
      const bool denormal = std::fpclassify(x[i]) == FP_SUBNORMAL;
      CHECK(y[i] == math::to_bf16(x[i]));
      if (std::isfinite(x[i]) && !denormal && x[i] != FLT_MAX)  // FLT_MAX rounds to infinity
        CHECK(std::abs(math::from_bf16(y[i]) - x[i]) <= std::ldexp(std::abs(x[i]), -8));  // half an ulp
    }
  }
}

TEST_CASE("autocast: a weight is rounded once per scope, other tensors every time; a nested scope changes nothing") {
  Tensor w = Tensor::from_vector(random_values(12, 1), {3, 4}).set_requires_grad();
  const Tensor x = Tensor::from_vector(random_values(8, 2), {2, 4});
  CHECK_FALSE(autocast::bf16());
  const int64_t before = autocast::weight_conversions();
  {
    AutocastScope scope(Precision::BF16, {w});
    CHECK(autocast::bf16());
    const Tensor w1 = autocast::to_bf16(w), w2 = autocast::to_bf16(w);
    CHECK(w1.same(w2));
    CHECK(w1.dtype() == DType::BF16);
    CHECK_FALSE(autocast::to_bf16(x).same(autocast::to_bf16(x)));
    {
      AutocastScope inner(Precision::F32, {});
      CHECK(autocast::bf16());
      CHECK(autocast::to_bf16(w).same(w1));
    }
    CHECK(autocast::weight_conversions() == before + 1);
  }
  CHECK_FALSE(autocast::bf16());
  {
    AutocastScope scope(Precision::BF16, {w});
    autocast::to_bf16(w);
  }
  CHECK(autocast::weight_conversions() == before + 2);  // a new scope (a new optimizer step) rounds it again
  AutocastScope f32(Precision::F32, {w});
  CHECK_FALSE(autocast::bf16());
}

TEST_CASE("autocast: AutocastOff runs ops in f32 inside a bf16 scope; mix_heads multiplies in f32 under bf16") {
  const std::vector<float> xv = random_values(2 * 3 * 4 * 5, 3), mv = random_values(3 * 2, 4);
  const std::vector<float> wv = random_values(80, 5);
  const Tensor w = Tensor::from_vector(wv, {2, 2, 4, 5});
  std::vector<float> y[2], gx[2], gm[2];
  for (int k = 0; k < 2; ++k) {  // f32, then under a bf16 scope that holds m as a weight
    Tensor x = Tensor::from_vector(xv, {2, 3, 4, 5}).set_requires_grad();  // (B, H_in, T, S)
    Tensor m = Tensor::from_vector(mv, {3, 2}).set_requires_grad();        // (H_in, H_out)
    std::optional<AutocastScope> scope;
    if (k == 1) scope.emplace(Precision::BF16, std::vector<Tensor>{m});
    const Tensor out = mix_heads(x, m);
    CHECK(autocast::bf16() == (k == 1));  // the guard inside gave the scope back
    y[k] = out.to_vector();
    backward(sum(mul(out, w)));
    gx[k] = x.grad().to_vector();
    gm[k] = m.grad().to_vector();
  }
  CHECK(y[1] == y[0]);
  CHECK(gx[1] == gx[0]);
  CHECK(gm[1] == gm[0]);

  const Tensor a = Tensor::from_vector(random_values(12, 6), {3, 4});
  const Tensor b = Tensor::from_vector(random_values(8, 7), {4, 2});
  const std::vector<float> exact = matmul(a, b).to_vector();
  {
    AutocastScope scope(Precision::BF16, {});
    {
      const AutocastOff f32;
      CHECK_FALSE(autocast::bf16());
      CHECK(matmul(a, b).to_vector() == exact);
    }
    CHECK(autocast::bf16());
    CHECK(matmul(a, b).to_vector() != exact);  // rounded again after the guard
  }
  const AutocastOff outside;  // without a scope it changes nothing
  CHECK_FALSE(autocast::bf16());
}

TEST_CASE("autocast: copies kept beyond a scope are used while current, and made afresh when not") {
  Tensor w = Tensor::from_vector(random_values(12, 3), {3, 4}).set_requires_grad();
  WeightCopies kept;
  const int64_t before = autocast::weight_conversions();
  Tensor first;
  {
    AutocastScope scope(Precision::BF16, {w}, &kept);
    first = autocast::to_bf16(w);
    CHECK_FALSE(kept.current);
  }
  CHECK(kept.current);  // closing the scope: the weights did not change while it was open
  REQUIRE(kept.of.size() == 1);
  CHECK(kept.of.at(w.impl()).same(first));
  {
    AutocastScope scope(Precision::BF16, {w}, &kept);
    CHECK(autocast::to_bf16(w).same(first));
  }
  CHECK(autocast::weight_conversions() == before + 1);
  w.data()[0] += 1.f;  // changed outside: whoever changed it says so
  kept.current = false;
  {
    AutocastScope scope(Precision::BF16, {w}, &kept);
    const Tensor again = autocast::to_bf16(w);
    CHECK_FALSE(again.same(first));
    CHECK(again.bf16()[0] == math::to_bf16(w.data()[0]));
  }
  CHECK(autocast::weight_conversions() == before + 2);
}

TEST_CASE("autocast: without gradients linear and linear_gelu can write their result in bf16, the f32 one rounded") {
  const Tensor x = Tensor::from_vector(random_values(5 * 3 * 16, 11), {5, 3, 16});
  Tensor w = Tensor::from_vector(random_values(24 * 16, 12), {24, 16}).set_requires_grad();
  Tensor b = Tensor::from_vector(random_values(24, 13), {24}).set_requires_grad();
  const AutocastScope scope(Precision::BF16, {w, b});
  NoGradGuard no_grad;
  const Tensor f32 = linear_gelu(x, w, b), low = linear_gelu(x, w, b, true);
  CHECK(f32.dtype() == DType::F32);
  REQUIRE(low.dtype() == DType::BF16);
  CHECK(low.shape() == Shape{5, 3, 24});
  const std::vector<float> v = f32.to_vector();
  for (size_t i = 0; i < v.size(); ++i)
    if (low.bf16()[i] != math::to_bf16(v[i])) FAIL("element " << i << " is not the f32 result rounded");
  // what reads it multiplies it as it is: the next linear gives what it gives on the f32 result
  const Tensor w2 = Tensor::from_vector(random_values(8 * 24, 14), {8, 24});
  CHECK(linear(low, w2, Tensor()).to_vector() == linear(f32, w2, Tensor()).to_vector());
  // linear alike (attention's q, k and v)
  const Tensor q32 = linear(x, w, b), q16 = linear(x, w, b, true);
  REQUIRE(q16.dtype() == DType::BF16);
  const std::vector<float> q = q32.to_vector();
  for (size_t i = 0; i < q.size(); ++i)
    if (q16.bf16()[i] != math::to_bf16(q[i])) FAIL("linear: element " << i << " is not the f32 result rounded");
}

TEST_CASE("autocast: bf16_for_product changes nothing with gradients or outside a bf16 scope") {
  const Tensor x = Tensor::from_vector(random_values(4 * 8, 15), {4, 8});
  Tensor w = Tensor::from_vector(random_values(6 * 8, 16), {6, 8}).set_requires_grad();
  const Tensor b = Tensor::from_vector(random_values(6, 17), {6});
  {
    NoGradGuard no_grad;
    CHECK(linear_gelu(x, w, b, true).dtype() == DType::F32);  // no scope
    CHECK(linear(x, w, b, true).dtype() == DType::F32);
  }
  const AutocastScope scope(Precision::BF16, {w});
  CHECK(linear_gelu(x, w, b, true).dtype() == DType::F32);  // recorded: what reads it sends its gradient to it
  CHECK(linear(x, w, b, true).dtype() == DType::F32);
  Tape::current().clear();
}

TEST_CASE("autocast: linear and matmul multiply rounded operands, forward and backward; f32 outside a scope") {
  const int64_t rows = 5, in = 70, out = 3;
  const std::vector<float> xv = random_values(rows * in, 3), wv = random_values(out * in, 4), bv = random_values(out, 5);
  const std::vector<float> rv = random_values(rows * out, 6);  // the gradient that reaches y
  Tensor x = Tensor::from_vector(xv, {rows, in}).set_requires_grad();
  Tensor w = Tensor::from_vector(wv, {out, in}).set_requires_grad();
  Tensor b = Tensor::from_vector(bv, {out}).set_requires_grad();
  {
    AutocastScope scope(Precision::BF16, {w, b});
    const Tensor y = linear(x, w, b);
    std::vector<double> want = rounded_product(xv, wv, rows, out, in, false, true);
    for (int64_t i = 0; i < rows * out; ++i) want[i] += bv[i % out];
    check_close(y.to_vector(), want, "linear forward");
    backward(y, Tensor::from_vector(rv, {rows, out}));
  }
  check_close(x.grad().to_vector(), rounded_product(rv, wv, rows, in, out, false, false), "linear dx");
  check_close(w.grad().to_vector(), rounded_product(rv, xv, out, in, rows, true, false), "linear dw");
  std::vector<double> gb(out, 0.0);
  for (int64_t i = 0; i < rows * out; ++i) gb[i % out] += rv[i];
  check_close(b.grad().to_vector(), gb, "linear db (f32)");

  // outside a scope: f32, so the rounded reference is off by more than the tolerance somewhere
  const std::vector<float> y32 = linear(x, w, Tensor()).to_vector();
  const std::vector<double> r16 = rounded_product(xv, wv, rows, out, in, false, true);
  double diff = 0;
  for (size_t i = 0; i < y32.size(); ++i) diff = std::max(diff, std::abs(y32[i] - r16[i]));
  CHECK(diff > 1e-4);

  // batched matmul, b transposed: (2, 4, 70) @ (2, 6, 70)^T
  const int64_t M = 4, N = 6, K = 70;
  const std::vector<float> av = random_values(2 * M * K, 8), cv = random_values(2 * N * K, 9),
                           gv = random_values(2 * M * N, 10);
  Tensor a = Tensor::from_vector(av, {2, M, K}).set_requires_grad();
  Tensor c = Tensor::from_vector(cv, {2, N, K}).set_requires_grad();
  {
    AutocastScope scope(Precision::BF16, {});
    const Tensor p = matmul(a, c, false, true);
    const std::vector<float> got = p.to_vector();
    for (int64_t bi = 0; bi < 2; ++bi) {
      const std::vector<float> a1(av.begin() + bi * M * K, av.begin() + (bi + 1) * M * K);
      const std::vector<float> c1(cv.begin() + bi * N * K, cv.begin() + (bi + 1) * N * K);
      const std::vector<float> g1(gv.begin() + bi * M * N, gv.begin() + (bi + 1) * M * N);
      check_close(std::vector<float>(got.begin() + bi * M * N, got.begin() + (bi + 1) * M * N),
                  rounded_product(a1, c1, M, N, K, false, true), "matmul forward");
      if (bi == 1) {
        backward(p, Tensor::from_vector(gv, {2, M, N}));
        const std::vector<float> ga = a.grad().to_vector(), gc = c.grad().to_vector();
        check_close(std::vector<float>(ga.begin() + M * K, ga.end()), rounded_product(g1, c1, M, K, N, false, false),
                    "matmul da");
        check_close(std::vector<float>(gc.begin() + N * K, gc.end()), rounded_product(g1, a1, N, K, M, true, false),
                    "matmul dc");
      }
    }
  }
}

TEST_CASE("autocast: an activation rounded once feeds two linears; the tape keeps its bf16 copy, not its f32 values") {
  const int64_t rows = 64, in = 64, out = 32;  // every buffer a power-of-two size: its own allocator size class
  const std::vector<float> xv = random_values(rows * in, 11), w1v = random_values(out * in, 12),
                           w2v = random_values(out * in, 13), rv = random_values(rows * out, 14);
  Tensor x = Tensor::from_vector(xv, {rows, in}).set_requires_grad();
  Tensor w1 = Tensor::from_vector(w1v, {out, in}).set_requires_grad();
  Tensor w2 = Tensor::from_vector(w2v, {out, in}).set_requires_grad();
  std::vector<float> x2v(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) x2v[i] = 2.f * xv[i];
  Backend& be = backend(Device::CPU);
  {
    AutocastScope scope(Precision::BF16, {w1, w2});
    const size_t base = be.bytes_in_use();
    Tensor y;
    {
      const Tensor h = add(x, x);  // an activation (f32) that no backward rule reads
      const Tensor hin = autocast_operand(h);
      CHECK(hin.dtype() == DType::BF16);
      CHECK(hin.requires_grad());
      CHECK(autocast_operand(hin).same(hin));
      y = add(linear(hin, w1, Tensor()), linear(hin, w2, Tensor()));
    }
    // y (f32), h's bf16 copy and the two weight copies; not h's f32 values
    CHECK(be.bytes_in_use() - base == rows * out * 4 + rows * in * 2 + 2 * out * in * 2);
    std::vector<double> want = rounded_product(x2v, w1v, rows, out, in, false, true);
    const std::vector<double> want2 = rounded_product(x2v, w2v, rows, out, in, false, true);
    for (size_t i = 0; i < want.size(); ++i) want[i] += want2[i];
    check_close(y.to_vector(), want, "two linears forward");
    backward(y, Tensor::from_vector(rv, {rows, out}));
  }
  std::vector<double> gx = rounded_product(rv, w1v, rows, in, out, false, false);
  const std::vector<double> gx2 = rounded_product(rv, w2v, rows, in, out, false, false);
  for (size_t i = 0; i < gx.size(); ++i) gx[i] = 2 * (gx[i] + gx2[i]);  // through h = x + x
  check_close(x.grad().to_vector(), gx, "dx through the shared copy");
  check_close(w1.grad().to_vector(), rounded_product(rv, x2v, out, in, rows, true, false), "dw1");
  check_close(w2.grad().to_vector(), rounded_product(rv, x2v, out, in, rows, true, false), "dw2");
}

TEST_CASE("autocast: head_scores and head_context multiply rounded operands in place, forward and backward") {
  // per head h of sequence b: scores = q_h k_h^T, context_h = p_h v_h, each from the bf16-rounded values
  const int64_t B = 2, H = 3, Dh = 40, T = 5;
  const std::vector<float> qv = random_values(B * T * H * Dh, 11), kv = random_values(B * T * H * Dh, 12),
                           pv = random_values(B * H * T * T, 13), vv = random_values(B * T * H * Dh, 14),
                           gs = random_values(B * H * T * T, 15), gc = random_values(B * T * H * Dh, 16);
  Tensor q = Tensor::from_vector(qv, {B, T, H * Dh}).set_requires_grad();
  Tensor k = Tensor::from_vector(kv, {B, T, H * Dh}).set_requires_grad();
  Tensor p = Tensor::from_vector(pv, {B, H, T, T}).set_requires_grad();
  Tensor v = Tensor::from_vector(vv, {B, T, H * Dh}).set_requires_grad();
  std::vector<float> scores, context;
  {
    AutocastScope scope(Precision::BF16, {});
    const Tensor s = head_scores(q, k, H), c = head_context(p, v);
    scores = s.to_vector();
    context = c.to_vector();
    backward(add(sum(mul(s, Tensor::from_vector(gs, s.shape()))), sum(mul(c, Tensor::from_vector(gc, c.shape())))));
  }
  // (T, Dh) block of head h of sequence b out of a (B, T, H*Dh) tensor, and back
  const auto head = [&](const std::vector<float>& x, int64_t b, int64_t h) {
    std::vector<float> out(static_cast<size_t>(T * Dh));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < Dh; ++d) out[t * Dh + d] = x[(b * T + t) * H * Dh + h * Dh + d];
    return out;
  };
  const auto square = [&](const std::vector<float>& x, int64_t b, int64_t h) {  // (T, T) of (B, H, T, T)
    return std::vector<float>(x.begin() + (b * H + h) * T * T, x.begin() + (b * H + h + 1) * T * T);
  };
  const std::vector<float> gq = q.grad().to_vector(), gk = k.grad().to_vector(), gp = p.grad().to_vector(),
                           gv = v.grad().to_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      CAPTURE(b); CAPTURE(h);
      const auto qh = head(qv, b, h), kh = head(kv, b, h), vh = head(vv, b, h), ph = square(pv, b, h);
      const auto gsh = square(gs, b, h), gch = head(gc, b, h);
      check_close(square(scores, b, h), rounded_product(qh, kh, T, T, Dh, false, true), "head_scores");
      check_close(head(context, b, h), rounded_product(ph, vh, T, Dh, T, false, false), "head_context");
      check_close(head(gq, b, h), rounded_product(gsh, kh, T, Dh, T, false, false), "head_scores dq");
      check_close(head(gk, b, h), rounded_product(gsh, qh, T, Dh, T, true, false), "head_scores dk");
      check_close(square(gp, b, h), rounded_product(gch, vh, T, T, Dh, false, true), "head_context dprobs");
      check_close(head(gv, b, h), rounded_product(ph, gch, T, Dh, T, true, false), "head_context dv");
    }
}

TEST_CASE("autocast: attention_weights writes the bf16 copy head_context multiplies; gradients as the ops it fuses") {
  const int64_t B = 2, H = 2, T = 6, Dh = 3;
  const std::vector<float> xv = random_values(B * H * T * T, 21), vv = random_values(B * T * H * Dh, 22),
                           gc = random_values(B * T * H * Dh, 23);
  std::vector<float> mv(B * T, 0.f);
  mv[T - 1] = -1e9f;  // batch 0: the last key padded
  const Tensor mask = Tensor::from_vector(mv, {B, T});
  struct Result {
    std::vector<float> context, gx, gv;
    std::vector<uint16_t> weights;
  };
  const auto run = [&](bool fused) {
    Tensor x = Tensor::from_vector(xv, {B, H, T, T}).set_requires_grad();
    Tensor v = Tensor::from_vector(vv, {B, T, H * Dh}).set_requires_grad();
    Result r;
    manual_seed(4);
    AutocastScope scope(Precision::BF16, {});
    const Tensor w = fused ? attention_weights(x, mask, 0.5f, 0.2f, true) : dropout(softmax(x, mask, 0.5f), 0.2f, true);
    const Tensor c = head_context(w, v);
    if (fused) {
      REQUIRE(w.dtype() == DType::BF16);
      r.weights.resize(static_cast<size_t>(w.numel()));
      backend(Device::CPU).to_host(r.weights.data(), w.bf16(), r.weights.size() * sizeof(uint16_t));
    } else {
      const std::vector<float> f = w.to_vector();
      for (float value : f) r.weights.push_back(math::to_bf16(value));
    }
    r.context = c.to_vector();
    backward(sum(mul(c, Tensor::from_vector(gc, c.shape()))));
    r.gx = x.grad().to_vector();
    r.gv = v.grad().to_vector();
    return r;
  };
  const Result fused = run(true), apart = run(false);
  CHECK(fused.weights == apart.weights);  // rounded once, from the same values and draws
  CHECK(fused.context == apart.context);
  CHECK(fused.gv == apart.gv);
  check_close(fused.gx, std::vector<double>(apart.gx.begin(), apart.gx.end()), "attention_weights dx");
  CHECK(std::count(fused.weights.begin(), fused.weights.end(), uint16_t{0}) > B * H * 1);  // masked and dropped
}

// ---------------------------------------------------------------- whole runs (the headroom binary)

TEST_CASE("a tiny run trains in bf16 to the loss of f32; its checkpoint resumes in f32 and evaluates in both") {
  TempDir d;
  const std::string cfg = setup(d), steps = " --set train.lr=0.01 --set train.max_steps=60";
  const Result f32 = headroom("train " + quote(cfg) + steps + " --out " + quote(d / "f32"));
  REQUIRE_MESSAGE(f32.code == 0, f32.output);
  const Result bf16 = headroom("train " + quote(cfg) + steps + " --set train.precision=bf16 --out " + quote(d / "bf16"));
  REQUIRE_MESSAGE(bf16.code == 0, bf16.output);
  const auto l32 = losses(d / "f32"), l16 = losses(d / "bf16");
  REQUIRE(l32.size() == 60);
  REQUIRE(l16.size() == 60);
  const auto last10 = [](const std::map<int64_t, double>& l) {
    double s = 0;
    for (int64_t step = 51; step <= 60; ++step) s += l.at(step);
    return s / 10;
  };
  // the same data, seed and dropout: the first step differs by the rounding alone, and 60 steps later both runs have
  // learned as much (stated tolerances: 1% at the first step; mean of the last 10 losses within 0.05 + 15%)
  CHECK(std::abs(l16.at(1) - l32.at(1)) <= 0.01 * l32.at(1));
  CHECK(l16.at(1) != l32.at(1));                // the bf16 run did round
  CHECK(l32.at(1) - last10(l32) > 0.5);         // f32 learned (1.10 -> 0.14 here), so agreeing with it means something
  CHECK(std::abs(last10(l16) - last10(l32)) <= 0.05 + 0.15 * last10(l32));

  // the checkpoint holds f32 master weights: it resumes in f32 and keeps the new precision for the next resume
  const Result resumed = headroom("train --resume " + quote(d / "bf16") +
                                  " --set train.precision=f32 --set train.max_steps=65");
  REQUIRE_MESSAGE(resumed.code == 0, resumed.output);
  CHECK(losses(d / "bf16").size() == 65);
  CHECK(read_file(d / "bf16/config.yaml").find("precision: f32") != std::string::npos);

  // eval takes --precision; on this tiny model both give the same accuracy
  const Result e32 = headroom("eval --run " + quote(d / "bf16") + " --split eval --precision f32 --json");
  const Result e16 = headroom("eval --run " + quote(d / "bf16") + " --split eval --precision bf16 --json");
  REQUIRE_MESSAGE(e32.code == 0, e32.output);
  REQUIRE_MESSAGE(e16.code == 0, e16.output);
  const auto acc = [](const Result& r) {
    return nlohmann::json::parse(r.output.substr(r.output.rfind("{\"checkpoint\"")))["eval"]["accuracy"].get<double>();
  };
  CHECK(std::abs(acc(e32) - acc(e16)) <= 0.07);  // 15 rows: one row's flip allowed
  const Result p16 = headroom("predict --run " + quote(d / "bf16") + " --precision bf16 --text 'play a song'");
  CHECK_MESSAGE(p16.code == 0, p16.output);
  CHECK(p16.output.find("\"label\"") != std::string::npos);
}

TEST_CASE("bf16 is chosen from oneDNN's instruction set: native with bf16 instructions, emulated without") {
  using dnnl::cpu_isa;
  std::string why;
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::avx512_core_amx, &why) == Backend::Bf16::Native);
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::avx512_core_bf16, &why) == Backend::Bf16::Native);
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::avx512_core_vnni, &why) == Backend::Bf16::Emulated);
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::avx512_core, &why) == Backend::Bf16::Emulated);
  CHECK(why.find("avx512_core") != std::string::npos);
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::avx2_vnni, &why) == Backend::Bf16::Emulated);
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::avx2, &why) == Backend::Bf16::Emulated);
  CHECK(why.find("avx2") != std::string::npos);
  CHECK(OneDnnMatmul::bf16_support_for(cpu_isa::sse41, &why) == Backend::Bf16::Emulated);
}

TEST_CASE("bf16 emulated without bf16 instructions (AVX-512, AVX2): a warning, and the numbers of the native path") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string bin = quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom");
  const std::string run = "train " + quote(cfg) + " --set train.precision=bf16 --set train.max_steps=6 --out ";
  const Result native = headroom(run + quote(d / "native"));
  REQUIRE_MESSAGE(native.code == 0, native.output);
  const bool native_here = backend(Device::CPU).bf16_support(nullptr) == Backend::Bf16::Native;
  CHECK_MESSAGE((native.output.find("emulated") == std::string::npos) == native_here, native.output);
  const auto ln = losses(d / "native");
  REQUIRE(ln.size() == 6);
  // DNNL_MAX_CPU_ISA caps what oneDNN uses, as a CPU without the instructions would; AVX2 has no bf16 matmul of
  // oneDNN's at all, so there only the widened products run
  for (const char* isa : {"AVX512_CORE", "AVX2"}) {
    CAPTURE(isa);
    const Result emulated = shell(std::string("DNNL_MAX_CPU_ISA=") + isa + " " + bin + " " + run + quote(d / isa));
    REQUIRE_MESSAGE(emulated.code == 0, emulated.output);
    CHECK_MESSAGE(emulated.output.find("bf16 runs emulated") != std::string::npos, emulated.output);
    CHECK_MESSAGE(emulated.output.find("no faster than f32") != std::string::npos, emulated.output);
    // the same rounded operands, only the kernels' summation order differs
    const auto le = losses(d / isa);
    REQUIRE(le.size() == 6);
    for (const auto& [step, loss] : ln) CHECK(std::abs(le.at(step) - loss) <= 1e-3 * (1 + loss));
  }
}
