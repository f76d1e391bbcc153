// GELU (erf form) and its derivative for the CPU backend, in arithmetic the compiler vectorises: erf by Abramowitz &
// Stegun 7.1.26 (|error| <= 1.5e-7, the approximation oneDNN's gelu_erf uses as well) and kernels/math/exp.h's exp. The
// derivative's exp(-x^2/2) is the exp that erf needs, so the backward pass costs one exp and one division an element,
// as the forward does; oneDNN 2.6's eltwise backward cost twice its forward here
// (`headroom bench --kernels`, docs/performance.md). The GPU computes the same function with erff (kernels/math/unary.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/math/exp.h"

namespace hr::cpu {

// 1 + erf(x / sqrt 2) = 2 Phi(x), and the normal density phi(x).
struct NormalCdf {
  float twice_cdf, pdf;
};
inline NormalCdf normal_cdf(float x) {
  const float z = std::fabs(x) * 0.707106781f;
  const float t = 1.f / (1.f + 0.3275911f * z);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  const float e = math::exp_nonpositive(-0.5f * x * x);  // exp(-z^2)
  const float erfc = q * t * e;                           // erfc(|z|)
  return {x >= 0.f ? 2.f - erfc : erfc, e * 0.398942280f};
}

// y = x Phi(x) over [0, n)
inline void gelu_run(const float* __restrict x, float* __restrict y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * normal_cdf(x[i]).twice_cdf;
}

// gx (+)= gy (Phi(x) + x phi(x)) over [0, n)
inline void gelu_backward_run(const float* __restrict x, const float* __restrict gy, float* __restrict gx, int64_t n,
                              bool accumulate) {
  if (accumulate) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const NormalCdf c = normal_cdf(x[i]);
      gx[i] += gy[i] * (0.5f * c.twice_cdf + x[i] * c.pdf);
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const NormalCdf c = normal_cdf(x[i]);
      gx[i] = gy[i] * (0.5f * c.twice_cdf + x[i] * c.pdf);
    }
  }
}

}  // namespace hr::cpu
