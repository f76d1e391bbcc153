// The CPU backend against naive reference loops written here (in double where it matters), on awkward sizes.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_allocator.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_parallel.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/math/bf16.h"
#include "kernels/math/exp.h"
#include "kernels/math/random.h"
#include "kernels/math/rows.h"
#include "tests/gemm_case.h"
#include "tests/random_values.h"

using namespace hr;
using hr::testing::random_vec;
using hr::testing::GemmCase;
using hr::testing::gemm_layout;
using hr::testing::GemmLayout;

namespace {

using Vec = std::vector<float>;

// |got - want| <= tol * (1 + |want|) everywhere; reports the first offender
void check_close(const Vec& got, const std::vector<double>& want, double tol, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])))) {
      FAIL_CHECK(what << ": element " << i << " is " << got[i] << ", expected " << want[i]);
      return;
    }
  }
}

// Runs fn once on one thread and once on all threads, every loop split whatever its size; both results must be
// bitwise equal.
template <class Fn>
void check_thread_count_independent(Fn&& fn, const char* what) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Vec one = fn();
  omp_set_num_threads(threads);
  const cpu::ParallelAlways split;
  const Vec all = fn();
  CHECK_MESSAGE(one == all, what << ": result depends on the thread count");
}

Backend& be() { return cpu_backend(); }

// ---------------------------------------------------------------- gemm

std::vector<uint16_t> rounded(const Vec& v) {
  std::vector<uint16_t> r(v.size());
  be().to_bf16(v.data(), r.data(), static_cast<int64_t>(v.size()));
  return r;
}

double ref_unary(Unary op, double x, double a, double b) {
  switch (op) {
    case Unary::Copy: return x;
    case Unary::Neg: return -x;
    case Unary::Exp: return std::exp(x);
    case Unary::Log: return std::log(x);
    case Unary::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Unary::Tanh: return std::tanh(x);
    case Unary::Relu: return x > 0 ? x : 0;
    case Unary::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Unary::Sqrt: return std::sqrt(x);
    case Unary::Square: return x * x;
    case Unary::Scale: return a * x;
    case Unary::AddScalar: return x + a;
    case Unary::Clamp: return std::min(std::max(x, a), b);
    case Unary::Pow: return std::pow(x, a);
  }
  return 0;
}

// C = op(A) op(B) ... against a double-precision loop, through the backend or through `mm`
void run_gemm_case(const GemmCase& c, OneDnnMatmul* mm = nullptr) {
  CAPTURE(c.batch); CAPTURE(c.M); CAPTURE(c.N); CAPTURE(c.K); CAPTURE(c.transA); CAPTURE(c.transB);
  CAPTURE(c.bcastA); CAPTURE(c.bcastB); CAPTURE(c.alpha); CAPTURE(c.beta); CAPTURE(c.bias); CAPTURE(c.gelu);
  const GemmLayout l = gemm_layout(c);
  GemmArgs g = l.g;
  const Vec A = random_vec(static_cast<size_t>(l.size_a), 1);
  const Vec B = random_vec(static_cast<size_t>(l.size_b), 2);
  const Vec bias = random_vec(static_cast<size_t>(c.N), 3);
  Vec C = random_vec(static_cast<size_t>(l.size_c), 4);
  const Vec C0 = C;
  const std::vector<uint16_t> A16 = rounded(A), B16 = rounded(B);
  g.A = A.data(); g.B = B.data(); g.C = C.data();
  g.bias = c.bias ? bias.data() : nullptr;
  if (c.bf16) g.inputs = GemmInputs::BF16, g.A = A16.data(), g.B = B16.data();
  if (mm) mm->run(g);
  else be().gemm(g);

  // want: from the operands the gemm saw (rounded for bf16); exact: from the f32 operands; bound: sum |a w| per element
  std::vector<double> want(C0.begin(), C0.end()), exact = want, bound(want.size(), 0.0);  // padding, gaps untouched
  double max_rounding_effect = 0;
  for (int64_t m = 0; m < c.outer * c.batch; ++m)
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) {
        const int64_t o = m / c.batch, b = m % c.batch;
        const int64_t a0 = o * g.outerA + b * g.strideA, w0 = o * g.outerB + b * g.strideB;
        double s = 0, s32 = 0, abs = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const int64_t ai = c.transA ? a0 + k * g.lda + i : a0 + i * g.lda + k;
          const int64_t wi = c.transB ? w0 + j * g.ldb + k : w0 + k * g.ldb + j;
          const double a = A[ai], w = B[wi];
          s32 += a * w;
          abs += std::abs(a * w);
          s += c.bf16 ? double(math::from_bf16(A16[ai])) * math::from_bf16(B16[wi]) : a * w;
        }
        const size_t ci = static_cast<size_t>(o * g.outerC + b * g.strideC + i * g.ldc + j);
        const double rest = c.beta * C0[ci] + (c.bias ? bias[j] : 0.0);
        const auto epilogue = [&](double v) { return c.gelu ? ref_unary(Unary::Gelu, v, 0, 0) : v; };
        want[ci] = epilogue(c.alpha * s + rest);
        exact[ci] = epilogue(c.alpha * s32 + rest);
        bound[ci] = std::abs(c.alpha) * abs * (c.gelu ? 1.13 : 1.0);  // GELU's slope is at most 1.129
        max_rounding_effect = std::max(max_rounding_effect, std::abs(want[ci] - exact[ci]));
      }
  check_close(C, want, 2e-5, "gemm");
  if (c.bf16) {
    // each rounded input is within 2^-8 of its value, a product of two within 2^-7 (+ 2^-16), so the sum within
    // about 2^-7 sum |a w|; random signs make it about 2^-8 sqrt(K) times the typical term in practice
    for (size_t i = 0; i < C.size(); ++i)
      if (!(std::abs(C[i] - exact[i]) <= 1.01 * std::ldexp(bound[i], -7) + 1e-5 * (1 + std::abs(exact[i])))) {
        FAIL_CHECK("bf16 gemm: element " << i << " is " << C[i] << ", f32 gives " << exact[i] << ", beyond 2^-7 * "
                                         << bound[i]);
        break;
      }
    // and the test can tell bf16 from f32: rounding moved some element by more than check_close's tolerance
    if (c.K >= 64) CHECK(max_rounding_effect > 1e-3);
  }

  if (c.K > 0) {
    CpuAllocator scratch;
    OneDnnMatmul mm(scratch);
    const std::string impl = mm.implementation(g);
    CHECK_MESSAGE(impl.rfind("ref", 0) != 0, "gemm fell back to oneDNN's reference kernel: " << impl);
  }
}

}  // namespace

TEST_CASE("gemm: every transpose combination, padded leading dims, awkward sizes") {
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 33, 130}, {33, 7, 1}, {130, 1, 7}, {33, 130, 33}};
  for (const auto& s : sizes)
    for (int t = 0; t < 4; ++t)
      for (int64_t pad : {0, 3})
        run_gemm_case({1, s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, pad, false, false, 1.f, 0.f, false});
}

TEST_CASE("gemm: an operand read along K with a 4 KB leading dimension is copied to a padded one, same result") {
  CpuAllocator scratch;
  OneDnnMatmul padding(scratch, true), plain(scratch, false);
  // an FFN's weight gradients: A^T with lda 1024 (d_ff) against a narrow B; B with ldb 1024 after a narrow A^T,
  // accumulated (beta 1); both operands at lda = ldb = 1024 by padding, with alpha and a bias
  const GemmCase dw1{1, 1024, 64, 96, true, false, 0, false, false, 1.f, 0.f, false};
  const GemmCase dw2{1, 64, 1024, 96, true, false, 0, false, false, 1.f, 1.f, false};
  const GemmCase both{1, 32, 32, 40, true, false, 992, false, false, 0.5f, 0.f, true};
  CHECK(padding.padded_operands(gemm_layout(dw1).g) == 1);
  CHECK(padding.padded_operands(gemm_layout(dw2).g) == 2);
  CHECK(padding.padded_operands(gemm_layout(both).g) == 3);
  CHECK(plain.padded_operands(gemm_layout(dw1).g) == 0);
  // left alone: the other side wide or very narrow, a leading dimension off 4 KB, K contiguous, bf16, a batch
  const GemmCase wide{1, 1024, 384, 8, true, false, 0, false, false, 1.f, 0.f, false};
  const GemmCase thin{1, 1024, 16, 8, true, false, 0, false, false, 1.f, 0.f, false};
  const GemmCase off{1, 1000, 64, 8, true, false, 0, false, false, 1.f, 0.f, false};
  const GemmCase contiguous{1, 64, 64, 1024, false, true, 0, false, false, 1.f, 0.f, false};
  const GemmCase batched{2, 1024, 64, 8, true, false, 0, false, false, 1.f, 0.f, false};
  for (const GemmCase& c : {wide, thin, off, contiguous, batched}) CHECK(padding.padded_operands(gemm_layout(c).g) == 0);
  GemmArgs bf16 = gemm_layout(dw1).g;
  bf16.inputs = GemmInputs::BF16;
  CHECK(padding.padded_operands(bf16) == 0);
  for (const GemmCase& c : {dw1, dw2, both}) {
    run_gemm_case(c, &padding);
    run_gemm_case(c, &plain);
  }
}

TEST_CASE("gemm: batches with broadcast operands, bias, alpha and beta") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
    run_gemm_case({3, 7, 33, 130, ta, tb, 1, false, false, 1.f, 0.f, false});
    run_gemm_case({3, 7, 33, 130, ta, tb, 1, true, false, 1.f, 0.f, false});   // strideA = 0
    run_gemm_case({4, 33, 7, 1, ta, tb, 0, false, true, 1.f, 0.f, false});     // strideB = 0
    run_gemm_case({2, 33, 7, 13, ta, tb, 2, false, false, 0.5f, 0.75f, false});  // alpha, beta
    run_gemm_case({1, 33, 130, 7, ta, tb, 0, false, false, 1.f, 0.f, true});   // bias input
    run_gemm_case({2, 7, 33, 7, ta, tb, 3, false, true, 1.f, 0.f, true});      // batched bias input
    run_gemm_case({2, 7, 33, 7, ta, tb, 3, false, true, 0.25f, 0.f, true});    // bias with alpha (not scaled)
    run_gemm_case({2, 7, 33, 7, ta, tb, 0, false, false, 1.f, 1.f, false});    // beta = 1: accumulate
  }
  run_gemm_case({2, 7, 5, 0, false, false, 1, false, false, 1.f, 0.5f, false});  // K = 0: C = beta C
  run_gemm_case({1, 7, 5, 0, false, false, 0, false, false, 2.f, 0.f, true});    // K = 0: C = bias
}

TEST_CASE("gemm: the GELU epilogue after bias, beta and alpha, in the primitive or after it") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
    run_gemm_case({1, 33, 130, 7, ta, tb, 0, false, false, 1.f, 0.f, true, false, 1, true});    // linear + GELU
    run_gemm_case({2, 7, 33, 13, ta, tb, 2, false, true, 1.f, 0.f, false, false, 1, true});     // no bias
    run_gemm_case({2, 7, 33, 13, ta, tb, 1, false, false, 0.5f, 0.75f, false, false, 1, true}); // alpha, beta
    run_gemm_case({2, 7, 33, 7, ta, tb, 3, false, true, 0.25f, 0.f, true, false, 1, true});     // bias added after
    run_gemm_case({2, 7, 33, 7, ta, tb, 1, false, false, 0.25f, 0.f, true, false, 3, true});    // outer batch
  }
  run_gemm_case({1, 7, 5, 0, false, false, 0, false, false, 2.f, 0.f, true, false, 1, true});   // K = 0
  run_gemm_case({1, 64, 48, 200, false, true, 0, false, false, 1.f, 0.f, true, true, 1, true});
}

TEST_CASE("gemm: an outer batch over matrices that lie side by side (attention heads in place)") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
    run_gemm_case({4, 9, 11, 8, ta, tb, 0, false, false, 1.f, 0.f, false, false, 3});   // (B, T, H*Dh) operands
    run_gemm_case({3, 7, 5, 13, ta, tb, 2, false, false, 0.5f, 1.f, false, false, 2});  // padded, alpha, beta
    run_gemm_case({2, 7, 33, 7, ta, tb, 1, false, false, 0.25f, 0.f, true, false, 3});  // bias added after alpha
    run_gemm_case({2, 5, 6, 0, ta, tb, 0, false, false, 1.f, 0.5f, false, false, 2});   // K = 0
    run_gemm_case({8, 64, 32, 64, ta, tb, 0, false, false, 1.f, 0.f, false, true, 2});
  }
}

TEST_CASE("bf16 gemm: the product of the rounded inputs with f32 accumulation, within 2^-7 sum |a b| of f32") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
    run_gemm_case({1, 64, 48, 200, ta, tb, 0, false, false, 1.f, 0.f, false, true});
    run_gemm_case({1, 17, 33, 130, ta, tb, 3, false, false, 1.f, 0.f, true, true});   // padded, bias input
    run_gemm_case({3, 7, 33, 130, ta, tb, 1, true, false, 1.f, 0.f, false, true});    // strideA = 0
    run_gemm_case({2, 33, 7, 13, ta, tb, 2, false, true, 0.5f, 0.75f, false, true});  // alpha, beta
    run_gemm_case({2, 7, 33, 64, ta, tb, 0, false, false, 1.f, 1.f, false, true});    // beta = 1: gradient buffers
  }
}

// A gemm case run twice on bf16 inputs: into f32 C, and into bf16 C16 laid out alike; C16 must be C rounded, element
// for element, and the padding and gaps between its matrices untouched. Through the backend or through `mm`.
void check_bf16_result(const GemmCase& c, OneDnnMatmul* mm = nullptr) {
  CAPTURE(c.batch); CAPTURE(c.M); CAPTURE(c.N); CAPTURE(c.K); CAPTURE(c.transA); CAPTURE(c.transB);
  CAPTURE(c.outer); CAPTURE(c.bias); CAPTURE(c.gelu);
  const GemmLayout l = gemm_layout(c);
  const std::vector<uint16_t> A16 = rounded(random_vec(static_cast<size_t>(l.size_a), 1));
  const std::vector<uint16_t> B16 = rounded(random_vec(static_cast<size_t>(l.size_b), 2));
  const Vec bias = random_vec(static_cast<size_t>(c.N), 3);
  Vec C(static_cast<size_t>(l.size_c), 0.f);
  std::vector<uint16_t> C16(C.size(), uint16_t{0xBEEF});
  GemmArgs g = l.g;
  g.inputs = GemmInputs::BF16, g.A = A16.data(), g.B = B16.data();
  g.bias = c.bias ? bias.data() : nullptr;
  g.C = C.data();
  const auto run = [&] {
    if (mm) mm->run(g);
    else be().gemm(g);
  };
  run();
  g.C = nullptr, g.C16 = C16.data();
  run();
  const std::vector<bool> inside = gemm_c_inside(c, l);
  for (size_t i = 0; i < C.size(); ++i) {
    const uint16_t want = inside[i] ? math::to_bf16(C[i]) : uint16_t{0xBEEF};
    if (C16[i] != want) {
      FAIL_CHECK("element " << i << std::string(inside[i] ? "" : " (padding)") << " is " << C16[i] << ", expected "
                             << want);
      return;
    }
  }
}

TEST_CASE("gemm: a bf16 result is the f32 result rounded, after bias and GELU") {
  for (int t = 0; t < 4; ++t) {
    const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
    check_bf16_result({1, 64, 48, 200, ta, tb, 0, false, false, 1.f, 0.f, true, true, 1, true});  // linear + GELU
    check_bf16_result({2, 17, 33, 30, ta, tb, 3, false, true, 1.f, 0.f, false, true});             // padded batches
    check_bf16_result({2, 7, 33, 7, ta, tb, 1, false, false, 1.f, 0.f, true, true, 3, true});      // outer batch
  }
  check_bf16_result({1, 7, 5, 0, false, false, 2, false, false, 1.f, 0.f, true, true, 1, true});  // K = 0
  // the result's dtype is a contract: no accumulation, no scaling, bf16 inputs only
  const std::vector<uint16_t> a(4, 0), b(4, 0);
  std::vector<uint16_t> c16(4, 0);
  float c32[4] = {};
  GemmArgs g;
  g.M = g.N = g.K = 2, g.lda = g.ldb = g.ldc = 2;
  g.inputs = GemmInputs::BF16, g.A = a.data(), g.B = b.data(), g.C16 = c16.data();
  g.beta = 1.f;
  CHECK_THROWS_WITH_AS(be().gemm(g), doctest::Contains("bf16 result needs"), Error);
  g.beta = 0.f, g.C = c32;
  CHECK_THROWS_WITH_AS(be().gemm(g), doctest::Contains("exactly one of C"), Error);
  g.C = nullptr, g.inputs = GemmInputs::F32;
  CHECK_THROWS_WITH_AS(be().gemm(g), doctest::Contains("bf16 result needs"), Error);
}

TEST_CASE("bf16 gemm widened to f32 (CPUs without bf16 instructions) and oneDNN's bf16 matmul: the same contract") {
  CpuAllocator scratch;
  OneDnnMatmul widened(scratch, std::nullopt, true), direct(scratch, std::nullopt, false);
  // oneDNN multiplies bf16 itself from AVX-512 on; below it the widened path is the only one
  const bool direct_runs = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  std::vector<OneDnnMatmul*> paths{&widened};
  if (direct_runs) paths.push_back(&direct);
  for (OneDnnMatmul* mm : paths) {
    CAPTURE(mm == &widened);
    for (int t = 0; t < 4; ++t) {
      const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
      run_gemm_case({1, 64, 48, 200, ta, tb, 0, false, false, 1.f, 0.f, false, true}, mm);
      run_gemm_case({1, 17, 33, 130, ta, tb, 3, false, false, 1.f, 0.f, true, true}, mm);    // padded, bias input
      run_gemm_case({3, 7, 33, 130, ta, tb, 1, true, false, 1.f, 0.f, false, true}, mm);     // strideA = 0
      run_gemm_case({4, 33, 7, 9, ta, tb, 0, false, true, 1.f, 0.f, false, true}, mm);       // strideB = 0
      run_gemm_case({2, 33, 7, 13, ta, tb, 2, false, true, 0.5f, 0.75f, false, true}, mm);   // alpha, beta
      run_gemm_case({2, 7, 33, 64, ta, tb, 0, false, false, 1.f, 1.f, false, true}, mm);     // beta = 1
      run_gemm_case({2, 7, 33, 7, ta, tb, 3, false, true, 0.25f, 0.f, true, true, 1, true}, mm);  // bias after, GELU
      run_gemm_case({8, 64, 32, 64, ta, tb, 0, false, false, 1.f, 0.f, false, true, 2}, mm);     // outer batch
      run_gemm_case({2, 9, 11, 8, ta, tb, 1, true, false, 1.f, 0.f, false, true, 3}, mm);        // outer, strideA 0
      check_bf16_result({1, 64, 48, 200, ta, tb, 0, false, false, 1.f, 0.f, true, true, 1, true}, mm);
      check_bf16_result({2, 17, 33, 30, ta, tb, 3, false, true, 1.f, 0.f, false, true}, mm);
      check_bf16_result({2, 7, 33, 7, ta, tb, 1, false, false, 1.f, 0.f, true, true, 3, true}, mm);
    }
    // K a multiple of 1024: the widened copy of A gets a padded leading dimension
    run_gemm_case({1, 5, 3, 1024, false, false, 0, false, false, 1.f, 0.f, false, true}, mm);
    check_bf16_result({1, 7, 5, 0, false, false, 2, false, false, 1.f, 0.f, true, true, 1, true}, mm);  // K = 0
  }
  const GemmLayout l = gemm_layout({1, 64, 48, 200, false, true, 0, false, false, 1.f, 0.f, false, true});
  const std::vector<uint16_t> a(static_cast<size_t>(l.size_a)), b(static_cast<size_t>(l.size_b));
  std::vector<uint16_t> c(static_cast<size_t>(l.size_c));
  GemmArgs g = l.g;
  g.inputs = GemmInputs::BF16, g.A = a.data(), g.B = b.data(), g.C16 = c.data();
  CHECK(widened.widens_bf16(g));
  CHECK(!direct.widens_bf16(g));
  CHECK_MESSAGE(widened.implementation(g).find("widened") != std::string::npos, widened.implementation(g));
  if (direct_runs) CHECK(direct.implementation(g).find("widened") == std::string::npos);
  g.inputs = GemmInputs::F32;
  CHECK(!widened.widens_bf16(g));
}

TEST_CASE("gemm: primitives are cached, bad arguments throw") {
  CpuAllocator scratch;
  OneDnnMatmul mm(scratch);
  const Vec A = random_vec(7 * 33, 1), B = random_vec(33 * 5, 2);
  Vec C(7 * 5);
  GemmArgs g;
  g.M = 7; g.N = 5; g.K = 33; g.A = A.data(); g.lda = 33; g.B = B.data(); g.ldb = 5; g.C = C.data(); g.ldc = 5;
  for (int i = 0; i < 3; ++i) mm.run(g);
  CHECK(mm.cached_primitives() == 1);
  g.alpha = 2.f;
  mm.run(g);
  CHECK(mm.cached_primitives() == 2);
  const size_t before = scratch.system_allocations();
  for (int i = 0; i < 3; ++i) mm.run(g);
  CHECK(scratch.system_allocations() == before);  // scratchpads come back from the cache

  GemmArgs bad = g;
  bad.lda = 10;
  CHECK_THROWS_AS(be().gemm(bad), Error);
  bad = g;
  bad.outer = 2;  // outer strides left at 0
  CHECK_THROWS_AS(be().gemm(bad), Error);
  bad = g;
  bad.batch = 2;  // strideC 0
  CHECK_THROWS_AS(be().gemm(bad), Error);
  bad = g;
  bad.bias = A.data();
  bad.beta = 1.f;
  CHECK_THROWS_AS(be().gemm(bad), Error);
}

// ---------------------------------------------------------------- elementwise

namespace {

// derivative by central differences of the double reference (none of the test points sits on a kink)
double ref_unary_grad(Unary op, double x, double a, double b) {
  const double h = 1e-6;
  return (ref_unary(op, x + h, a, b) - ref_unary(op, x - h, a, b)) / (2 * h);
}

const Unary kAllUnary[] = {Unary::Copy, Unary::Neg,  Unary::Exp,    Unary::Log,   Unary::Sigmoid,
                           Unary::Tanh, Unary::Relu, Unary::Gelu,   Unary::Sqrt,  Unary::Square,
                           Unary::Scale, Unary::AddScalar, Unary::Clamp, Unary::Pow};

}  // namespace

TEST_CASE("unary and unary_backward match double references") {
  const float a = 0.3f, b = 0.7f;  // scale / add / clamp bounds / exponent
  for (int64_t n : {1, 33, 100003}) {
    for (Unary op : kAllUnary) {
      CAPTURE(n); CAPTURE(static_cast<int>(op));
      const bool positive = op == Unary::Log || op == Unary::Sqrt || op == Unary::Pow;
      Vec x = random_vec(static_cast<size_t>(n), 7, positive ? 0.1f : -4.f, 4.f);
      Vec y(x.size());
      be().unary(op, x.data(), y.data(), n, a, b);
      std::vector<double> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) want[i] = ref_unary(op, x[i], a, b);
      check_close(y, want, 2e-6, "unary");

      // backward: keep finite-difference points away from the kinks of relu and clamp
      for (float& v : x)
        if (std::abs(v) < 1e-3f || std::abs(v - a) < 1e-3f || std::abs(v - b) < 1e-3f) v += 0.01f;
      be().unary(op, x.data(), y.data(), n, a, b);
      const Vec gy = random_vec(x.size(), 8);
      Vec gx = random_vec(x.size(), 9);
      const Vec gx0 = gx;
      be().unary_backward(op, x.data(), y.data(), gy.data(), gx.data(), n, a, b, true);
      for (size_t i = 0; i < x.size(); ++i) want[i] = gx0[i] + gy[i] * ref_unary_grad(op, x[i], a, b);
      check_close(gx, want, 1e-4, "unary_backward (accumulate)");
      be().unary_backward(op, x.data(), y.data(), gy.data(), gx.data(), n, a, b, false);
      for (size_t i = 0; i < x.size(); ++i) want[i] = gy[i] * ref_unary_grad(op, x[i], a, b);
      check_close(gx, want, 1e-4, "unary_backward");
    }
  }
}

TEST_CASE("GELU and its derivative over the whole float range, tails included, against double references") {
  // the loop's own erf and exp (kernels/cpu/cpu_gelu.h): every 1/64 from -20 to 20, then +-1e-30, +-inf
  Vec x;
  for (int i = -1280; i <= 1280; ++i) x.push_back(static_cast<float>(i) / 64.f);
  for (float v : {1e-30f, -1e-30f, 1e-6f, -1e-6f}) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  Vec y(x.size()), gx(x.size());
  const Vec gy(x.size(), 1.f);
  be().unary(Unary::Gelu, x.data(), y.data(), n, 0.f, 0.f);
  be().unary_backward(Unary::Gelu, x.data(), y.data(), gy.data(), gx.data(), n, 0.f, 0.f, false);
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    const double want = v * cdf, dwant = cdf + v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    CAPTURE(v);
    CHECK(std::abs(y[i] - want) <= 3e-7 * std::max(1.0, std::abs(v)));
    CHECK(std::abs(gx[i] - dwant) <= 3e-7 * std::max(1.0, std::abs(v)));
    if (v < -14) CHECK(std::abs(y[i]) < 1e-30);  // the tail underflows to (about) zero, not to a NaN
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Vec special = {inf, nan};
  Vec ys(2);
  be().unary(Unary::Gelu, special.data(), ys.data(), 2, 0.f, 0.f);
  CHECK(ys[0] == inf);
  CHECK(std::isnan(ys[1]));
}

namespace {

Broadcast make_broadcast(std::vector<int64_t> shape, std::vector<int64_t> sa, std::vector<int64_t> sb) {
  Broadcast p;
  p.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < p.ndim; ++d) {
    p.shape[d] = shape[d];
    p.sa[d] = sa[d];
    p.sb[d] = sb[d];
  }
  return p;
}

// element offsets of flat output index i under strides s
int64_t offset_of(const Broadcast& p, const int64_t* s, int64_t i) {
  int64_t off = 0;
  for (int d = p.ndim - 1; d >= 0; --d) {
    off += i % p.shape[d] * s[d];
    i /= p.shape[d];
  }
  return off;
}

int64_t extent(const Broadcast& p, const int64_t* s) {  // elements an operand needs
  int64_t e = 1;
  for (int d = 0; d < p.ndim; ++d) e += (p.shape[d] - 1) * s[d];
  return e;
}

}  // namespace

TEST_CASE("binary over broadcast patterns") {
  const cpu::ParallelAlways split;  // the runs of every pattern cut between threads
  const Broadcast cases[] = {
      make_broadcast({7, 33}, {33, 1}, {33, 1}),                  // same shape
      make_broadcast({130, 33}, {33, 1}, {0, 1}),                 // bias along rows
      make_broadcast({7, 33}, {33, 1}, {0, 0}),                   // scalar b
      make_broadcast({33, 7}, {7, 1}, {1, 0}),                    // column broadcast
      make_broadcast({3, 4, 5}, {5, 0, 1}, {0, 5, 1}),            // both broadcast, different dims
      make_broadcast({7, 33}, {1, 7}, {33, 1}),                   // a transposed view
      make_broadcast({1, 1, 1}, {0, 0, 0}, {0, 0, 0}),            // one element
      make_broadcast({2, 3, 1, 5, 2, 3}, {90, 30, 0, 6, 3, 1}, {0, 1, 0, 0, 0, 0}),  // 6-d
      make_broadcast({1000, 130}, {130, 1}, {0, 1}),              // large
      make_broadcast({1000, 130}, {0, 1}, {1, 0}),                // large outer product
  };
  const Binary ops[] = {Binary::Add, Binary::Sub, Binary::Mul, Binary::Div, Binary::MaskFill};
  const float scalar = -7.5f;
  int case_no = 0;
  for (const Broadcast& p : cases) {
    ++case_no;
    for (Binary op : ops) {
      CAPTURE(case_no); CAPTURE(static_cast<int>(op));
      const Vec a = random_vec(static_cast<size_t>(extent(p, p.sa)), 11);
      Vec b = random_vec(static_cast<size_t>(extent(p, p.sb)), 12, 0.5f, 2.f);
      if (op == Binary::MaskFill)
        for (size_t i = 0; i < b.size(); ++i) b[i] = i % 3 == 0 ? 1.f : 0.f;
      Vec out(static_cast<size_t>(p.numel()));
      be().binary(op, p, a.data(), b.data(), out.data(), scalar);
      std::vector<double> want(out.size());
      for (int64_t i = 0; i < p.numel(); ++i) {
        const double u = a[offset_of(p, p.sa, i)], v = b[offset_of(p, p.sb, i)];
        want[i] = op == Binary::Add ? u + v : op == Binary::Sub ? u - v : op == Binary::Mul ? u * v
                : op == Binary::Div ? u / v : (v != 0 ? scalar : u);
      }
      check_close(out, want, 1e-6, "binary");
    }
  }
}

TEST_CASE("sum_to over leading, middle, trailing and all dims, deterministic") {
  struct Case {
    std::vector<int64_t> shape, out_strides;
  };
  const Case cases[] = {
      {{7, 33, 5}, {0, 5, 1}},      // leading: bias grad
      {{7, 33, 5}, {5, 0, 1}},      // middle
      {{7, 33, 5}, {33, 1, 0}},     // trailing
      {{7, 33, 5}, {0, 0, 0}},      // everything
      {{7, 33, 5}, {0, 1, 0}},      // leading and trailing
      {{7, 33, 5}, {165, 5, 1}},    // nothing
      {{5000, 33}, {0, 1}},         // long leading reduction: segments
      {{3, 100003}, {1, 0}},        // few long trailing reductions: segments
      {{200003}, {0}},              // one long reduction
      {{1, 130}, {0, 1}},           // a size-1 dim summed away
      {{4096, 768}, {0, 1}},        // a transformer's bias grad
  };
  for (const Case& c : cases) {
    Broadcast p;
    p.ndim = static_cast<int>(c.shape.size());
    int64_t out_numel = 1;
    for (int d = 0; d < p.ndim; ++d) {
      p.shape[d] = c.shape[d];
      p.sa[d] = c.out_strides[d];
      if (c.out_strides[d] != 0) out_numel *= c.shape[d];
    }
    CAPTURE(p.numel()); CAPTURE(out_numel);
    const Vec x = random_vec(static_cast<size_t>(p.numel()), 21);
    std::vector<double> want(static_cast<size_t>(out_numel), 0.0);
    for (int64_t i = 0; i < p.numel(); ++i) want[offset_of(p, p.sa, i)] += x[i];

    Vec out(static_cast<size_t>(out_numel), 123.f);  // overwritten
    be().sum_to(p, x.data(), out.data(), out_numel, false);
    check_close(out, want, 1e-5, "sum_to");

    Vec acc = random_vec(static_cast<size_t>(out_numel), 22);
    std::vector<double> want_acc(want);
    for (size_t i = 0; i < acc.size(); ++i) want_acc[i] += acc[i];
    be().sum_to(p, x.data(), acc.data(), out_numel, true);
    check_close(acc, want_acc, 1e-5, "sum_to (accumulate)");

    check_thread_count_independent([&] {
      Vec o(static_cast<size_t>(out_numel));
      be().sum_to(p, x.data(), o.data(), out_numel, false);
      return o;
    }, "sum_to");
  }
  Broadcast p = make_broadcast({7, 33}, {0, 1}, {0, 0});
  Vec out(7);
  const Vec x(7 * 33, 1.f);
  CHECK_THROWS_AS(be().sum_to(p, x.data(), out.data(), 7, false), Error);  // out has 33 elements, not 7
}

TEST_CASE("copy_strided: permute, and slice with accumulate") {
  // (2, 3, 4, 5) -> (2, 4, 3, 5): swap the middle dims, as for attention heads
  const int64_t src_shape[4] = {2, 3, 4, 5};
  const Vec src = random_vec(120, 31);
  const int64_t shape[4] = {2, 4, 3, 5};
  const int64_t src_strides[4] = {60, 5, 20, 1};  // strides of src, permuted
  const int64_t dst_strides[4] = {60, 15, 5, 1};
  Vec dst(120, -1.f);
  be().copy_strided(4, shape, src.data(), src_strides, dst.data(), dst_strides, false);
  std::vector<double> want(120);
  for (int64_t a = 0; a < src_shape[0]; ++a)
    for (int64_t h = 0; h < src_shape[1]; ++h)
      for (int64_t t = 0; t < src_shape[2]; ++t)
        for (int64_t d = 0; d < src_shape[3]; ++d) want[a * 60 + t * 15 + h * 5 + d] = src[a * 60 + h * 20 + t * 5 + d];
  check_close(dst, want, 0, "copy_strided permute");

  // a full 2-d transpose (the innermost dim strided in src)
  const int64_t tshape[2] = {130, 33}, tsrc[2] = {1, 130}, tdst[2] = {33, 1};
  const Vec m = random_vec(130 * 33, 32);
  Vec mt(130 * 33);
  be().copy_strided(2, tshape, m.data(), tsrc, mt.data(), tdst, false);
  std::vector<double> want_t(mt.size());
  for (int64_t i = 0; i < 130; ++i)
    for (int64_t j = 0; j < 33; ++j) want_t[i * 33 + j] = m[j * 130 + i];
  check_close(mt, want_t, 0, "copy_strided transpose");

  // src (7, 33) columns [5, 16) added into dst (7, 40) columns [20, 31)
  const Vec s2 = random_vec(7 * 33, 33);
  Vec d2 = random_vec(7 * 40, 34);
  const Vec d20 = d2;
  const int64_t sl_shape[2] = {7, 11}, sl_src[2] = {33, 1}, sl_dst[2] = {40, 1};
  be().copy_strided(2, sl_shape, s2.data() + 5, sl_src, d2.data() + 20, sl_dst, true);
  std::vector<double> want2(d20.begin(), d20.end());
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 11; ++j) want2[i * 40 + 20 + j] += s2[i * 33 + 5 + j];
  check_close(d2, want2, 1e-6, "copy_strided slice accumulate");
}

TEST_CASE("sum_squares, fill, fill_i32, copies") {
  const Vec x = random_vec(1000003, 41);
  double want = 0;
  for (float v : x) want += static_cast<double>(v) * v;
  CHECK(be().sum_squares(x.data(), static_cast<int64_t>(x.size())) == doctest::Approx(want).epsilon(1e-12));
  CHECK(be().sum_squares(x.data(), 0) == 0.0);
  Vec f(100003);
  be().fill(f.data(), static_cast<int64_t>(f.size()), 2.5f);
  CHECK(std::all_of(f.begin(), f.end(), [](float v) { return v == 2.5f; }));
  std::vector<int32_t> fi(77);
  be().fill_i32(fi.data(), 77, -3);
  CHECK(std::all_of(fi.begin(), fi.end(), [](int32_t v) { return v == -3; }));
  Vec g(f.size());
  be().copy(g.data(), x.data(), g.size() * sizeof(float));
  CHECK(std::equal(g.begin(), g.end(), x.begin()));
}

// ---------------------------------------------------------------- row ops

TEST_CASE("softmax with mask and scale, its backward, log_softmax") {
  const int64_t B = 2, H = 3, T = 5, n = 7, rows = B * H * T;
  const float scale = 0.37f;
  const Vec x = random_vec(rows * n, 51, -3.f, 3.f);
  Vec mask(B * n, 0.f);
  for (int64_t j = 4; j < n; ++j) mask[j] = -1e9f;  // batch 0: keys 4.. masked
  for (int64_t j = 0; j < n; ++j) mask[n + j] = -1e9f;  // batch 1: everything masked
  Vec y(rows * n);
  be().softmax(x.data(), mask.data(), y.data(), rows, n, scale, H * T);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (H * T);
    if (b == 1) {  // fully masked: finite and a distribution
      double s = 0;
      for (int64_t j = 0; j < n; ++j) {
        CHECK(std::isfinite(y[r * n + j]));
        s += y[r * n + j];
      }
      CHECK(s == doctest::Approx(1.0).epsilon(1e-5));
      continue;
    }
    double mx = -1e300, s = 0;
    std::vector<double> v(n);
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, v[j] = scale * x[r * n + j] + mask[b * n + j]);
    for (int64_t j = 0; j < n; ++j) s += std::exp(v[j] - mx);
    for (int64_t j = 0; j < n; ++j) CHECK(y[r * n + j] == doctest::Approx(std::exp(v[j] - mx) / s).epsilon(1e-5));
    CHECK(y[r * n + 5] == 0.f);
  }

  // backward against the closed form
  const Vec gy = random_vec(rows * n, 52);
  Vec gx = random_vec(rows * n, 53);
  const Vec gx0 = gx;
  be().softmax_backward(y.data(), gy.data(), gx.data(), rows, n, scale, true);
  std::vector<double> want(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(gy[r * n + j]) * y[r * n + j];
    for (int64_t j = 0; j < n; ++j)
      want[r * n + j] = gx0[r * n + j] + scale * y[r * n + j] * (gy[r * n + j] - dot);
  }
  check_close(gx, want, 1e-5, "softmax_backward");

  // backward against finite differences of the forward (no mask), in the loss sum(gy * y)
  {
    const int64_t m = 6;
    Vec xs = random_vec(m, 54), ys(m), g(m);
    const Vec gys = random_vec(m, 55);
    be().softmax(xs.data(), nullptr, ys.data(), 1, m, scale, 1);
    be().softmax_backward(ys.data(), gys.data(), g.data(), 1, m, scale, false);
    const auto loss = [&](const Vec& in) {
      double mx = -1e300, s = 0, l = 0;
      for (float v : in) mx = std::max(mx, scale * static_cast<double>(v));
      for (float v : in) s += std::exp(scale * static_cast<double>(v) - mx);
      for (int64_t j = 0; j < m; ++j) l += gys[j] * std::exp(scale * static_cast<double>(in[j]) - mx) / s;
      return l;
    };
    for (int64_t j = 0; j < m; ++j) {
      Vec p = xs, q = xs;
      p[j] += 1e-2f;
      q[j] -= 1e-2f;
      const double fd = (loss(p) - loss(q)) / (static_cast<double>(p[j]) - q[j]);
      CHECK(g[j] == doctest::Approx(fd).epsilon(1e-3));
    }
  }

  // log_softmax with the same mask convention, and its backward
  Vec lp(rows * n);
  const Vec lmask = random_vec(B * n, 56, -2.f, 0.f);
  be().log_softmax(x.data(), lmask.data(), lp.data(), rows, n, H * T);
  std::vector<double> want_lp(rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (H * T);
    double mx = -1e300, s = 0;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(x[r * n + j]) + lmask[b * n + j]);
    for (int64_t j = 0; j < n; ++j) s += std::exp(static_cast<double>(x[r * n + j]) + lmask[b * n + j] - mx);
    for (int64_t j = 0; j < n; ++j)
      want_lp[r * n + j] = static_cast<double>(x[r * n + j]) + lmask[b * n + j] - mx - std::log(s);
  }
  check_close(lp, want_lp, 1e-5, "log_softmax");
  be().log_softmax_backward(lp.data(), gy.data(), gx.data(), rows, n, false);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += gy[r * n + j];
    for (int64_t j = 0; j < n; ++j) want[r * n + j] = gy[r * n + j] - std::exp(static_cast<double>(lp[r * n + j])) * s;
  }
  check_close(gx, want, 1e-5, "log_softmax_backward");

  // many rows: the parallel path gives the same numbers as the serial one
  const Vec big = random_vec(4096 * 130, 57);
  check_thread_count_independent([&] {
    Vec o(big.size());
    be().softmax(big.data(), nullptr, o.data(), 4096, 130, 1.f, 1);
    return o;
  }, "softmax");
}

TEST_CASE("exp_nonpositive: the softmax rows' exp on every backend, within 3e-7 of exp down to -87, 0 below") {
  double worst = 0;
  for (float y = 0.f; y >= -87.f; y = y * 1.0001f - 1e-6f) {
    const double want = std::exp(static_cast<double>(y));
    worst = std::max(worst, std::abs(math::exp_nonpositive(y) - want) / want);
  }
  CHECK(worst < 3e-7);
  CHECK(math::exp_nonpositive(0.f) == 1.f);
  CHECK(math::exp_or_zero(-87.5f) == 0.f);
  CHECK(math::exp_or_zero(-1e9f) == 0.f);
  CHECK(std::isnan(math::exp_or_zero(NAN)));  // a NaN score stays visible
}

TEST_CASE("softmax_dropout: attention's weights, their dropout and rounding in one pass, and the backward pass") {
  const float p = 0.25f, keep = 1.f / (1.f - p), scale = 0.41f;
  const uint64_t seed = 9, edge = (uint64_t{1} << 32) - 300;  // counters that cross a multiple of 2^32 mid-row
  for (const int64_t n : {1, 7, 64, 130}) {
    for (const uint64_t offset : {uint64_t{1000}, edge}) {
      CAPTURE(n);
      CAPTURE(offset);
      const int64_t B = 2, rpm = 5, rows = B * rpm;
      const Vec x = random_vec(rows * n, 61, -4.f, 4.f);
      Vec mask(B * n, 0.f);
      for (int64_t j = n / 2 + 1; j < n; ++j) mask[j] = -1e9f;  // batch 0: the last keys masked
      Vec y(rows * n), out(rows * n), again(rows * n), ref(rows * n);
      std::vector<uint16_t> out16(rows * n), alone16(rows * n);
      be().softmax_dropout(x.data(), mask.data(), y.data(), out.data(), false, rows, n, scale, rpm, p, seed, offset);
      // the probabilities: softmax(), and the draws: dropout()'s, element r * n + j from counter offset + r * n + j
      be().softmax(x.data(), mask.data(), ref.data(), rows, n, scale, rpm);
      CHECK(y == ref);
      be().dropout(y.data(), again.data(), rows * n, p, seed, offset);
      CHECK(out == again);
      // without y (nothing recorded) and in bf16: the same values, rounded once
      be().softmax_dropout(x.data(), mask.data(), nullptr, out16.data(), true, rows, n, scale, rpm, p, seed, offset);
      CHECK(out16 == rounded(out));
      be().softmax_dropout(x.data(), mask.data(), nullptr, alone16.data(), true, rows, n, scale, rpm, 0.f, 0, 0);
      CHECK(alone16 == rounded(ref));  // no dropout: the probabilities themselves
      // the row routine as the GPU runs it, on one lane: factors drawn one at a time, exps computed twice, the same
      // numbers (its lanes add the sums in another order)
      const math::DropoutFactors drop(p, seed, offset);
      Vec ry(rows * n), rout(rows * n);
      std::vector<uint16_t> rout16(rows * n);
      for (int64_t r = 0; r < rows; ++r) {
        const math::DrawnDropout drawn{drop, static_cast<uint64_t>(r * n)};
        math::softmax_dropout_row(math::SerialLanes{}, x.data() + r * n, mask.data() + r / rpm * n,
                                  ry.data() + r * n, rout.data() + r * n, nullptr, n, scale, drawn, nullptr);
        math::softmax_dropout_row(math::SerialLanes{}, x.data() + r * n, mask.data() + r / rpm * n, nullptr,
                                  nullptr, rout16.data() + r * n, n, scale, drawn, nullptr);
      }
      CHECK(ry == y);
      CHECK(rout == out);
      CHECK(rout16 == out16);
      int64_t dropped = 0;
      for (int64_t i = 0; i < rows * n; ++i) {
        REQUIRE((out[i] == 0.f) == (rout[i] == 0.f || y[i] == 0.f));
        dropped += out[i] == 0.f && y[i] != 0.f;
      }
      if (n == 130) CHECK(dropped > 0);

      // backward: d = gout * keep where the forward kept the weight, gx (+)= scale * y * (d - <d, y>), in double
      const Vec gout = random_vec(rows * n, 62);
      const Vec gx0 = random_vec(rows * n, 63);
      std::vector<double> want(rows * n), want_acc(rows * n);
      for (int64_t r = 0; r < rows; ++r) {
        double dot = 0;
        for (int64_t j = 0; j < n; ++j)
          dot += (out[r * n + j] != 0.f ? static_cast<double>(gout[r * n + j]) * keep : 0.0) * y[r * n + j];
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = r * n + j;
          const double d = out[i] != 0.f ? static_cast<double>(gout[i]) * keep : 0.0;
          want[i] = scale * y[i] * (d - dot);
          want_acc[i] = gx0[i] + want[i];
        }
      }
      Vec gx(rows * n), gx16(rows * n), gxr(rows * n), gx_acc = gx0;
      be().softmax_dropout_backward(y.data(), out.data(), false, gout.data(), gx.data(), rows, n, scale, p, false);
      check_close(gx, want, 1e-5, "softmax_dropout_backward");
      be().softmax_dropout_backward(y.data(), out16.data(), true, gout.data(), gx16.data(), rows, n, scale, p, false);
      CHECK(gx16 == gx);  // the bf16 copy marks the same elements
      be().softmax_dropout_backward(y.data(), out.data(), false, gout.data(), gx_acc.data(), rows, n, scale, p, true);
      check_close(gx_acc, want_acc, 1e-5, "softmax_dropout_backward, accumulating");
      for (int64_t r = 0; r < rows; ++r)  // as the GPU runs it: the gradients computed in each pass
        math::softmax_dropout_backward_row(math::SerialLanes{}, y.data() + r * n, out.data() + r * n, nullptr,
                                           gout.data() + r * n, gxr.data() + r * n, n, scale, keep, false, nullptr);
      check_close(gxr, want, 1e-5, "softmax_dropout_backward_row");
      for (int64_t r = 0; r < rows; ++r)
        math::softmax_dropout_backward_row(math::SerialLanes{}, y.data() + r * n, nullptr, out16.data() + r * n,
                                           gout.data() + r * n, gxr.data() + r * n, n, scale, keep, false, nullptr);
      check_close(gxr, want, 1e-5, "softmax_dropout_backward_row, bf16 output");
      // no dropout: softmax_backward's gradient
      Vec plain(rows * n), d0(rows * n);
      be().softmax_backward(y.data(), gout.data(), plain.data(), rows, n, scale, false);
      be().softmax_dropout_backward(y.data(), nullptr, false, gout.data(), d0.data(), rows, n, scale, 0.f, false);
      check_close(d0, std::vector<double>(plain.begin(), plain.end()), 1e-6, "softmax_dropout_backward, p = 0");
    }
  }
  const Vec big = random_vec(2048 * 64, 64, -5.f, 5.f);
  check_thread_count_independent([&] {
    Vec o(big.size()), g(big.size());
    be().softmax_dropout(big.data(), nullptr, nullptr, o.data(), false, 2048, 64, 0.2f, 1, 0.1f, 3, 77);
    be().softmax_dropout_backward(o.data(), o.data(), false, big.data(), g.data(), 2048, 64, 0.2f, 0.1f, false);
    o.insert(o.end(), g.begin(), g.end());
    return o;
  }, "softmax_dropout");
  Vec o(7);
  CHECK_THROWS_AS(be().softmax_dropout(big.data(), nullptr, nullptr, o.data(), false, 1, 7, 1.f, 1, 1.f, 0, 0), Error);
}

TEST_CASE("layer_norm forward and backward") {
  for (int64_t n : {1, 7, 130}) {
    const int64_t rows = 33;
    const float eps = 1e-5f;
    CAPTURE(n);
    const Vec x = random_vec(rows * n, 61, -2.f, 3.f), gamma = random_vec(n, 62), beta = random_vec(n, 63);
    Vec y(rows * n), mean(rows), rstd(rows);
    be().layer_norm(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, n, eps);
    std::vector<double> want_y(rows * n), want_mean(rows), want_rstd(rows);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t j = 0; j < n; ++j) m += x[r * n + j];
      m /= n;
      for (int64_t j = 0; j < n; ++j) v += (x[r * n + j] - m) * (x[r * n + j] - m);
      v /= n;
      want_mean[r] = m;
      want_rstd[r] = 1 / std::sqrt(v + eps);
      for (int64_t j = 0; j < n; ++j) want_y[r * n + j] = (x[r * n + j] - m) * want_rstd[r] * gamma[j] + beta[j];
    }
    check_close(y, want_y, 1e-4, "layer_norm y");
    check_close(mean, want_mean, 1e-5, "layer_norm mean");
    check_close(rstd, want_rstd, 1e-4, "layer_norm rstd");

    const Vec gy = random_vec(rows * n, 64);
    Vec gx = random_vec(rows * n, 65), ggamma = random_vec(n, 66), gbeta = random_vec(n, 67);
    const Vec gx0 = gx, gg0 = ggamma, gb0 = gbeta;
    be().layer_norm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), gy.data(), gx.data(), ggamma.data(),
                             gbeta.data(), rows, n, true);
    std::vector<double> want_gx(rows * n), want_gg(gg0.begin(), gg0.end()), want_gb(gb0.begin(), gb0.end());
    for (int64_t r = 0; r < rows; ++r) {
      double mg = 0, mgx = 0;
      std::vector<double> xhat(n);
      for (int64_t j = 0; j < n; ++j) {
        xhat[j] = (x[r * n + j] - want_mean[r]) * want_rstd[r];
        mg += gy[r * n + j] * gamma[j];
        mgx += gy[r * n + j] * gamma[j] * xhat[j];
        want_gg[j] += gy[r * n + j] * xhat[j];
        want_gb[j] += gy[r * n + j];
      }
      mg /= n;
      mgx /= n;
      for (int64_t j = 0; j < n; ++j)
        want_gx[r * n + j] = gx0[r * n + j] + want_rstd[r] * (gy[r * n + j] * gamma[j] - mg - xhat[j] * mgx);
    }
    check_close(gx, want_gx, 1e-4, "layer_norm gx");
    check_close(ggamma, want_gg, 1e-4, "layer_norm ggamma");
    check_close(gbeta, want_gb, 1e-5, "layer_norm gbeta");
  }

  // gx against finite differences of a double forward, in the loss sum(gy * y)
  const int64_t n = 7;
  const Vec x = random_vec(n, 68), gamma = random_vec(n, 69), beta = random_vec(n, 70), gy = random_vec(n, 71);
  Vec y(n), gx(n), gg(n, 0.f), gb(n, 0.f);
  float mean, rstd;
  be().layer_norm(x.data(), gamma.data(), beta.data(), y.data(), &mean, &rstd, 1, n, 1e-5f);
  be().layer_norm_backward(x.data(), gamma.data(), &mean, &rstd, gy.data(), gx.data(), gg.data(), gb.data(), 1, n,
                           false);
  const auto loss = [&](std::vector<double> v) {
    double m = 0, var = 0, l = 0;
    for (double e : v) m += e;
    m /= n;
    for (double e : v) var += (e - m) * (e - m);
    const double rs = 1 / std::sqrt(var / n + 1e-5);
    for (int64_t j = 0; j < n; ++j) l += gy[j] * ((v[j] - m) * rs * gamma[j] + beta[j]);
    return l;
  };
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> p(x.begin(), x.end()), q(x.begin(), x.end());
    p[j] += 1e-6;
    q[j] -= 1e-6;
    CHECK(gx[j] == doctest::Approx((loss(p) - loss(q)) / 2e-6).epsilon(1e-3));
  }
}

TEST_CASE("cross_entropy with ignore_index and label smoothing") {
  const int64_t rows = 9, C = 7;
  const int32_t ignore = -100;
  const float s = 0.1f, gscale = 0.25f;
  const Vec logits = random_vec(rows * C, 81, -4.f, 4.f);
  const std::vector<int32_t> labels = {0, 6, ignore, 3, 3, ignore, 1, 5, 2};
  Vec logp(rows * C), loss(rows, 99.f);
  const int64_t counted = be().cross_entropy(logits.data(), labels.data(), logp.data(), loss.data(), rows, C, ignore, s);
  CHECK(counted == 7);
  std::vector<double> want_loss(rows), want_g(rows * C);
  Vec g = random_vec(rows * C, 82);
  const Vec g0 = g;
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, se = 0;
    for (int64_t j = 0; j < C; ++j) mx = std::max(mx, static_cast<double>(logits[r * C + j]));
    for (int64_t j = 0; j < C; ++j) se += std::exp(logits[r * C + j] - mx);
    const double lse = mx + std::log(se);
    double nll = 0, sum_lp = 0;
    for (int64_t j = 0; j < C; ++j) {
      const double lp = logits[r * C + j] - lse;
      sum_lp += lp;
      if (j == labels[r]) nll = -lp;
      const double target = labels[r] == ignore ? 0 : s / C + (j == labels[r] ? 1 - s : 0);
      want_g[r * C + j] = g0[r * C + j] + (labels[r] == ignore ? 0 : gscale * (std::exp(lp) - target));
    }
    want_loss[r] = labels[r] == ignore ? 0 : (1 - s) * nll - s / C * sum_lp;
  }
  check_close(loss, want_loss, 1e-5, "cross_entropy loss");
  be().cross_entropy_backward(logp.data(), labels.data(), g.data(), rows, C, ignore, s, gscale, true);
  check_close(g, want_g, 1e-5, "cross_entropy_backward");

  std::vector<int32_t> bad = labels;
  bad[4] = 7;  // == C
  CHECK_THROWS_WITH_AS(be().cross_entropy(logits.data(), bad.data(), logp.data(), loss.data(), rows, C, ignore, s),
                       doctest::Contains("label 7 of row 4 is outside [0, 7)"), Error);
  CHECK_THROWS_WITH_AS(be().cross_entropy_backward(logp.data(), bad.data(), g.data(), rows, C, ignore, s, gscale, true),
                       doctest::Contains("cross_entropy_backward: label 7 of row 4"), Error);
}

// ---------------------------------------------------------------- embeddings, optimizer, random

TEST_CASE("gather_rows and scatter_add_rows with repeated ids") {
  for (int64_t dim : {1, 33, 1000}) {
    CAPTURE(dim);
    const int64_t vocab = 10, n_ids = 130;
    const Vec table = random_vec(vocab * dim, 91);
    std::vector<int32_t> ids(n_ids);
    for (int64_t i = 0; i < n_ids; ++i) ids[i] = static_cast<int32_t>((i * 7 + i / 3) % vocab);
    Vec out(n_ids * dim);
    be().gather_rows(table.data(), ids.data(), out.data(), n_ids, dim);
    std::vector<double> want(out.size());
    for (int64_t i = 0; i < n_ids; ++i)
      for (int64_t c = 0; c < dim; ++c) want[i * dim + c] = table[ids[i] * dim + c];
    check_close(out, want, 0, "gather_rows");

    const Vec g = random_vec(n_ids * dim, 92);
    Vec gt = random_vec(vocab * dim, 93);
    std::vector<double> want_gt(gt.begin(), gt.end());
    for (int64_t i = 0; i < n_ids; ++i)
      for (int64_t c = 0; c < dim; ++c) want_gt[ids[i] * dim + c] += g[i * dim + c];
    be().scatter_add_rows(g.data(), ids.data(), gt.data(), n_ids, dim);
    check_close(gt, want_gt, 1e-5, "scatter_add_rows");
    check_thread_count_independent([&] {
      Vec t(vocab * dim, 0.f);
      be().scatter_add_rows(g.data(), ids.data(), t.data(), n_ids, dim);
      return t;
    }, "scatter_add_rows");
  }
}

// The checks of kernels/backend_checks.h, which the CUDA backend makes too (tests/test_cuda_backend.cpp)
TEST_CASE("gather_rows and scatter_add_rows name the first negative id; layer_norm refuses rows of length 0") {
  const Vec table = random_vec(40, 94);
  Vec out(40), gt(40);
  const std::vector<int32_t> ids = {1, 3, -2, 0, -5};
  CHECK_THROWS_WITH_AS(be().gather_rows(table.data(), ids.data(), out.data(), 5, 8),
                       doctest::Contains("gather_rows: negative id -2 at position 2"), Error);
  CHECK_THROWS_WITH_AS(be().scatter_add_rows(table.data(), ids.data(), gt.data(), 5, 8),
                       doctest::Contains("scatter_add_rows: negative id -2 at position 2"), Error);
  float mean = 0, rstd = 0;
  CHECK_THROWS_WITH_AS(be().layer_norm(table.data(), table.data(), table.data(), out.data(), &mean, &rstd, 1, 0, 1e-5f),
                       doctest::Contains("layer_norm: 1 rows of length 0"), Error);
  be().layer_norm(table.data(), table.data(), table.data(), out.data(), &mean, &rstd, 0, 0, 1e-5f);  // nothing to do
}

TEST_CASE("adamw over 3 steps matches a scalar reference, with a per-slot learning-rate scale") {
  const int64_t n1 = 7, n2 = 130;
  Vec p1 = random_vec(n1, 101), p2 = random_vec(n2, 102);
  Vec m1(n1, 0.f), v1(n1, 0.f), m2(n2, 0.f), v2(n2, 0.f);
  std::vector<double> rp1(p1.begin(), p1.end()), rp2(p2.begin(), p2.end());
  std::vector<double> rm1(n1), rv1(n1), rm2(n2), rv2(n2);
  AdamWHyper h;
  h.lr = 0.01f;
  h.beta1 = 0.8f;
  h.beta2 = 0.95f;
  h.eps = 1e-6f;
  const float wd1 = 0.1f, wd2 = 0.f;
  const float scale2 = 7.f;  // slot 2 learns at 7 lr
  const auto ref_step = [&](std::vector<double>& p, const Vec& g, std::vector<double>& m, std::vector<double>& v,
                            double wd, int64_t t, double lr) {
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * wd;
      m[i] = h.beta1 * m[i] + (1 - double{h.beta1}) * g[i];
      v[i] = h.beta2 * v[i] + (1 - double{h.beta2}) * g[i] * g[i];
      const double mhat = m[i] / (1 - std::pow(double{h.beta1}, t)), vhat = v[i] / (1 - std::pow(double{h.beta2}, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + h.eps);
    }
  };
  for (int64_t t = 1; t <= 3; ++t) {
    const Vec g1 = random_vec(n1, 110 + static_cast<uint32_t>(t)), g2 = random_vec(n2, 120 + static_cast<uint32_t>(t));
    const AdamWSlot slots[2] = {{p1.data(), g1.data(), m1.data(), v1.data(), n1, wd1},
                                {p2.data(), g2.data(), m2.data(), v2.data(), n2, wd2, scale2}};
    h.step = t;
    be().adamw(slots, 2, h);
    ref_step(rp1, g1, rm1, rv1, wd1, t, h.lr);
    ref_step(rp2, g2, rm2, rv2, wd2, t, double{h.lr} * scale2);
  }
  check_close(p1, rp1, 1e-5, "adamw slot 1");
  check_close(p2, rp2, 1e-5, "adamw slot 2");
  check_close(m2, rm2, 1e-6, "adamw m");
  check_close(v2, rv2, 1e-6, "adamw v");
}

TEST_CASE("adamw: one pass over all slots, split across slot boundaries, rounds the slots that ask to bf16") {
  // sizes that put thread boundaries inside slots and slots inside one thread's range (ParallelAlways)
  const int64_t sizes[] = {5, 0, 1, 4099, 3};
  // `separately`: one call a slot, which the one pass must match
  const auto run = [&](bool copies, bool separately = false) {
    std::vector<Vec> p, g, m, v;
    std::vector<std::vector<uint16_t>> p16;
    std::vector<AdamWSlot> slots;
    for (int k = 0; k < 5; ++k) {
      const auto n = static_cast<size_t>(sizes[k]);
      p.push_back(random_vec(n, 200 + k));
      g.push_back(random_vec(n, 210 + k));
      m.push_back(Vec(n, 0.1f));
      v.push_back(Vec(n, 0.2f));
      p16.emplace_back(n, uint16_t{0xDEAD});
    }
    for (int k = 0; k < 5; ++k) {
      slots.push_back({p[k].data(), g[k].data(), m[k].data(), v[k].data(), sizes[k], 0.01f * k, 1.f + k});
      if (copies && k != 3) slots.back().param_bf16 = p16[k].data();  // slot 3 keeps no copy
    }
    AdamWHyper h;
    h.lr = 0.05f;
    h.step = 4;
    if (separately) {
      for (const AdamWSlot& slot : slots) be().adamw(&slot, 1, h);
    } else {
      be().adamw(slots.data(), 5, h);
    }
    for (int k = 0; k < 5; ++k) {
      CAPTURE(k);
      for (size_t i = 0; i < p16[k].size(); ++i) {
        if (!copies || k == 3) {
          REQUIRE(p16[k][i] == 0xDEAD);
        } else if (p16[k][i] != math::to_bf16(p[k][i])) {
          FAIL("element " << i << ": the copy is not the rounded updated weight");
        }
      }
    }
    Vec all;
    for (int k = 0; k < 5; ++k)
      for (const Vec* x : {&p[k], &m[k], &v[k]}) all.insert(all.end(), x->begin(), x->end());
    return all;
  };
  const Vec plain = run(false);
  CHECK_MESSAGE(run(true) == plain, "rounding changed the update");
  check_thread_count_independent([&] { return run(true); }, "adamw");
  CHECK(run(false, true) == plain);
}

TEST_CASE("dropout and uniform: statistics, reproducible, thread-count independent") {
  const int64_t n = 200003;
  const float p = 0.1f;
  Vec x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 1.f + static_cast<float>(i % 7);
  auto drop = [&](int64_t count, uint64_t seed, uint64_t offset) {
    Vec y(count);
    be().dropout(x.data(), y.data(), count, p, seed, offset);
    return y;
  };
  const Vec y = drop(n, 42, 1000);
  int64_t zeros = 0, runs_of_8 = 0, streak = 0;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = y[i];
    CHECK((v == 0.f || v == doctest::Approx(x[i] / (1.0 - p))));
    zeros += v == 0.f;
    sum += v / x[i];
    streak = v == 0.f ? streak + 1 : 0;
    runs_of_8 += streak == 8;
  }
  CHECK(static_cast<double>(zeros) / n == doctest::Approx(p).epsilon(0.05));
  CHECK(sum / n == doctest::Approx(1.0).epsilon(0.01));
  CHECK(runs_of_8 < 3);  // p^8 n = 0.02: neighbouring counters are not correlated
  CHECK(drop(n, 42, 1000) == y);
  const Vec shifted = drop(n - 500, 42, 1500);  // element i's mask depends only on offset + i
  for (int64_t i = 0; i < n - 500; ++i) REQUIRE((shifted[i] == 0.f) == (y[i + 500] == 0.f));
  CHECK(drop(n, 43, 1000) != y);
  // counters that cross a multiple of 2^32 (the high word keys the hash) keep the statistics and the shift property
  const uint64_t edge = (uint64_t{1} << 32) - 1000;
  const Vec high = drop(n, 42, edge), high_shifted = drop(n - 2000, 42, edge + 2000);
  CHECK(std::count(high.begin(), high.end(), 0.f) / static_cast<double>(n) == doctest::Approx(p).epsilon(0.05));
  for (int64_t i = 0; i < n - 2000; ++i) REQUIRE((high_shifted[i] == 0.f) == (high[i + 2000] == 0.f));
  check_thread_count_independent([&] { return drop(n, 7, 0); }, "dropout");
  Vec in_place = x;  // the backward pass may write over its input
  be().dropout(in_place.data(), in_place.data(), n, p, 42, 1000);
  CHECK(in_place == y);
  CHECK_THROWS_AS(be().dropout(x.data(), in_place.data(), n, 1.5f, 1, 0), Error);

  Vec u(n);
  be().uniform(u.data(), n, 5, 0);
  CHECK(std::all_of(u.begin(), u.end(), [](float v) { return v > 0.f && v < 1.f; }));
  CHECK(std::accumulate(u.begin(), u.end(), 0.0) / n == doctest::Approx(0.5).epsilon(0.01));
  check_thread_count_independent([&] {
    Vec m(n);
    be().uniform(m.data(), n, 5, 0);
    return m;
  }, "uniform");
}

// ---------------------------------------------------------------- allocator

namespace {
// A source of blocks with a budget, standing in for cudaMalloc: the CUDA allocator's paths (checked frees, a retry
// after handing the cache back, out of memory) run here without a GPU.
struct BudgetBlocks {
  static constexpr size_t kAlignment = 128, kMinBlock = 512;
  static constexpr bool kChecksFrees = true, kFreesCachedOnDestruction = false;
  static inline size_t budget = 0, used = 0, frees = 0;
  static inline std::map<void*, size_t> sizes;
  static void* allocate(size_t bytes) {
    if (used + bytes > budget) return nullptr;
    void* p = std::malloc(bytes);
    used += bytes, sizes[p] = bytes;
    return p;
  }
  static void free(void* p) {
    used -= sizes.at(p), sizes.erase(p), ++frees;
    std::free(p);
  }
  [[noreturn]] static void out_of_memory(size_t bytes, size_t) {
    throw Error("out of memory: " + std::to_string(bytes));
  }
};
}  // namespace

TEST_CASE("size-class cache: the CUDA allocator's classes, a retry after releasing the cache, checked frees") {
  using Cache = SizeClassCache<BudgetBlocks>;
  CHECK(Cache::size_class(1) == 512);
  CHECK(Cache::size_class(512) == 512);
  CHECK(Cache::size_class(513) == 640);
  CHECK(Cache::size_class(1025) == 1280);
  BudgetBlocks::budget = 2048;
  Cache c;
  void* a = c.allocate(1000);  // class 1024
  c.deallocate(a, 1000);
  CHECK(c.bytes_cached() == 1024);
  void* b = c.allocate(1500);  // class 1536: 1024 + 1536 > 2048 until the cached block goes back
  CHECK(b != nullptr);
  CHECK(BudgetBlocks::frees == 1);
  CHECK(c.bytes_cached() == 0);
  CHECK(c.system_allocations() == 2);
  CHECK_THROWS_WITH_AS(c.allocate(1000), doctest::Contains("out of memory"), Error);
  CHECK_THROWS_WITH_AS(c.deallocate(b, 1499), doctest::Contains("did not hand out"), Error);
  int other = 0;
  CHECK_THROWS_AS(c.deallocate(&other, 4), Error);
  c.deallocate(b, 1500);
  CHECK(c.bytes_in_use() == 0);
  CHECK(c.peak_bytes_in_use() == 1536);
  c.release_cached();
  CHECK(BudgetBlocks::used == 0);
}

TEST_CASE("allocator: a repeated pattern of allocations reaches the system once") {
  const size_t sizes[] = {1, 64, 100, 1000, 4096, 5000, 1 << 20, 3 * (1 << 20) + 7};
  const auto step = [&] {
    std::vector<void*> blocks;
    for (size_t s : sizes) {
      void* p = be().alloc(s);
      CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
      std::memset(p, 1, s);
      blocks.push_back(p);
    }
    for (size_t i = 0; i < blocks.size(); ++i) be().dealloc(blocks[i], sizes[i]);
  };
  const size_t in_use = be().bytes_in_use();
  step();
  const size_t after_first = be().system_allocations();
  CHECK(be().bytes_in_use() == in_use);
  CHECK(be().peak_bytes_in_use() >= in_use + (1 << 20) + 3 * (1 << 20));
  for (int i = 0; i < 3; ++i) step();
  CHECK(be().system_allocations() == after_first);
  CHECK(be().alloc(0) == nullptr);

  for (size_t s = 1; s < 100000; s = s * 3 / 2 + 1) {
    const size_t c = CpuAllocator::size_class(s);
    CHECK(c >= s);
    CHECK(c % 64 == 0);
    CHECK(c <= std::max<size_t>(256, s + s / 4 + 64));
  }
  CpuAllocator a;
  void* p = a.allocate(1000);
  a.deallocate(p, 1000);
  CHECK(a.bytes_cached() == CpuAllocator::size_class(1000));
  CHECK(a.allocate(990) == p);  // same size class: the cached block
  CHECK(a.system_allocations() == 1);
  a.deallocate(p, 990);
  a.release_cached();
  CHECK(a.bytes_cached() == 0);
}
