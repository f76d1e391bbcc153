// The CUDA fused attention kernels themselves (kernels/cuda/attention_kernels.cuh, as kernels/cuda/attention.cu
// launches them) run on host threads (tests/cuda_emulation.h) against the CPU kernel on the same inputs, on machines
// without a GPU: the tiles' index arithmetic, the shared-memory layout, the placement of the barriers and shuffles (a
// missing one deadlocks or races, a read of shared memory nobody wrote gives NaN), the grids, the dropout draws and the
// bf16 roundings. tests/test_cuda_backend.cpp runs the same comparison on a GPU, where the device's expf, FMAs and
// timing join in.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/base/error.h"
#include "kernels/math/bf16.h"
// the stand-ins for CUDA's built-ins, then the kernels
#include "tests/cuda_emulation.h"
#include "tests/random_values.h"
#include "kernels/cuda/attention_kernels.cuh"

using namespace hr;
using hr::testing::random_vec;

namespace {

using Vec = std::vector<float>;
using Bits = std::vector<uint16_t>;

struct Case {
  int64_t B, H, Tq, Tk, Dh;
  bool masked = true;
  float p = 0.f;
  bool bf16 = false, out_bf16 = false;
  uint64_t offset = 0;
};

Bits bf16_bits(const Vec& v) {
  Bits b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = math::to_bf16(v[i]);
  return b;
}

struct Result {
  Vec out, stats, gq, gk, gv;
};

// The forward and backward pass of case c: the CPU kernel (Backend::attention on the CPU backend) or the CUDA
// kernels on host threads, on the same inputs (q, k in [-2, 2], v and the output's gradient in [-1, 1]; the last
// sequence's keys all padded, the others' last b * Tk / (B + 1))
Result run(const Case& c, bool emulated) {
  const size_t nq = static_cast<size_t>(c.B * c.Tq * c.H * c.Dh), nk = static_cast<size_t>(c.B * c.Tk * c.H * c.Dh);
  const Vec q = random_vec(nq, 1, -2.f, 2.f), k = random_vec(nk, 2, -2.f, 2.f), v = random_vec(nk, 3, -1.f, 1.f),
            gout = random_vec(nq, 4, -1.f, 1.f);
  const Bits qh = bf16_bits(q), kh = bf16_bits(k), vh = bf16_bits(v);
  Vec mask(static_cast<size_t>(c.B * c.Tk), 0.f);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = c.Tk - (b == c.B - 1 ? c.Tk : b * c.Tk / (c.B + 1)); j < c.Tk; ++j)
      mask[static_cast<size_t>(b * c.Tk + j)] = -1e9f;
  FusedAttentionArgs a;
  a.B = c.B, a.H = c.H, a.Tq = c.Tq, a.Tk = c.Tk, a.Dh = c.Dh;
  a.inputs = c.bf16 ? GemmInputs::BF16 : GemmInputs::F32;
  a.q = c.bf16 ? static_cast<const void*>(qh.data()) : q.data();
  a.k = c.bf16 ? static_cast<const void*>(kh.data()) : k.data();
  a.v = c.bf16 ? static_cast<const void*>(vh.data()) : v.data();
  a.mask = c.masked ? mask.data() : nullptr;
  a.scale = 1.f / std::sqrt(static_cast<float>(c.Dh));
  a.p_drop = c.p, a.seed = 17, a.offset = c.offset;
  Vec out(nq, NAN), stats(static_cast<size_t>(c.B * c.H * c.Tq * 2), NAN), dsum(static_cast<size_t>(c.B * c.H * c.Tq));
  Bits out16(nq, 0xFFFF);
  Result r{{}, {}, Vec(nq, NAN), Vec(nk, NAN), Vec(nk, NAN)};  // NaN: every element must be written
  void* o = c.out_bf16 ? static_cast<void*>(out16.data()) : out.data();
  if (emulated) {
    cuda::forward_pass(a, o, c.out_bf16, stats.data(), testing::emulation::EmulatedLaunch{});
    cuda::backward_pass(a, o, c.out_bf16, stats.data(), gout.data(), r.gq.data(), r.gk.data(), r.gv.data(),
                        dsum.data(), testing::emulation::EmulatedLaunch{});
  } else {
    Backend& cpu = backend(Device::CPU);
    cpu.attention(a, o, c.out_bf16, stats.data());
    cpu.attention_backward(a, o, c.out_bf16, stats.data(), gout.data(), r.gq.data(), r.gk.data(), r.gv.data());
  }
  if (c.out_bf16) {
    for (uint16_t x : out16) r.out.push_back(math::from_bf16(x));
  } else {
    r.out = out;
  }
  r.stats = stats;
  return r;
}

// The emulated kernels against the CPU kernel: f32 within 1e-5 (1 + |cpu|), so also near zero; bf16 within 2e-3 of
// each tensor's largest value (a weight whose rounding the order of the sums tips may differ by a bf16 step).
void check_case(const Case& c) {
  CAPTURE(c.B); CAPTURE(c.H); CAPTURE(c.Tq); CAPTURE(c.Tk); CAPTURE(c.Dh);
  CAPTURE(c.masked); CAPTURE(c.p); CAPTURE(c.bf16); CAPTURE(c.out_bf16); CAPTURE(c.offset);
  const Result want = run(c, false), got = run(c, true);
  const std::pair<const char*, const Vec Result::*> fields[] = {{"out", &Result::out}, {"stats", &Result::stats},
                                                               {"gq", &Result::gq}, {"gk", &Result::gk},
                                                               {"gv", &Result::gv}};
  for (const auto& [name, field] : fields) {
    const Vec &w = want.*field, &g = got.*field;
    REQUIRE(w.size() == g.size());
    double scale = 0;
    for (float x : w) scale = std::max(scale, static_cast<double>(std::abs(x)));
    const bool loose = (c.bf16 || c.out_bf16) && std::string(name) != "stats";
    for (size_t i = 0; i < w.size(); ++i) {
      const double tol = loose ? 2e-3 * scale : 1e-5 * (1.0 + std::abs(w[i]));
      if (!(std::abs(static_cast<double>(g[i]) - w[i]) <= tol)) {  // NaN fails too
        FAIL_CHECK(std::string(name) << " element " << i << " is " << g[i] << ", the CPU kernel's " << w[i]);
        break;
      }
    }
  }
}

}  // namespace

TEST_CASE("emulated CUDA attention: every head tile, lengths around the blocks, padded rows and dropout, f32") {
  for (const int64_t Dh : {1, 8, 17, 64, 100}) check_case({2, 2, 65, 65, Dh, true, 0.2f});
  for (const int64_t T : {1, 63, 130}) check_case({2, 1, T, T, 4, true, 0.1f});
  check_case({1, 1, 40, 70, 256, true, 0.1f});  // the widest tile: blocks of 32 queries and keys
  check_case({1, 2, 33, 33, 200, false, 0.f});
}

TEST_CASE("emulated CUDA attention: more queries or more keys, no mask, no dropout, a stream crossing a high word") {
  check_case({2, 3, 5, 70, 16, true, 0.f});
  check_case({2, 2, 70, 7, 16, true, 0.3f});
  check_case({3, 2, 20, 20, 32, false, 0.f});
  check_case({2, 2, 65, 65, 8, true, 0.2f, false, false, (uint64_t{1} << 32) - 3000});
}

TEST_CASE("emulated CUDA attention: bf16 inputs and outputs") {
  check_case({2, 2, 70, 70, 16, true, 0.2f, true, false});
  check_case({2, 2, 70, 70, 16, true, 0.2f, true, true});
  check_case({1, 2, 40, 40, 128, true, 0.1f, true, true});
  check_case({2, 2, 65, 65, 32, true, 0.1f, false, true});  // f32 inputs, bf16 output
}

TEST_CASE("emulated CUDA attention: keys across the forward's blocks of 128, every head tile, f32 and bf16") {
  // 140 keys: a block and 12; 300: two and 44. Under bf16 the weights are rounded against each block's running
  // maximum, so any other blocking than the CPU kernel's shows here as outputs a bf16 step apart.
  for (const int64_t Dh : {1, 17, 64, 100, 256})
    for (const int64_t Tk : {140, 300}) {
      check_case({2, 1, 40, Tk, Dh, true, 0.1f});
      check_case({2, 1, 40, Tk, Dh, true, 0.1f, true, true});
    }
  check_case({2, 2, 70, 300, 32, false, 0.f, true, false});  // no mask, no dropout: bf16 inputs, f32 output
}

TEST_CASE("emulated CUDA attention: no queries gives dk = dv = 0; heads over 256 are refused") {
  const Result r = run({2, 2, 0, 9, 16, true, 0.1f}, true);
  CHECK(r.gk == Vec(r.gk.size(), 0.f));
  CHECK(r.gv == Vec(r.gv.size(), 0.f));
  FusedAttentionArgs a;
  a.B = a.H = a.Tq = a.Tk = 1, a.Dh = kCudaFusedAttentionMaxHeadDim + 1;
  float x = 0;
  CHECK_THROWS_WITH_AS(cuda::forward_pass(a, &x, false, &x, testing::emulation::EmulatedLaunch{}),
                       doctest::Contains("1 to 256"), Error);
}
