// fused_attention against the unfused ops it replaces (head_scores, attention_weights, head_context): values, gradients
// and dropout draws in f32 and under bf16, padded sequences, blocks cut short, every head size; central differences on
// small shapes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "framework/autocast.h"
#include "framework/autograd.h"
#include "framework/ops.h"
#include "framework/random.h"
#include "kernels/backend.h"
#include "kernels/base/error.h"
#include "kernels/cpu/cpu_parallel.h"
#include "kernels/math/bf16.h"
#include "tests/gradcheck.h"

using namespace hr;
using hr::testing::rand_tensor;

namespace {

struct Shape5 {
  int64_t B, H, Tq, Tk, Dh;
};

// (B, Tk) additive: sequence b pads its last b * Tk / (B + 1) keys, and with `full_row` the last sequence pads all of
// them (every weight of its rows masked: a uniform row, as the unfused softmax gives)
Tensor key_mask(int64_t B, int64_t Tk, bool full_row) {
  std::vector<float> m(static_cast<size_t>(B * Tk), 0.f);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t padded = full_row && b == B - 1 ? Tk : b * Tk / (B + 1);
    for (int64_t j = Tk - padded; j < Tk; ++j) m[static_cast<size_t>(b * Tk + j)] = -1e9f;
  }
  return Tensor::from_vector(m, {B, Tk});
}

// a bf16 tensor's values as floats
std::vector<float> widen(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = math::from_bf16(t.bf16()[i]);
  return v;
}

struct Pass {
  std::vector<float> out, gq, gk, gv, next_draw;
};

// One forward and backward pass of either path on fixed inputs; the gradient reaching the output is a fixed R.
Pass run(bool fused, const Shape5& s, const Tensor& mask, float p, bool bf16, bool bf16_out = false) {
  Tensor q = rand_tensor({s.B, s.Tq, s.H * s.Dh}, 1, -2.f, 2.f).set_requires_grad();
  Tensor k = rand_tensor({s.B, s.Tk, s.H * s.Dh}, 2, -2.f, 2.f).set_requires_grad();
  Tensor v = rand_tensor({s.B, s.Tk, s.H * s.Dh}, 3).set_requires_grad();
  const Tensor R = rand_tensor({s.B, s.Tq, s.H * s.Dh}, 4);
  const float scale = 1.f / std::sqrt(static_cast<float>(s.Dh));
  std::optional<AutocastScope> scope;
  if (bf16) scope.emplace(Precision::BF16, std::vector<Tensor>{});
  manual_seed(7);
  const Tensor out = fused ? fused_attention(q, k, v, s.H, mask, scale, p, true, bf16_out)
                           : head_context(attention_weights(head_scores(q, k, s.H), mask, scale, p, true), v);
  Pass r;
  r.next_draw = rand_uniform({3}).to_vector();  // where the op left the generator
  backward(out, R);
  CHECK(out.dtype() == (bf16_out && bf16 ? DType::BF16 : DType::F32));
  r.out = out.dtype() == DType::BF16 ? widen(out) : out.to_vector();
  r.gq = q.grad().to_vector();
  r.gk = k.grad().to_vector();
  r.gv = v.grad().to_vector();
  return r;
}

// |got - want| <= tol * (1 + |want|) everywhere; reports the first element that is not
void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1.0 + std::abs(want[i])))) {
      FAIL_CHECK(what << ": element " << i << " is " << got[i] << ", the unfused ops give " << want[i]);
      return;
    }
}

void check_against_unfused(const Shape5& s, const Tensor& mask, float p, double tol) {
  INFO("B " << s.B << " H " << s.H << " Tq " << s.Tq << " Tk " << s.Tk << " Dh " << s.Dh << " p " << p);
  const Pass f = run(true, s, mask, p, false), u = run(false, s, mask, p, false);
  check_close(f.out, u.out, tol, "out");
  check_close(f.gq, u.gq, tol, "dq");
  check_close(f.gk, u.gk, tol, "dk");
  check_close(f.gv, u.gv, tol, "dv");
  CHECK(f.next_draw == u.next_draw);  // the same counters taken from the stream
}

// max |x - ref| over max |ref|
double relative_error(const std::vector<float>& x, const std::vector<float>& ref) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, static_cast<double>(std::abs(x[i] - ref[i])));
    scale = std::max(scale, static_cast<double>(std::abs(ref[i])));
  }
  return err / scale;
}


}  // namespace

TEST_CASE("fused_attention: values and gradients of the unfused ops in f32, with padded sequences and dropout") {
  constexpr double kF32 = 1e-5;
  const Shape5 one_block{2, 3, 9, 11, 4}, ragged{3, 2, 140, 140, 8}, cross{2, 2, 5, 140, 4};
  for (const float p : {0.f, 0.3f}) {
    check_against_unfused(one_block, Tensor(), p, kF32);
    check_against_unfused(one_block, key_mask(2, 11, true), p, kF32);
    check_against_unfused(ragged, key_mask(3, 140, true), p, kF32);  // 140 keys: a block of 128 and one of 12
    check_against_unfused(cross, key_mask(2, 140, false), p, kF32);  // fewer queries than keys
  }
}

TEST_CASE("fused_attention: every head size, 1 to 128") {
  // 15 and 16 on either side of the narrow heads' loops and sgemm; 140 keys, two blocks
  for (const int64_t Dh : {1, 2, 4, 8, 15, 16, 17, 32, 64, 128})
    check_against_unfused({2, 2, 140, 140, Dh}, key_mask(2, 140, true), 0.1f, 1e-5);
}

TEST_CASE("fused_attention: the backward pass recomputes every block afresh (dk, dv and the packed keys of each)") {
  // three key blocks (128, 128, 44) and five query blocks (64, 64, 64, 64, 44) with values that differ from block to
  // block: a backward pass that kept a previous block's keys, values or partial dk/dv would give the later blocks
  // wrong gradients
  for (const int64_t Dh : {8, 32}) {  // narrow heads keep dk and dv transposed, wide ones in the gradients' rows
    check_against_unfused({2, 2, 300, 300, Dh}, key_mask(2, 300, false), 0.f, 1e-5);
    check_against_unfused({2, 2, 300, 300, Dh}, key_mask(2, 300, false), 0.2f, 1e-5);
  }
}

TEST_CASE("fused_attention: the same on all threads, the tasks spread over them") {
  const Shape5 s{3, 4, 140, 140, 16};
  const Tensor mask = key_mask(3, 140, true);
  const Pass serial = run(true, s, mask, 0.2f, false);
  const cpu::ParallelAlways parallel;
  const Pass threaded = run(true, s, mask, 0.2f, false);
  CHECK(threaded.out == serial.out);  // each task's sums do not depend on the split
  CHECK(threaded.gq == serial.gq);
  CHECK(threaded.gk == serial.gk);
  CHECK(threaded.gv == serial.gv);
  check_against_unfused(s, mask, 0.2f, 1e-5);
}

TEST_CASE("fused_attention: central differences on small shapes") {
  const Tensor q = rand_tensor({2, 3, 6}, 11, -2.f, 2.f), k = rand_tensor({2, 5, 6}, 12, -2.f, 2.f),
               v = rand_tensor({2, 5, 6}, 13);
  // a fully padded sequence has no finite-difference gradient (its scores vanish next to the -1e9), so padding is partial
  const Tensor mask = key_mask(2, 5, false);
  for (const float p : {0.f, 0.3f}) {
    const auto r = testing::gradcheck(
        [&](const std::vector<Tensor>& x) { return fused_attention(x[0], x[1], x[2], 2, mask, 0.6f, p, true); },
        {q, k, v});
    INFO("worst: " << r.worst << " (" << r.checked << " coordinates), p = " << p);
    CHECK(r.checked > 0);
    CHECK(r.max_error < 5e-3);
  }
}

TEST_CASE("fused_attention: under bf16 as close to the unfused ops as bf16 allows") {
  const Shape5 s{2, 2, 140, 140, 16};
  const Tensor mask = key_mask(2, 140, true);
  for (const float p : {0.f, 0.2f}) {
    CAPTURE(p);
    const Pass exact = run(false, s, mask, p, false), fused = run(true, s, mask, p, true),
               apart = run(false, s, mask, p, true);
    CHECK(fused.next_draw == apart.next_draw);
    const std::vector<float> Pass::*fields[] = {&Pass::out, &Pass::gq, &Pass::gk, &Pass::gv};
    for (const auto field : fields) {
      // each within bf16's resolution of the exact values, and the fused op no further than the unfused ops are
      const double e_fused = relative_error(fused.*field, exact.*field), e_apart = relative_error(apart.*field, exact.*field);
      INFO("error of the fused op " << e_fused << ", of the unfused ops " << e_apart);
      CHECK(e_fused < 2e-2);
      CHECK(e_fused < 2 * e_apart + 1e-3);
      CHECK(relative_error(fused.*field, apart.*field) < 2e-2);
    }
    // in bf16 for the output projection: the f32 output rounded, and the gradients of that rounded output
    const Pass rounded = run(true, s, mask, p, true, true);
    for (size_t i = 0; i < fused.out.size(); ++i)
      if (rounded.out[i] != math::from_bf16(math::to_bf16(fused.out[i]))) {
        FAIL_CHECK("element " << i << " of the bf16 output is " << rounded.out[i] << " for " << fused.out[i]);
        break;
      }
    CHECK(relative_error(rounded.gq, fused.gq) < 1e-2);
    CHECK(relative_error(rounded.gk, fused.gk) < 1e-2);
    CHECK(rounded.gv == fused.gv);  // dv reads only the weights and the output's gradient
  }
}

TEST_CASE("fused_attention: shapes and arguments are checked") {
  const Tensor q = rand_tensor({2, 3, 8}, 1), k = rand_tensor({2, 5, 8}, 2);
  CHECK_THROWS_WITH_AS(fused_attention(q, k, k, 3, Tensor(), 1.f, 0.f, true), doctest::Contains("for 3 heads"),
                       hr::Error);
  CHECK_THROWS_WITH_AS(fused_attention(q, k, rand_tensor({2, 4, 8}, 3), 2, Tensor(), 1.f, 0.f, true),
                       doctest::Contains("are not (B, Tq, H*Dh)"), hr::Error);
  CHECK_THROWS_WITH_AS(fused_attention(q, k, k, 2, key_mask(2, 3, false), 1.f, 0.f, true),
                       doctest::Contains("is not (B, Tk)"), hr::Error);
  CHECK_THROWS_WITH_AS(fused_attention(q, k, k, 2, Tensor(), 1.f, 1.f, true), doctest::Contains("p must be in [0, 1)"),
                       hr::Error);
}
