// Softmax rows with their dropout for the CPU backend (attention's weights), in loops the compiler vectorises: the
// exps are kernels/math/exp.h's, the dropout factors cpu_dropout.h's (forward only: the backward pass reads the mask
// from the forward's output). One row of attention (T keys) sits in L1, so the passes over it cost little next to the
// one read of the scores and the writes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/cpu_dropout.h"
#include "kernels/math/bf16.h"
#include "kernels/math/exp.h"

namespace hr::cpu {

// p = softmax(scale * x + mask) over one row of n into p; mask may be null. Values more than 87 below the row's
// maximum get probability 0 (their exp is below the smallest normal float): the key mask's -1e9 gives exact zeros.
template <bool Masked>
inline void softmax_into(const float* __restrict x, const float* __restrict mask, float scale, int64_t n,
                         float* __restrict p) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, scale * x[j] + (Masked ? mask[j] : 0.f));
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const float v = scale * x[j] + (Masked ? mask[j] : 0.f) - mx;
    const float e = v < -87.f ? 0.f : math::exp_nonpositive(v);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.f / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) p[j] *= inv;
}

// out[j] = p[j] * f[j] (f null: p), as f32 or as bf16 bits (exactly one of out, out_bf16 is non-null)
inline void write_dropped(const float* __restrict p, const float* __restrict f, int64_t n, float* __restrict out,
                          uint16_t* __restrict out_bf16) {
  if (out_bf16 && f) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) out_bf16[j] = math::to_bf16(p[j] * f[j]);
  } else if (out_bf16) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) out_bf16[j] = math::to_bf16(p[j]);
  } else if (f) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) out[j] = p[j] * f[j];
  } else {
    std::copy(p, p + n, out);
  }
}

// Rows [r0, r1) of Backend::softmax_dropout; scratch holds 2n floats.
inline void softmax_dropout_rows(const float* x, const float* mask, float* y, float* out, uint16_t* out_bf16,
                                 int64_t r0, int64_t r1, int64_t n, float scale, int64_t rows_per_mask,
                                 const math::DropoutFactors& drop, float* scratch) {
  float* f = drop.threshold ? scratch + n : nullptr;
  for (int64_t r = r0; r < r1; ++r) {
    float* p = y ? y + r * n : scratch;
    if (mask) softmax_into<true>(x + r * n, mask + r / rows_per_mask * n, scale, n, p);
    else softmax_into<false>(x + r * n, nullptr, scale, n, p);
    if (!out && !out_bf16) continue;
    if (f) dropout_factors(drop, static_cast<uint64_t>(r * n), n, f);
    write_dropped(p, f, n, out ? out + r * n : nullptr, out_bf16 ? out_bf16 + r * n : nullptr);
  }
}

// Rows [r0, r1) of Backend::softmax_dropout_backward; scratch holds n floats.
inline void softmax_dropout_backward_rows(const float* y, const void* out, bool out_bf16, const float* gout, float* gx,
                                          int64_t r0, int64_t r1, int64_t n, float scale, float keep, bool accumulate,
                                          float* __restrict d) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* __restrict yr = y + r * n;
    const float* __restrict gr = gout + r * n;
    float* __restrict gxr = gx + r * n;
    if (out && out_bf16) {
      const uint16_t* __restrict o = static_cast<const uint16_t*>(out) + r * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) d[j] = (o[j] & 0x7FFFu) != 0 ? gr[j] * keep : 0.f;
    } else if (out) {
      const float* __restrict o = static_cast<const float*>(out) + r * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) d[j] = o[j] != 0.f ? gr[j] * keep : 0.f;
    } else {
      std::copy(gr, gr + n, d);
    }
    float dot = 0.f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < n; ++j) dot += d[j] * yr[j];
    if (accumulate) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) gxr[j] += scale * yr[j] * (d[j] - dot);
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) gxr[j] = scale * yr[j] * (d[j] - dot);
    }
  }
}

}  // namespace hr::cpu
