// The CUDA backend against the CPU backend: every Backend method runs on the same random inputs on both, and the
// results must agree to a relative error below 1e-4, measured against max(|cpu|, 1% of the output's largest |cpu|)
// so that near-zero entries produced by cancelling sums are judged on the output's scale (the two backends add sums
// in different orders). Random numbers and dropout masks must be bit-identical.
//
// The device cases form test suite "gpu": without a CUDA device (or in a build without CUDA) tests/gpu_test_main.cpp
// filters them out, doctest counts them as skipped, and the executable exits 77 (meson: SKIP). The host-side pieces
// (size classes, strided-index collapsing, the no-device error) are tested everywhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/attention_tiles.h"
#include "kernels/cuda/strided_index.h"
#include "kernels/math/bf16.h"
#include "tests/gemm_case.h"
#include "tests/random_values.h"
#ifdef HR_WITH_CUDA
#include "kernels/cuda/caching_allocator.h"
#endif

using namespace hr;
using hr::testing::random_vec;
using hr::testing::GemmCase;
using hr::testing::gemm_layout;
using hr::testing::GemmLayout;

namespace {

constexpr double kRtol = 1e-4;

using Vec = std::vector<float>;
using Ids = std::vector<int32_t>;

// A buffer on one backend, filled from a host vector.
template <typename T>
class DeviceVec {
 public:
  DeviceVec(Backend& b, const std::vector<T>& host)
      : b_(b), n_(host.size()), p_(static_cast<T*>(b.alloc(n_ * sizeof(T)))) {
    b_.from_host(p_, host.data(), n_ * sizeof(T));
  }
  ~DeviceVec() { b_.dealloc(p_, n_ * sizeof(T)); }
  DeviceVec(const DeviceVec&) = delete;
  DeviceVec& operator=(const DeviceVec&) = delete;
  T* get() const { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    b_.to_host(h.data(), p_, n_ * sizeof(T));
    return h;
  }

 private:
  Backend& b_;
  size_t n_;
  T* p_;
};

// The same host data on the CPU backend (.c) and the CUDA backend (.g).
template <typename T>
struct Both {
  DeviceVec<T> c, g;
  explicit Both(const std::vector<T>& h) : c(cpu_backend(), h), g(backend(Device::CUDA), h) {}
};
using BothF = Both<float>;
using BothI = Both<int32_t>;

// CUDA result `got` against CPU result `want` (see the top of the file for the measure)
void check_close(const Vec& want, const Vec& got, const std::string& what, double rtol = kRtol) {
  REQUIRE(want.size() == got.size());
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::abs(w)));
  double worst = 0.0;
  size_t worst_i = 0, nan_mismatches = 0, first_nan_mismatch = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) || std::isnan(got[i])) {  // NaN on one side only is a failure; on both, a match
      if (std::isnan(want[i]) != std::isnan(got[i]) && nan_mismatches++ == 0) first_nan_mismatch = i;
      continue;
    }
    const double err = std::abs(static_cast<double>(got[i]) - want[i]) /
                       std::max({static_cast<double>(std::abs(want[i])), 0.01 * scale, 1e-30});
    if (err > worst) {
      worst = err;
      worst_i = i;
    }
  }
  CHECK_MESSAGE(nan_mismatches == 0, what << ": " << nan_mismatches << " NaN mismatches, the first at element "
                                           << first_nan_mismatch << " (cpu " << want[first_nan_mismatch] << ", cuda "
                                           << got[first_nan_mismatch] << ")");
  CHECK_MESSAGE(worst < rtol, what << ": relative error " << worst << " at element " << worst_i << " (cpu "
                                   << want[worst_i] << ", cuda " << got[worst_i] << ")");
}

// The same on the entries where keep[i] holds: a masked log_softmax is about -1e9 at masked positions, which would
// set the scale of the measure and hide every error at the others.
void check_close_where(const Vec& want, const Vec& got, const std::vector<bool>& keep, const std::string& what) {
  REQUIRE(want.size() == got.size());
  REQUIRE(keep.size() == want.size());
  Vec w, g;
  for (size_t i = 0; i < want.size(); ++i)
    if (keep[i]) {
      w.push_back(want[i]);
      g.push_back(got[i]);
    }
  REQUIRE(!w.empty());
  check_close(w, g, what);
}

void check_close(const BothF& x, const std::string& what, double rtol = kRtol) {
  check_close(x.c.host(), x.g.host(), what, rtol);
}

Backend& cpu() { return cpu_backend(); }
Backend& gpu() { return backend(Device::CUDA); }

TEST_SUITE_BEGIN("gpu");

// ---------------------------------------------------------------- gemm

void run_gemm_case(const GemmCase& c) {
  CAPTURE(c.batch); CAPTURE(c.M); CAPTURE(c.N); CAPTURE(c.K); CAPTURE(c.transA); CAPTURE(c.transB);
  CAPTURE(c.pad); CAPTURE(c.bcastA); CAPTURE(c.bcastB); CAPTURE(c.alpha); CAPTURE(c.beta); CAPTURE(c.bias);
  CAPTURE(c.gelu);
  const GemmLayout l = gemm_layout(c);
  const GemmArgs& g = l.g;
  BothF A(random_vec(static_cast<size_t>(l.size_a), 1));
  BothF B(random_vec(static_cast<size_t>(l.size_b), 2));
  BothF C(random_vec(static_cast<size_t>(l.size_c), 3));
  BothF bias(random_vec(static_cast<size_t>(c.N), 4));
  // bf16 copies of A and B, rounded by each backend itself; the roundings must be bit-identical
  using Bits = std::vector<uint16_t>;
  Both<uint16_t> A16(Bits(A.c.host().size())), B16(Bits(B.c.host().size()));
  if (c.bf16) {
    for (int side = 0; side < 2; ++side) {
      Backend& be = side ? gpu() : cpu();
      be.to_bf16(side ? A.g.get() : A.c.get(), side ? A16.g.get() : A16.c.get(), static_cast<int64_t>(A16.c.host().size()));
      be.to_bf16(side ? B.g.get() : B.c.get(), side ? B16.g.get() : B16.c.get(), static_cast<int64_t>(B16.c.host().size()));
    }
    CHECK(A16.c.host() == A16.g.host());
    CHECK(B16.c.host() == B16.g.host());
  }
  for (int side = 0; side < 2; ++side) {
    GemmArgs s = g;
    s.A = side ? A.g.get() : A.c.get();
    s.B = side ? B.g.get() : B.c.get();
    if (c.bf16) {
      s.inputs = GemmInputs::BF16;
      s.A = side ? A16.g.get() : A16.c.get();
      s.B = side ? B16.g.get() : B16.c.get();
    }
    s.C = side ? C.g.get() : C.c.get();
    s.bias = c.bias ? (side ? bias.g.get() : bias.c.get()) : nullptr;
    (side ? gpu() : cpu()).gemm(s);
  }
  check_close(C, "gemm C");  // the padding and gaps too: they must be left alone
  if (!c.bf16 || c.alpha != 1.f || c.beta != 0.f) return;
  // the same product with a bf16 result (C16): each backend's is its f32 result rounded (within one bf16 step: the
  // GPU computes it in scratch of another layout) and the padding stays as it was
  const Vec c32 = C.g.host();
  Both<uint16_t> C16(std::vector<uint16_t>(c32.size(), uint16_t{0xBEEF}));
  GemmArgs s = g;
  s.inputs = GemmInputs::BF16, s.A = A16.g.get(), s.B = B16.g.get(), s.C16 = C16.g.get();
  s.bias = c.bias ? bias.g.get() : nullptr;
  gpu().gemm(s);
  const std::vector<uint16_t> got = C16.g.host();
  const std::vector<bool> inside = gemm_c_inside(c, l);
  for (size_t i = 0; i < got.size(); ++i) {
    const int diff = static_cast<int>(got[i]) - static_cast<int>(inside[i] ? math::to_bf16(c32[i]) : 0xBEEF);
    if (diff < -1 || diff > 1 || (!inside[i] && diff != 0)) {
      FAIL_CHECK("bf16 result element " << i << std::string(inside[i] ? "" : " (padding)") << " is " << got[i]
                                         << ", the f32 result rounds to " << math::to_bf16(c32[i]));
      break;
    }
  }
}

TEST_CASE("cuda gemm: every transpose combination, padded leading dims") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t pad : {0, 3}) run_gemm_case({1, 33, 47, 65, ta, tb, pad, false, false, 1.f, 0.f, false});
  run_gemm_case({1, 256, 384, 768, false, true, 0, false, false, 1.f, 0.f, true});  // a transformer-sized projection
}

TEST_CASE("cuda gemm: batches, broadcast operands, bias, alpha and beta") {
  run_gemm_case({3, 17, 29, 40, false, false, 2, false, false, 1.f, 0.f, false});
  run_gemm_case({4, 17, 29, 40, true, false, 0, true, false, 0.5f, 0.f, true});
  run_gemm_case({4, 17, 29, 40, false, true, 1, false, true, 1.f, 0.f, true});
  run_gemm_case({2, 9, 11, 13, true, true, 0, false, false, -0.75f, 0.5f, false});
  run_gemm_case({1, 9, 11, 13, false, false, 0, false, false, 2.f, 1.f, false});
}

TEST_CASE("cuda gemm: the GELU epilogue, f32 and bf16") {
  run_gemm_case({1, 256, 384, 768, false, true, 0, false, false, 1.f, 0.f, true, false, 1, true});  // linear + GELU
  run_gemm_case({2, 9, 11, 13, true, false, 1, false, false, 0.5f, 0.75f, false, false, 1, true});
  run_gemm_case({2, 7, 33, 7, false, true, 1, false, false, 1.f, 0.f, true, false, 3, true});  // outer batch
  run_gemm_case({1, 256, 384, 768, false, true, 0, false, false, 1.f, 0.f, true, true, 1, true});
}

TEST_CASE("cuda gemm: an outer batch over matrices side by side (attention heads in place), f32 and bf16") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      run_gemm_case({4, 9, 11, 8, ta, tb, 0, false, false, 1.f, 0.f, false, false, 3});
      run_gemm_case({3, 7, 5, 13, ta, tb, 2, false, false, 0.5f, 1.f, false, false, 2});
      run_gemm_case({2, 7, 33, 7, ta, tb, 1, false, false, 1.f, 0.f, true, false, 3});
      run_gemm_case({8, 64, 32, 64, ta, tb, 0, false, false, 1.f, 0.f, false, true, 2});
    }
}

TEST_CASE("cuda gemm with bf16 inputs: the CPU's bf16 gemm (the same rounded operands, f32 accumulation)") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) run_gemm_case({1, 33, 47, 65, ta, tb, 3, false, false, 1.f, 0.f, false, true});
  run_gemm_case({1, 256, 384, 768, false, true, 0, false, false, 1.f, 0.f, true, true});
  run_gemm_case({4, 17, 29, 40, true, false, 0, true, false, 0.5f, 0.f, true, true});
  run_gemm_case({2, 9, 11, 13, true, true, 0, false, false, 1.f, 1.f, false, true});
}

TEST_CASE("cuda gemm: bad arguments throw hr::Error") {
  BothF buf(random_vec(64, 5));
  GemmArgs g;
  g.M = g.N = g.K = 4;
  g.lda = g.ldb = g.ldc = 4;
  g.A = g.B = buf.g.get();
  g.C = buf.g.get() + 16;
  g.bias = buf.g.get() + 32;
  g.beta = 1.f;
  CHECK_THROWS_AS(gpu().gemm(g), Error);  // a bias needs beta == 0
  g.bias = nullptr;
  g.batch = 2;
  g.strideC = 0;
  CHECK_THROWS_AS(gpu().gemm(g), Error);
  g.batch = 1;
  g.lda = 3;  // < K: the same check as the CPU backend's (kernels/backend_checks.h)
  CHECK_THROWS_WITH_AS(gpu().gemm(g), doctest::Contains("gemm: lda too small for op(A)"), Error);
}

// ---------------------------------------------------------------- elementwise

TEST_CASE("cuda unary and unary_backward, every op") {
  const size_t n = 10007;
  const Vec gy_host = random_vec(n, 11);
  const Vec gx_host = random_vec(n, 12);
  const Unary ops[] = {Unary::Copy, Unary::Neg, Unary::Exp, Unary::Log, Unary::Sigmoid, Unary::Tanh, Unary::Relu,
                       Unary::Gelu, Unary::Sqrt, Unary::Square, Unary::Scale, Unary::AddScalar, Unary::Clamp,
                       Unary::Pow};
  for (Unary op : ops) {
    CAPTURE(static_cast<int>(op));
    const bool positive = op == Unary::Log || op == Unary::Sqrt || op == Unary::Pow;
    const float a = op == Unary::Clamp ? -0.5f : (op == Unary::Pow ? 1.7f : 2.5f), b = 0.7f;
    BothF x(positive ? random_vec(n, 13, 0.1f, 3.f) : random_vec(n, 13, -4.f, 4.f));
    BothF y(Vec(n, 0.f)), gy(gy_host), gx(gx_host), gx_acc(gx_host);
    cpu().unary(op, x.c.get(), y.c.get(), n, a, b);
    gpu().unary(op, x.g.get(), y.g.get(), n, a, b);
    check_close(y, "unary");
    cpu().unary_backward(op, x.c.get(), y.c.get(), gy.c.get(), gx.c.get(), n, a, b, false);
    gpu().unary_backward(op, x.g.get(), y.g.get(), gy.g.get(), gx.g.get(), n, a, b, false);
    check_close(gx, "unary_backward");
    cpu().unary_backward(op, x.c.get(), y.c.get(), gy.c.get(), gx_acc.c.get(), n, a, b, true);
    gpu().unary_backward(op, x.g.get(), y.g.get(), gy.g.get(), gx_acc.g.get(), n, a, b, true);
    check_close(gx_acc, "unary_backward accumulate");
  }
}

Broadcast make_broadcast(std::vector<int64_t> shape, std::vector<int64_t> sa, std::vector<int64_t> sb) {
  Broadcast p;
  p.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < p.ndim; ++d) {
    p.shape[d] = shape[d];
    p.sa[d] = sa[d];
    p.sb[d] = sb.empty() ? 0 : sb[d];
  }
  return p;
}

TEST_CASE("cuda binary over broadcast patterns, every op") {
  struct Pattern {
    Broadcast p;
    size_t na, nb;
  };
  const Pattern patterns[] = {
      {make_broadcast({4, 3, 5}, {5, 0, 1}, {0, 1, 0}), 20, 3},    // (4,1,5) op (1,3,1)
      {make_broadcast({64, 33}, {33, 1}, {33, 1}), 64 * 33, 64 * 33},  // same shape
      {make_broadcast({64, 33}, {33, 1}, {0, 1}), 64 * 33, 33},        // bias along rows
      {make_broadcast({64, 33}, {0, 0}, {33, 1}), 1, 64 * 33},         // scalar a
      {make_broadcast({2, 3, 4, 5}, {60, 20, 5, 1}, {0, 5, 1, 0}), 120, 20},  // (3,4,1) into 4-d
  };
  const Binary ops[] = {Binary::Add, Binary::Sub, Binary::Mul, Binary::Div, Binary::MaskFill};
  for (const Pattern& pat : patterns) {
    for (Binary op : ops) {
      CAPTURE(static_cast<int>(op));
      BothF a(random_vec(pat.na, 21));
      Vec b_host = random_vec(pat.nb, 22, 0.5f, 2.f);  // away from 0 for Div
      if (op == Binary::MaskFill)
        for (size_t i = 0; i < b_host.size(); ++i) b_host[i] = i % 3 == 0 ? 1.f : 0.f;
      BothF b(b_host), out(Vec(static_cast<size_t>(pat.p.numel()), 0.f));
      cpu().binary(op, pat.p, a.c.get(), b.c.get(), out.c.get(), -1e9f);
      gpu().binary(op, pat.p, a.g.get(), b.g.get(), out.g.get(), -1e9f);
      check_close(out, "binary");
    }
  }
}

TEST_CASE("cuda sum_to over leading, middle, trailing dims, one and many chunks, deterministic") {
  struct Case {
    Broadcast p;
    int64_t out_numel;
  };
  const Case cases[] = {
      {make_broadcast({4, 3, 5}, {0, 1, 0}, {}), 3},       // to (3, 1)
      {make_broadcast({4, 3, 5}, {5, 0, 1}, {}), 20},      // to (4, 1, 5)
      {make_broadcast({64, 300}, {0, 1}, {}), 300},        // a bias gradient, a few chunks
      {make_broadcast({5000, 8}, {0, 1}, {}), 8},          // many chunks
      {make_broadcast({6, 700}, {1, 0}, {}), 6},           // rows
      {make_broadcast({3, 7, 11}, {0, 0, 0}, {}), 1},      // everything
  };
  for (const Case& c : cases) {
    CAPTURE(c.out_numel);
    const Vec x_host = random_vec(static_cast<size_t>(c.p.numel()), 31);
    BothF x(x_host), out(random_vec(static_cast<size_t>(c.out_numel), 32)), acc(random_vec(c.out_numel, 33));
    cpu().sum_to(c.p, x.c.get(), out.c.get(), c.out_numel, false);
    gpu().sum_to(c.p, x.g.get(), out.g.get(), c.out_numel, false);
    check_close(out, "sum_to");
    cpu().sum_to(c.p, x.c.get(), acc.c.get(), c.out_numel, true);
    gpu().sum_to(c.p, x.g.get(), acc.g.get(), c.out_numel, true);
    check_close(acc, "sum_to accumulate");
    const Vec first = out.g.host();
    gpu().sum_to(c.p, x.g.get(), out.g.get(), c.out_numel, false);
    CHECK_MESSAGE(out.g.host() == first, "sum_to is not reproducible");
  }
}

TEST_CASE("cuda copy_strided: permute, slice, accumulate") {
  // (2,3,4,5) -> (2,4,3,5): dst strides of (2,4,3,5) in src dim order
  const int64_t shape[] = {2, 3, 4, 5}, src_strides[] = {60, 20, 5, 1}, dst_strides[] = {60, 5, 15, 1};
  BothF src(random_vec(120, 41)), dst(random_vec(120, 42)), acc(random_vec(120, 43));
  cpu().copy_strided(4, shape, src.c.get(), src_strides, dst.c.get(), dst_strides, false);
  gpu().copy_strided(4, shape, src.g.get(), src_strides, dst.g.get(), dst_strides, false);
  check_close(dst, "copy_strided permute");
  cpu().copy_strided(4, shape, src.c.get(), src_strides, acc.c.get(), dst_strides, true);
  gpu().copy_strided(4, shape, src.g.get(), src_strides, acc.g.get(), dst_strides, true);
  check_close(acc, "copy_strided permute accumulate");
  // a (3, 4) window at (1, 2) of a (5, 7) matrix into columns 1..4 of a (3, 6) matrix
  const int64_t wshape[] = {3, 4}, wsrc[] = {7, 1}, wdst[] = {6, 1};
  BothF m(random_vec(35, 44)), out(random_vec(18, 45));
  cpu().copy_strided(2, wshape, m.c.get() + 9, wsrc, out.c.get() + 1, wdst, true);
  gpu().copy_strided(2, wshape, m.g.get() + 9, wsrc, out.g.get() + 1, wdst, true);
  check_close(out, "copy_strided slice");
  // a dst that repeats elements (stride 0 over 300 rows): accumulated in order, or the last row written, as on the CPU
  const int64_t rshape[] = {300, 40}, rsrc[] = {40, 1}, rdst[] = {0, 1};
  BothF rows(random_vec(12000, 46)), sum(random_vec(40, 47)), last(random_vec(40, 48));
  cpu().copy_strided(2, rshape, rows.c.get(), rsrc, sum.c.get(), rdst, true);
  gpu().copy_strided(2, rshape, rows.g.get(), rsrc, sum.g.get(), rdst, true);
  CHECK(sum.g.host() == sum.c.host());  // the same additions in the same order
  cpu().copy_strided(2, rshape, rows.c.get(), rsrc, last.c.get(), rdst, false);
  gpu().copy_strided(2, rshape, rows.g.get(), rsrc, last.g.get(), rdst, false);
  CHECK(last.g.host() == last.c.host());
}

TEST_CASE("cuda fills, sum_squares, copies") {
  BothF x(random_vec(100003, 51));
  const double want = cpu().sum_squares(x.c.get(), 100003), got = gpu().sum_squares(x.g.get(), 100003);
  CHECK(std::abs(got - want) <= 1e-12 * want);  // both add in double
  CHECK(gpu().sum_squares(x.g.get(), 0) == 0.0);
  BothF f(Vec(1000, 0.f));
  cpu().fill(f.c.get(), 1000, 3.25f);
  gpu().fill(f.g.get(), 1000, 3.25f);
  CHECK(f.g.host() == f.c.host());
  BothI ids(Ids(777, 0));
  gpu().fill_i32(ids.g.get(), 777, -100);
  CHECK(ids.g.host() == Ids(777, -100));
  BothF y(Vec(100003, 0.f));
  gpu().copy(y.g.get(), x.g.get(), 100003 * sizeof(float));
  CHECK(y.g.host() == x.c.host());
}

TEST_CASE("cuda uniform and dropout are bit-identical to the CPU's") {
  const int64_t n = 100003;
  BothF u(Vec(n, 0.f)), x(Vec(n, 1.5f)), y(Vec(n, 0.f));
  cpu().uniform(u.c.get(), n, 42, 12345);
  gpu().uniform(u.g.get(), n, 42, 12345);
  CHECK(u.g.host() == u.c.host());
  const uint64_t offset = (uint64_t{1} << 32) - 999;  // crosses a high-word boundary of the counter
  cpu().dropout(x.c.get(), y.c.get(), n, 0.1f, 7, offset);
  gpu().dropout(x.g.get(), y.g.get(), n, 0.1f, 7, offset);
  const Vec m = y.g.host();
  CHECK(std::memcmp(m.data(), y.c.host().data(), m.size() * sizeof(float)) == 0);
  const auto kept = std::count_if(m.begin(), m.end(), [](float v) { return v != 0.f; });
  CHECK(std::abs(static_cast<double>(kept) / n - 0.9) < 0.01);
  CHECK_THROWS_AS(gpu().dropout(x.g.get(), y.g.get(), n, 1.f, 7, 0), Error);
}

// ---------------------------------------------------------------- rows

TEST_CASE("cuda softmax with mask and scale, its backward, log_softmax and its backward") {
  struct Shape {
    int64_t rows, n, rows_per_mask;
  };
  for (const Shape& s : {Shape{48, 77, 12}, Shape{3, 3000, 1}, Shape{1000, 128, 250}}) {
    CAPTURE(s.n);
    const size_t size = static_cast<size_t>(s.rows * s.n);
    Vec mask_host(static_cast<size_t>(s.rows / s.rows_per_mask * s.n), 0.f);
    for (size_t i = 0; i < mask_host.size(); i += 5) mask_host[i] = -1e9f;  // some masked positions
    BothF x(random_vec(size, 61, -5.f, 5.f)), mask(mask_host), y(Vec(size, 0.f)), gy(random_vec(size, 62));
    BothF gx(Vec(size, 0.f)), gx_acc(random_vec(size, 63));
    const float scale = 0.125f;
    cpu().softmax(x.c.get(), mask.c.get(), y.c.get(), s.rows, s.n, scale, s.rows_per_mask);
    gpu().softmax(x.g.get(), mask.g.get(), y.g.get(), s.rows, s.n, scale, s.rows_per_mask);
    check_close(y, "softmax with mask");
    cpu().softmax_backward(y.c.get(), gy.c.get(), gx.c.get(), s.rows, s.n, scale, false);
    gpu().softmax_backward(y.g.get(), gy.g.get(), gx.g.get(), s.rows, s.n, scale, false);
    check_close(gx, "softmax_backward");
    cpu().softmax_backward(y.c.get(), gy.c.get(), gx_acc.c.get(), s.rows, s.n, scale, true);
    gpu().softmax_backward(y.g.get(), gy.g.get(), gx_acc.g.get(), s.rows, s.n, scale, true);
    check_close(gx_acc, "softmax_backward accumulate");
    cpu().softmax(x.c.get(), nullptr, y.c.get(), s.rows, s.n, 1.f, 0);
    gpu().softmax(x.g.get(), nullptr, y.g.get(), s.rows, s.n, 1.f, 0);
    check_close(y, "softmax");

    cpu().log_softmax(x.c.get(), mask.c.get(), y.c.get(), s.rows, s.n, s.rows_per_mask);
    gpu().log_softmax(x.g.get(), mask.g.get(), y.g.get(), s.rows, s.n, s.rows_per_mask);
    const auto n = static_cast<size_t>(s.n), per_mask = static_cast<size_t>(s.rows_per_mask);
    std::vector<bool> unmasked(size);
    for (size_t i = 0; i < size; ++i) unmasked[i] = mask_host[i / n / per_mask * n + i % n] == 0.f;
    check_close_where(y.c.host(), y.g.host(), unmasked, "log_softmax with mask, unmasked entries");
    cpu().log_softmax(x.c.get(), nullptr, y.c.get(), s.rows, s.n, 0);
    gpu().log_softmax(x.g.get(), nullptr, y.g.get(), s.rows, s.n, 0);
    check_close(y, "log_softmax");
    cpu().log_softmax_backward(y.c.get(), gy.c.get(), gx.c.get(), s.rows, s.n, false);
    gpu().log_softmax_backward(y.g.get(), gy.g.get(), gx.g.get(), s.rows, s.n, false);
    check_close(gx, "log_softmax_backward");
    cpu().log_softmax_backward(y.c.get(), gy.c.get(), gx_acc.c.get(), s.rows, s.n, true);
    gpu().log_softmax_backward(y.g.get(), gy.g.get(), gx_acc.g.get(), s.rows, s.n, true);
    check_close(gx_acc, "log_softmax_backward accumulate");
  }
}

TEST_CASE("cuda softmax_dropout: attention's weights, the CPU's draws, bf16 output, and the backward pass") {
  const int64_t rows = 96, n = 77, rpm = 24;
  const size_t size = static_cast<size_t>(rows * n);
  Vec mask_host(static_cast<size_t>(rows / rpm * n), 0.f);
  for (size_t i = 0; i < mask_host.size(); i += 6) mask_host[i] = -1e9f;
  BothF x(random_vec(size, 71, -5.f, 5.f)), mask(mask_host), y(Vec(size, 0.f)), out(Vec(size, 0.f));
  BothF gout(random_vec(size, 72)), gx(Vec(size, 0.f));
  Both<uint16_t> out16(std::vector<uint16_t>(size, 0));
  const uint64_t offset = (uint64_t{1} << 32) - 2000;  // rows cross a high-word boundary of the counter
  const float scale = 0.3f, p = 0.2f;
  for (Backend* b : {&cpu(), &gpu()}) {
    const bool on_gpu = b == &gpu();
    b->softmax_dropout((on_gpu ? x.g : x.c).get(), (on_gpu ? mask.g : mask.c).get(), (on_gpu ? y.g : y.c).get(),
                       (on_gpu ? out.g : out.c).get(), false, rows, n, scale, rpm, p, 5, offset);
    b->softmax_dropout((on_gpu ? x.g : x.c).get(), (on_gpu ? mask.g : mask.c).get(), nullptr,
                       (on_gpu ? out16.g : out16.c).get(), true, rows, n, scale, rpm, p, 5, offset);
    b->softmax_dropout_backward((on_gpu ? y.g : y.c).get(), (on_gpu ? out.g : out.c).get(), false,
                                (on_gpu ? gout.g : gout.c).get(), (on_gpu ? gx.g : gx.c).get(), rows, n, scale, p,
                                false);
  }
  check_close(y, "softmax_dropout probabilities");
  check_close(out, "softmax_dropout dropped weights");
  const Vec oc = out.c.host(), og = out.g.host();
  for (size_t i = 0; i < size; ++i) REQUIRE((oc[i] == 0.f) == (og[i] == 0.f));  // the same draws
  const std::vector<uint16_t> bc = out16.c.host(), bg = out16.g.host();
  size_t apart = 0;
  for (size_t i = 0; i < size; ++i) apart += bc[i] != bg[i] && std::abs(int(bc[i]) - int(bg[i])) > 1;
  CHECK(apart == 0);  // bf16 copies within one ulp (the probabilities differ in their last f32 bits)
  check_close(gx, "softmax_dropout_backward");
}

// ---------------------------------------------------------------- fused attention

struct AttnShape {
  int64_t B, H, Tq, Tk, Dh;
};

// (B, Tk) additive key mask: sequence b pads its last b * Tk / (B + 1) keys, and the last sequence pads all of them,
// so that every row of it is fully padded (the CPU kernel's uniform weights over scores near -1e9)
Vec attention_mask(int64_t B, int64_t Tk) {
  Vec m(static_cast<size_t>(B * Tk), 0.f);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t padded = b == B - 1 ? Tk : b * Tk / (B + 1);
    for (int64_t j = Tk - padded; j < Tk; ++j) m[static_cast<size_t>(b * Tk + j)] = -1e9f;
  }
  return m;
}

struct AttnCase {
  AttnShape s;
  bool masked = true;
  float p = 0.f;
  bool bf16 = false, out_bf16 = false;
  uint64_t offset = 0;
};

struct AttnResult {
  Vec out, stats, gq, gk, gv;  // out widened when the case has a bf16 output
  std::vector<uint16_t> out16;
};

std::vector<uint16_t> bf16_bits(const Vec& v) {
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = math::to_bf16(v[i]);
  return b;
}

// Backend::attention and attention_backward of case c on `be`, on inputs drawn from fixed seeds (the same on every
// backend): q and k in [-2, 2], v and the output's gradient in [-1, 1]; bf16 inputs are those values rounded.
AttnResult run_attention(Backend& be, const AttnCase& c) {
  const AttnShape& s = c.s;
  const size_t nq = static_cast<size_t>(s.B * s.Tq * s.H * s.Dh), nk = static_cast<size_t>(s.B * s.Tk * s.H * s.Dh);
  const Vec q = random_vec(nq, 201, -2.f, 2.f), k = random_vec(nk, 202, -2.f, 2.f), v = random_vec(nk, 203),
            gout = random_vec(nq, 204);
  DeviceVec<float> qf(be, q), kf(be, k), vf(be, v), go(be, gout), mask(be, attention_mask(s.B, s.Tk));
  DeviceVec<uint16_t> qh(be, bf16_bits(q)), kh(be, bf16_bits(k)), vh(be, bf16_bits(v));
  DeviceVec<float> out(be, Vec(nq, 0.f)), stats(be, Vec(static_cast<size_t>(s.B * s.H * s.Tq * 2), 0.f));
  DeviceVec<uint16_t> out16(be, std::vector<uint16_t>(nq, 0));
  // gradients start as NaN: every element must be written
  DeviceVec<float> gq(be, Vec(nq, NAN)), gk(be, Vec(nk, NAN)), gv(be, Vec(nk, NAN));
  FusedAttentionArgs a;
  a.B = s.B, a.H = s.H, a.Tq = s.Tq, a.Tk = s.Tk, a.Dh = s.Dh;
  a.inputs = c.bf16 ? GemmInputs::BF16 : GemmInputs::F32;
  a.q = c.bf16 ? static_cast<const void*>(qh.get()) : qf.get();
  a.k = c.bf16 ? static_cast<const void*>(kh.get()) : kf.get();
  a.v = c.bf16 ? static_cast<const void*>(vh.get()) : vf.get();
  a.mask = c.masked ? mask.get() : nullptr;
  a.scale = 1.f / std::sqrt(static_cast<float>(s.Dh));
  a.p_drop = c.p, a.seed = 99, a.offset = c.offset;
  void* o = c.out_bf16 ? static_cast<void*>(out16.get()) : out.get();
  be.attention(a, o, c.out_bf16, stats.get());
  be.attention_backward(a, o, c.out_bf16, stats.get(), go.get(), gq.get(), gk.get(), gv.get());
  AttnResult r;
  if (c.out_bf16) {
    r.out16 = out16.host();
    for (uint16_t x : r.out16) r.out.push_back(math::from_bf16(x));
  } else {
    r.out = out.host();
  }
  r.stats = stats.host();
  r.gq = gq.host(), r.gk = gk.host(), r.gv = gv.host();
  return r;
}

// max |got - want| over max |want| (1 where want is all 0)
double normwise_error(const Vec& want, const Vec& got) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::isnan(got[i]) ? INFINITY : std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
  }
  return err / (scale > 0 ? scale : 1.0);
}

// The CUDA kernel against the CPU kernel on case c. f32: within 1e-5 of each tensor's largest value, and within kRtol
// of check_close's measure element by element (the kernels' host emulation, tests/test_cuda_attention_emulated.cpp,
// comes within 1e-6 and 4e-5 of those); the statistics within 1e-5 (1 + |cpu|). bf16: both sum the same bf16 operands
// in f32, so only a weight whose rounding the order of the sums tips to the other side of a bf16 boundary differs:
// within 2e-3 of each tensor's largest value, and a bf16 output within one bf16 step. With one key the softmax has no
// gradient: q's and k's are rounding noise on both devices, checked to be small rather than compared.
void check_attention_case(const AttnCase& c) {
  const AttnShape& s = c.s;
  CAPTURE(s.B); CAPTURE(s.H); CAPTURE(s.Tq); CAPTURE(s.Tk); CAPTURE(s.Dh);
  CAPTURE(c.masked); CAPTURE(c.p); CAPTURE(c.bf16); CAPTURE(c.out_bf16); CAPTURE(c.offset);
  const AttnResult want = run_attention(cpu(), c), got = run_attention(gpu(), c);
  for (size_t i = 0; i < want.stats.size(); ++i)
    if (!(std::abs(got.stats[i] - want.stats[i]) <= 1e-5 * (1.0 + std::abs(want.stats[i])))) {
      FAIL_CHECK("stats element " << i << " (row " << i / 2 << (i % 2 ? ", log of the sum" : ", maximum")
                                  << ") is " << got.stats[i] << ", the CPU's " << want.stats[i]);
      break;
    }
  const std::pair<const char*, const Vec AttnResult::*> fields[] = {
      {"out", &AttnResult::out}, {"gq", &AttnResult::gq}, {"gk", &AttnResult::gk}, {"gv", &AttnResult::gv}};
  for (const auto& [name, field] : fields) {
    const std::string what = name;
    const Vec &w = want.*field, &g = got.*field;
    if (s.Tk == 1 && (what == "gq" || what == "gk")) {
      for (const Vec* x : {&w, &g})
        for (float v : *x) REQUIRE_MESSAGE(std::abs(v) < 1e-4, what << " with one key: " << v);
      continue;
    }
    const double err = normwise_error(w, g);
    if (c.bf16 || c.out_bf16) {
      CHECK_MESSAGE(err < 2e-3, what << ": error " << err << " of the largest value");
    } else {
      CHECK_MESSAGE(err < 1e-5, what << ": error " << err << " of the largest value");
      check_close(w, g, what);
    }
  }
  if (c.out_bf16) {
    size_t apart = 0;
    for (size_t i = 0; i < want.out16.size(); ++i) apart += std::abs(int(want.out16[i]) - int(got.out16[i])) > 1;
    CHECK_MESSAGE(apart == 0, apart << " bf16 outputs more than one step from the CPU's");
  }
}

TEST_CASE("cuda attention: every head size and sequence lengths around the blocks, f32, the CPU kernel's values") {
  // lengths 1, 63, 65 and 130 against the backward's blocks of 64 (32 for the widest heads) and the forward's 128
  // keys; the last sequence fully padded
  for (const int64_t Dh : {1, 2, 4, 8, 32, 64, 128})
    for (const int64_t T : {1, 63, 65, 130}) check_attention_case({{2, 2, T, T, Dh}, true, 0.1f});
  // the tiles' edges: a head one over a tile (3, 17, 33, 100), the widest tile (200, 256)
  for (const int64_t Dh : {3, 17, 33, 100, 200, 256}) check_attention_case({{2, 2, 70, 70, Dh}, true, 0.1f});
}

TEST_CASE("cuda attention: dropout draws the CPU's weights, masks and no masks, more queries or more keys") {
  for (const float p : {0.f, 0.3f}) {
    check_attention_case({{3, 4, 100, 100, 16}, true, p});
    check_attention_case({{3, 4, 100, 100, 16}, false, p});
    check_attention_case({{2, 3, 5, 130, 32}, true, p});   // fewer queries than keys
    check_attention_case({{2, 3, 130, 7, 32}, true, p});   // more queries than keys: one short key block
    check_attention_case({{1, 1, 200, 150, 64}, false, p});  // one sequence and head, several blocks of each
  }
  // the counters of a row cross a high word of the stream (the dropout hash re-keys there)
  const uint64_t near_wrap = (uint64_t{1} << 32) - 3000;
  check_attention_case({{2, 2, 65, 65, 8}, true, 0.2f, false, false, near_wrap});
  check_attention_case({{1, 2, 40, 130, 128}, true, 0.2f, false, false, near_wrap});
}

TEST_CASE("cuda attention: bf16 inputs and a bf16 output, the CPU kernel's roundings") {
  // 140 keys: past the forward's first block of 128, so that weights are rounded against a second block's maxima
  for (const float p : {0.f, 0.2f})
    for (const int64_t Dh : {8, 64, 128, 256})
      for (const bool out_bf16 : {false, true}) check_attention_case({{2, 2, 130, 140, Dh}, true, p, true, out_bf16});
  check_attention_case({{2, 2, 65, 65, 32}, true, 0.1f, false, true});  // f32 inputs, bf16 output
}

TEST_CASE("cuda attention: no queries, and heads wider than the kernel's") {
  // no query reads a key: dk and dv are 0
  const AttnResult r = run_attention(gpu(), {{2, 2, 0, 9, 16}, true, 0.1f});
  CHECK(r.gk == Vec(r.gk.size(), 0.f));
  CHECK(r.gv == Vec(r.gv.size(), 0.f));
  check_attention_case({{2, 2, 0, 9, 16}, true, 0.1f});
  FusedAttentionArgs a;
  a.B = 1, a.H = 1, a.Tq = 1, a.Tk = 1, a.Dh = kCudaFusedAttentionMaxHeadDim + 1;
  BothF x(Vec(static_cast<size_t>(a.Dh), 0.5f)), out(Vec(static_cast<size_t>(a.Dh), 0.f)), stats(Vec(2, 0.f));
  a.q = a.k = a.v = x.g.get();
  CHECK_THROWS_WITH_AS(gpu().attention(a, out.g.get(), false, stats.g.get()), doctest::Contains("1 to 256"), Error);
}

TEST_CASE("cuda layer_norm forward and backward") {
  struct Shape {
    int64_t rows, n;
  };
  for (const Shape& s : {Shape{37, 768}, Shape{5, 100}, Shape{3000, 64}, Shape{2, 5000}}) {
    CAPTURE(s.rows); CAPTURE(s.n);
    const size_t size = static_cast<size_t>(s.rows * s.n), rows = static_cast<size_t>(s.rows);
    BothF x(random_vec(size, 71, -2.f, 3.f)), gamma(random_vec(s.n, 72, 0.5f, 1.5f)), beta(random_vec(s.n, 73));
    BothF y(Vec(size, 0.f)), mean(Vec(rows, 0.f)), rstd(Vec(rows, 0.f));
    cpu().layer_norm(x.c.get(), gamma.c.get(), beta.c.get(), y.c.get(), mean.c.get(), rstd.c.get(), s.rows, s.n,
                     1e-5f);
    gpu().layer_norm(x.g.get(), gamma.g.get(), beta.g.get(), y.g.get(), mean.g.get(), rstd.g.get(), s.rows, s.n,
                     1e-5f);
    check_close(y, "layer_norm y");
    check_close(mean, "layer_norm mean");
    check_close(rstd, "layer_norm rstd");
    BothF gy(random_vec(size, 74)), gx(random_vec(size, 75)), ggamma(random_vec(s.n, 76)), gbeta(random_vec(s.n, 77));
    for (bool accumulate : {false, true}) {
      cpu().layer_norm_backward(x.c.get(), gamma.c.get(), mean.c.get(), rstd.c.get(), gy.c.get(), gx.c.get(),
                                ggamma.c.get(), gbeta.c.get(), s.rows, s.n, accumulate);
      gpu().layer_norm_backward(x.g.get(), gamma.g.get(), mean.g.get(), rstd.g.get(), gy.g.get(), gx.g.get(),
                                ggamma.g.get(), gbeta.g.get(), s.rows, s.n, accumulate);
      CAPTURE(accumulate);
      check_close(gx, "layer_norm_backward gx");
      check_close(ggamma, "layer_norm_backward ggamma");
      check_close(gbeta, "layer_norm_backward gbeta");
    }
  }
  BothF x(random_vec(4, 78)), mean(Vec(1, 0.f)), rstd(Vec(1, 0.f));
  CHECK_THROWS_WITH_AS(gpu().layer_norm(x.g.get(), x.g.get(), x.g.get(), x.g.get(), mean.g.get(), rstd.g.get(), 1, 0,
                                        1e-5f),
                       doctest::Contains("layer_norm: 1 rows of length 0"), Error);
}

TEST_CASE("cuda cross_entropy with ignore_index and label smoothing, and its backward") {
  const int64_t rows = 300, C = 150;
  const int32_t ignore = -100;
  std::mt19937 rng(81);
  Ids labels_host(rows);
  for (int64_t r = 0; r < rows; ++r) labels_host[r] = r % 7 == 3 ? ignore : static_cast<int32_t>(rng() % C);
  const size_t size = static_cast<size_t>(rows * C);
  BothF logits(random_vec(size, 82, -6.f, 6.f)), logp(Vec(size, 0.f)), loss(Vec(rows, 0.f));
  BothI labels(labels_host);
  for (float smoothing : {0.f, 0.1f}) {
    CAPTURE(smoothing);
    const int64_t nc = cpu().cross_entropy(logits.c.get(), labels.c.get(), logp.c.get(), loss.c.get(), rows, C,
                                           ignore, smoothing);
    const int64_t ng = gpu().cross_entropy(logits.g.get(), labels.g.get(), logp.g.get(), loss.g.get(), rows, C,
                                           ignore, smoothing);
    CHECK(ng == nc);
    check_close(logp, "cross_entropy logp");
    check_close(loss, "cross_entropy row_loss");
    BothF g(random_vec(size, 83));
    for (bool accumulate : {false, true}) {
      CAPTURE(accumulate);
      const float gscale = 1.f / static_cast<float>(nc);
      cpu().cross_entropy_backward(logp.c.get(), labels.c.get(), g.c.get(), rows, C, ignore, smoothing, gscale,
                                   accumulate);
      gpu().cross_entropy_backward(logp.g.get(), labels.g.get(), g.g.get(), rows, C, ignore, smoothing, gscale,
                                   accumulate);
      check_close(g, "cross_entropy_backward");
    }
  }
  Ids bad = labels_host;
  bad[17] = static_cast<int32_t>(C);
  BothI bad_labels(bad);
  CHECK_THROWS_WITH_AS(gpu().cross_entropy(logits.g.get(), bad_labels.g.get(), logp.g.get(), loss.g.get(), rows, C,
                                           ignore, 0.f),
                       doctest::Contains("cross_entropy: label 150 of row 17 is outside [0, 150)"), Error);
  CHECK_THROWS_WITH_AS(gpu().cross_entropy_backward(logp.g.get(), bad_labels.g.get(), logits.g.get(), rows, C, ignore,
                                                    0.f, 1.f, true),
                       doctest::Contains("cross_entropy_backward: label 150 of row 17"), Error);
}

// ---------------------------------------------------------------- embeddings, optimizer

TEST_CASE("cuda gather_rows and scatter_add_rows with repeated ids") {
  const int64_t vocab = 50, dim = 300, n_ids = 1000;
  std::mt19937 rng(91);
  Ids ids_host(n_ids);
  for (int32_t& id : ids_host) id = rng() % 4 == 0 ? 0 : static_cast<int32_t>(rng() % vocab);  // id 0 repeats a lot
  BothI ids(ids_host);
  BothF table(random_vec(vocab * dim, 92)), out(Vec(n_ids * dim, 0.f));
  cpu().gather_rows(table.c.get(), ids.c.get(), out.c.get(), n_ids, dim);
  gpu().gather_rows(table.g.get(), ids.g.get(), out.g.get(), n_ids, dim);
  CHECK(out.g.host() == out.c.host());
  BothF g(random_vec(n_ids * dim, 93)), gtable(random_vec(vocab * dim, 94));
  cpu().scatter_add_rows(g.c.get(), ids.c.get(), gtable.c.get(), n_ids, dim);
  gpu().scatter_add_rows(g.g.get(), ids.g.get(), gtable.g.get(), n_ids, dim);
  check_close(gtable, "scatter_add_rows");
  // both add each table row's contributions in id order, so the sums are identical bit for bit
  CHECK(gtable.g.host() == gtable.c.host());

  Ids bad = ids_host;
  bad[700] = -3;
  BothI bad_ids(bad);
  CHECK_THROWS_WITH_AS(gpu().gather_rows(table.g.get(), bad_ids.g.get(), out.g.get(), n_ids, dim),
                       doctest::Contains("gather_rows: negative id -3 at position 700"), Error);
  CHECK_THROWS_WITH_AS(gpu().scatter_add_rows(g.g.get(), bad_ids.g.get(), gtable.g.get(), n_ids, dim),
                       doctest::Contains("scatter_add_rows: negative id -3 at position 700"), Error);
}

TEST_CASE("cuda adamw over several slots and 3 steps, rounding the weights of two of them to bf16") {
  const int64_t sizes[] = {1, 1000, 0, 70001};
  const float decays[] = {0.01f, 0.f, 0.1f, 0.05f};
  std::vector<std::unique_ptr<BothF>> params, grads, ms, vs;
  std::vector<std::unique_ptr<Both<uint16_t>>> copies;
  for (int k = 0; k < 4; ++k) {
    const auto n = static_cast<size_t>(sizes[k]);
    params.push_back(std::make_unique<BothF>(random_vec(n, 100 + k)));
    grads.push_back(std::make_unique<BothF>(random_vec(n, 110 + k)));
    ms.push_back(std::make_unique<BothF>(Vec(n, 0.f)));
    vs.push_back(std::make_unique<BothF>(Vec(n, 0.f)));
    copies.push_back(std::make_unique<Both<uint16_t>>(std::vector<uint16_t>(n, 0)));
  }
  for (int64_t step = 1; step <= 3; ++step) {
    for (int side = 0; side < 2; ++side) {
      std::vector<AdamWSlot> slots;
      for (int k = 0; k < 4; ++k) {
        const auto pick = [&](BothF& b) { return side ? b.g.get() : b.c.get(); };
        slots.push_back({pick(*params[k]), pick(*grads[k]), pick(*ms[k]), pick(*vs[k]), sizes[k], decays[k],
                         1.f + static_cast<float>(k)});  // a different learning-rate scale per slot
        if (k % 2) slots.back().param_bf16 = side ? copies[k]->g.get() : copies[k]->c.get();
      }
      AdamWHyper h;
      h.lr = 1e-2f;
      h.step = step;
      (side ? gpu() : cpu()).adamw(slots.data(), 4, h);
    }
  }
  for (int k = 0; k < 4; ++k) {
    CAPTURE(k);
    check_close(*params[k], "adamw param");
    check_close(*ms[k], "adamw m");
    check_close(*vs[k], "adamw v");
    const Vec pc = params[k]->c.host(), pg = params[k]->g.host();
    const std::vector<uint16_t> cc = copies[k]->c.host(), cg = copies[k]->g.host();
    for (size_t i = 0; i < pc.size(); ++i) {  // each side's copy is its own updated weight rounded
      if (cc[i] != (k % 2 ? math::to_bf16(pc[i]) : 0) || cg[i] != (k % 2 ? math::to_bf16(pg[i]) : 0))
        FAIL("element " << i << ": cpu copy " << cc[i] << ", cuda copy " << cg[i]);
    }
  }
}

// ---------------------------------------------------------------- memory

TEST_CASE("cuda allocator: a repeated step reaches cudaMalloc only during the first") {
  Backend& b = gpu();
  const int64_t rows = 256, n = 384;
  const auto step = [&] {
    // tensors of a step, in the same order each time, plus the scratch of the reductions
    BothF x(random_vec(rows * n, 1)), gamma(Vec(n, 1.f)), beta(Vec(n, 0.f)), y(Vec(rows * n, 0.f));
    BothF mean(Vec(rows, 0.f)), rstd(Vec(rows, 0.f)), gsum(Vec(n, 0.f)), gg(Vec(n, 0.f)), gb(Vec(n, 0.f));
    BothF gx(Vec(rows * n, 0.f));
    b.layer_norm(x.g.get(), gamma.g.get(), beta.g.get(), y.g.get(), mean.g.get(), rstd.g.get(), rows, n, 1e-5f);
    b.layer_norm_backward(x.g.get(), gamma.g.get(), mean.g.get(), rstd.g.get(), y.g.get(), gx.g.get(), gg.g.get(),
                          gb.g.get(), rows, n, false);
    b.sum_to(make_broadcast({rows, n}, {0, 1}, {}), y.g.get(), gsum.g.get(), n, false);
    (void)b.sum_squares(y.g.get(), rows * n);
    void* odd = b.alloc(12345);
    b.dealloc(odd, 12345);
    b.synchronize();
  };
  step();
  const size_t allocations = b.system_allocations(), in_use = b.bytes_in_use();
  for (int i = 0; i < 3; ++i) step();
  CHECK(b.system_allocations() == allocations);
  CHECK(b.bytes_in_use() == in_use);
  CHECK(b.peak_bytes_in_use() >= in_use + 2 * static_cast<size_t>(rows * n) * sizeof(float));
  void* p = b.alloc(1000);
  CHECK(b.bytes_in_use() == in_use + 1024);  // its size class
  b.dealloc(p, 1000);
  CHECK(b.alloc(0) == nullptr);
}

TEST_SUITE_END();

}  // namespace

// ---------------------------------------------------------------- host-side pieces (no GPU needed)

TEST_CASE("backend(Device::CUDA) without a device throws a clear hr::Error") {
  if (cuda_available()) {
    CHECK(backend(Device::CUDA).device() == Device::CUDA);
    return;
  }
#ifdef HR_WITH_CUDA
  CHECK_THROWS_WITH_AS(backend(Device::CUDA), doctest::Contains("no CUDA device found"), Error);
#else
  CHECK_THROWS_WITH_AS(backend(Device::CUDA), doctest::Contains("has no CUDA backend"), Error);
#endif
}

#ifdef HR_WITH_CUDA  // the allocator is compiled with the CUDA backend only
TEST_CASE("cuda caching allocator size classes: at least the request, at most 25% more") {
  using cuda::CachingAllocator;
  CHECK(CachingAllocator::size_class(1) == 512);
  CHECK(CachingAllocator::size_class(512) == 512);
  CHECK(CachingAllocator::size_class(513) == 640);
  CHECK(CachingAllocator::size_class(1024) == 1024);
  CHECK(CachingAllocator::size_class(1025) == 1280);
  size_t previous = 0;
  for (size_t bytes = 1; bytes < (size_t{1} << 30); bytes = bytes * 3 / 2 + 7) {
    const size_t cls = CachingAllocator::size_class(bytes);
    CHECK(cls >= bytes);
    CHECK(cls >= previous);
    if (bytes > 512) CHECK(cls <= bytes + bytes / 4);
    CHECK(cls % 128 == 0);  // a multiple of a quarter of 512: blocks stay aligned
    previous = cls;
  }
}
#endif

TEST_CASE("cuda strided index: collapsed offsets equal the full N-d offsets") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int ndim = 1 + static_cast<int>(rng() % kMaxDims);
    int64_t shape[kMaxDims], s0[kMaxDims], s1[kMaxDims];
    // operand 0 contiguous with random broadcast (zero-stride) dims, operand 1 random strides, some zero
    int64_t c = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      shape[d] = 1 + static_cast<int64_t>(rng() % 4);
      s0[d] = rng() % 3 == 0 ? 0 : c;
      c *= shape[d];
    }
    for (int d = 0; d < ndim; ++d) s1[d] = rng() % 4 == 0 ? 0 : (d + 1 < ndim ? s0[d + 1] : 1) * (1 + rng() % 2);
    const cuda::StridedPair p = cuda::collapse(ndim, shape, s0, s1);
    CHECK(p.ndim <= ndim);
    for (int64_t i = 0; i < c; ++i) {
      int64_t want0 = 0, want1 = 0, rest = i;
      for (int d = ndim - 1; d >= 0; --d) {
        want0 += rest % shape[d] * s0[d];
        want1 += rest % shape[d] * s1[d];
        rest /= shape[d];
      }
      int64_t got0, got1, got0_32, got1_32;
      p.offsets(i, got0, got1);
      p.offsets(static_cast<uint32_t>(i), got0_32, got1_32);  // the 32-bit index path of small tensors
      REQUIRE(got0 == want0);
      REQUIRE(got1 == want1);
      REQUIRE(got0_32 == want0);
      REQUIRE(got1_32 == want1);
    }
  }
  // contiguous operands collapse to one dimension: no divisions per element
  const int64_t shape[] = {2, 3, 4}, contiguous[] = {12, 4, 1}, zeros[] = {0, 0, 0};
  CHECK(cuda::collapse(3, shape, contiguous, contiguous).ndim == 1);
  CHECK(cuda::collapse(3, shape, contiguous, zeros).ndim == 1);
  // operand 1 (copy_strided's dst) repeating elements is what makes copy_strided run in order on one thread
  const int64_t some_zero[] = {4, 0, 1};
  CHECK(cuda::collapse(3, shape, contiguous, zeros).repeats1());
  CHECK(cuda::collapse(3, shape, contiguous, some_zero).repeats1());
  CHECK_FALSE(cuda::collapse(3, shape, contiguous, contiguous).repeats1());
  const int64_t shape_1[] = {2, 1, 4}, dense_1[] = {4, 4, 1}, zero_over_1[] = {4, 0, 1};
  CHECK_FALSE(cuda::collapse(3, shape_1, dense_1, zero_over_1).repeats1());  // a zero stride over extent 1
}


TEST_CASE("cuda attention geometry: head tiles, shared memory, blocks, offsets and dropout counters") {
  using namespace cuda::attn;
  // the smallest tile that holds the head; none past the widest
  CHECK(head_tile(0) == 0);
  CHECK(head_tile(kCudaFusedAttentionMaxHeadDim + 1) == 0);
  for (int64_t Dh = 1; Dh <= kCudaFusedAttentionMaxHeadDim; ++Dh) {
    const int kd = head_tile(Dh);
    REQUIRE(kd >= Dh);
    CHECK((kd == 16 || kd / 2 < Dh));
    CHECK((kd == 16 || kd == 32 || kd == 64 || kd == 128 || kd == 256));
  }
  for (const int kd : {16, 32, 64, 128, 256}) {
    CAPTURE(kd);
    // every block's tiles fit, and its rows, keys and columns split evenly over the 16 x 16 threads
    CHECK(forward_shared_floats(kd) * sizeof(float) <= kMaxSharedBytes);
    CHECK(backward_shared_floats(kd) * sizeof(float) <= kMaxSharedBytes);
    CHECK(forward_queries(kd) % kSide == 0);
    CHECK(backward_rows(kd) % kSide == 0);
    CHECK(kd % kSide == 0);
    CHECK(kForwardKeys % kSide == 0);
    CHECK(kSide * kSide == kThreads);
    // a half warp reading one column of 16 rows (tile_stride apart) hits 16 banks
    std::vector<bool> bank(32, false);
    for (int r = 0; r < kSide; ++r) {
      const int b = r * tile_stride(kd) % 32;
      CHECK_FALSE(bank[static_cast<size_t>(b)]);
      bank[static_cast<size_t>(b)] = true;
    }
  }
  // the half-warp reductions: the partners of a shuffle with an XOR below 16 share the thread's ty (its rows)
  for (int t = 0; t < kThreads; ++t)
    for (int o = kSide / 2; o > 0; o >>= 1) {
      const int partner = t ^ o;
      CHECK(partner / 32 == t / 32);  // the same warp
      CHECK(partner / kSide == t / kSide);
    }
  // thread (ty, tx) owns elements (ty + 16 r, tx + 16 c): together the threads own each element of a tile once
  {
    const int rows = 64, cols = 128;
    std::vector<int> owners(static_cast<size_t>(rows * cols), 0);
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < rows / kSide; ++r)
        for (int c = 0; c < cols / kSide; ++c)
          ++owners[static_cast<size_t>((t / kSide + kSide * r) * cols + t % kSide + kSide * c)];
    CHECK(std::all_of(owners.begin(), owners.end(), [](int n) { return n == 1; }));
  }
  // the blocks of a grid cover every (sequence, head, tile) once
  for (const int64_t T : {1, 63, 64, 65, 130}) {
    const int64_t B = 3, H = 5, rows = 64, tiles = tiles_of(T, rows);
    CHECK(tiles * rows >= T);
    CHECK((tiles - 1) * rows < T);
    std::vector<int> seen(static_cast<size_t>(B * H * tiles), 0);
    for (int64_t block = 0; block < B * H * tiles; ++block) {
      const BlockPlace at = block_place(block, tiles, rows, H);
      REQUIRE(at.b < B);
      REQUIRE(at.h < H);
      REQUIRE(at.row0 < T);
      REQUIRE(at.row0 % rows == 0);
      ++seen[static_cast<size_t>((at.b * H + at.h) * tiles + at.row0 / rows)];
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
  CHECK(tiles_of(0, 64) == 0);
  // a head's elements in a (B, T, H*Dh) tensor, statistics rows and dropout counters in their (B, H, Tq[, Tk]) order
  const int64_t B = 2, T = 7, Tk = 5, H = 3, Dh = 4;
  int64_t flat = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < T; ++r)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t c = 0; c < Dh; ++c) REQUIRE(head_offset(T, H, Dh, b, h, r, c) == flat++);
  flat = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        REQUIRE(stats_row(H, T, b, h, i) == flat);
        for (int64_t j = 0; j < Tk; ++j)
          REQUIRE(weight_counter(H, T, Tk, b, h, i, j) == static_cast<uint64_t>(flat * Tk + j));
        ++flat;
      }
}

TEST_CASE("cuda attention's dropout draws per row: the stream's factors, also where a row crosses a high word") {
  for (const float p : {0.f, 0.1f, 0.5f}) {
    const math::DropoutFactors d(p, 1234, (uint64_t{1} << 32) - 100);
    for (const uint64_t first : {uint64_t{0}, uint64_t{60}, uint64_t{99}, uint64_t{100}, uint64_t{1} << 33}) {
      const cuda::attn::RowDraws row(d, first);
      for (int j = 0; j < 64; ++j) REQUIRE(row(j) == d(first + static_cast<uint64_t>(j)));
    }
  }
}
