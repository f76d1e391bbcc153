// exp for the CPU backend's own vectorised loops (GELU, softmax): arithmetic only, so that GCC vectorises it inside
// `omp simd` loops, where a call to expf would stay scalar.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace hr::cpu {

// exp(y) for y <= 0, with y clamped at -87 (where exp is ~1.6e-38, the smallest normal float): 2^n p(r), r in
// [-ln2/2, ln2/2]; relative error ~2e-7.
inline float exp_nonpositive(float y) {
  y = std::max(y, -87.f);
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
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

}  // namespace hr::cpu
