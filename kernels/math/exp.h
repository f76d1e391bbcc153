// exp in arithmetic only, for the row and elementwise loops of every backend (softmax rows, the fused attention
// kernel, the CPU's GELU): GCC vectorises it inside `omp simd` loops, where a call to expf would stay scalar, and the
// GPU runs the same formula, so the tests on the CPU check the numbers it computes.
#pragma once

#include "kernels/math/bf16.h"
#include "kernels/math/hd.h"

namespace hr::math {

// exp(y) for y <= 0, with y clamped at -87 (where exp is ~1.6e-38, the smallest normal float): 2^n p(r), r in
// [-ln2/2, ln2/2]; relative error ~2e-7. A NaN stays NaN.
HR_HD float exp_nonpositive(float y) {
  y = y < -87.f ? -87.f : y;
  const float n = (y * 1.44269504f + 12582912.f) - 12582912.f;  // round to nearest: 1.5 * 2^23 pushes out the fraction
  const float r = (y - n * 0.693145752f) - n * 1.42860677e-6f;  // ln 2 in two parts (Cody and Waite)
  float p = 1.f / 5040.f;
  p = p * r + 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  return p * bits_float(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
}

// exp(y) for y <= 0, exactly 0 more than 87 below 0: the key mask's -1e9 gives exact zeros in softmax rows
HR_HD float exp_or_zero(float y) { return y < -87.f ? 0.f : exp_nonpositive(y); }

}  // namespace hr::math
