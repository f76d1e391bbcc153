// Per-row routines (softmax, log-softmax, layer norm, cross-entropy) and the AdamW update, shared by every backend.
//
// A row is worked on by a group of lanes: lane `first` of `stride` lanes handles elements first, first + stride, ...
// of the row, and `sum` / `max` combine the lanes' partial results, every lane getting the total. The CPU backend runs
// a row on one lane (SerialLanes); the CUDA backend on a warp or a block of threads (kernels/cuda/lanes.cuh). A lane
// writes only its own elements and reads another lane's only after a sum or max, which orders the two.
#pragma once

#include "kernels/math/bf16.h"
#include "kernels/math/hd.h"
#include "kernels/math/random.h"

namespace hr::math {

// One lane: the whole row, sums as they are.
struct SerialLanes {
  static constexpr int64_t first = 0, stride = 1;
  HR_HD static float sum(float v) { return v; }
  HR_HD static float max(float v) { return v; }
};

// gx (+)= scale * y * (gy - <gy, y>)
template <class Lanes>
HR_HD void softmax_backward_row(const Lanes& g, const float* y, const float* gy, float* gx, int64_t n, float scale,
                                bool accumulate) {
  float dot = 0.f;
  HR_SIMD_SUM(dot)
  for (int64_t j = g.first; j < n; j += g.stride) dot += gy[j] * y[j];
  dot = g.sum(dot);
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float v = scale * y[j] * (gy[j] - dot);
    gx[j] = accumulate ? gx[j] + v : v;
  }
}

// p = softmax(scale * x + mask) (mask may be null), written to y unless it is null, and p * drop(i0 + j) to out (f32)
// or out_bf16 unless null: softmax (no dropout, no out), and attention's weights and their dropout, in one pass. The
// exps are computed twice rather than stored, so the row needs no scratch (y may be null when nothing is recorded).
template <class Lanes>
HR_HD void softmax_dropout_row(const Lanes& g, const float* x, const float* mask, float* y, float* out,
                               uint16_t* out_bf16, int64_t n, float scale, const DropoutFactors& drop, uint64_t i0) {
  float mx = -INFINITY;
  for (int64_t j = g.first; j < n; j += g.stride) mx = fmaxf(mx, scale * x[j] + (mask ? mask[j] : 0.f));
  mx = g.max(mx);
  float sum = 0.f;
  for (int64_t j = g.first; j < n; j += g.stride) sum += expf(scale * x[j] + (mask ? mask[j] : 0.f) - mx);
  const float inv = 1.f / g.sum(sum);
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float p = expf(scale * x[j] + (mask ? mask[j] : 0.f) - mx) * inv;
    if (y) y[j] = p;
    const float o = p * drop(i0 + static_cast<uint64_t>(j));
    if (out) out[j] = o;
    if (out_bf16) out_bf16[j] = to_bf16(o);
  }
}

// The gradient of a dropped weight: gout * keep where the forward's output (f32 or bf16 bits) is not 0, else 0.
HR_HD float dropped_grad(float gout, const float* out, const uint16_t* out_bf16, int64_t j, float keep) {
  if (out) return out[j] != 0.f ? gout * keep : 0.f;
  if (out_bf16) return (out_bf16[j] & 0x7FFFu) != 0 ? gout * keep : 0.f;
  return gout;
}

// gx (+)= scale * y * (d - <d, y>) with d = dropped_grad(gout): Backend::softmax_dropout_backward's row
template <class Lanes>
HR_HD void softmax_dropout_backward_row(const Lanes& g, const float* y, const float* out, const uint16_t* out_bf16,
                                        const float* gout, float* gx, int64_t n, float scale, float keep,
                                        bool accumulate) {
  float dot = 0.f;
  for (int64_t j = g.first; j < n; j += g.stride) dot += dropped_grad(gout[j], out, out_bf16, j, keep) * y[j];
  dot = g.sum(dot);
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float v = scale * y[j] * (dropped_grad(gout[j], out, out_bf16, j, keep) - dot);
    gx[j] = accumulate ? gx[j] + v : v;
  }
}

// y = log_softmax(x + mask); mask may be null
template <class Lanes>
HR_HD void log_softmax_row(const Lanes& g, const float* x, const float* mask, float* y, int64_t n) {
  float mx = -INFINITY;
  for (int64_t j = g.first; j < n; j += g.stride) mx = fmaxf(mx, x[j] + (mask ? mask[j] : 0.f));
  mx = g.max(mx);
  float sum = 0.f;
  for (int64_t j = g.first; j < n; j += g.stride) sum += expf(x[j] + (mask ? mask[j] : 0.f) - mx);
  const float lse = mx + logf(g.sum(sum));
  for (int64_t j = g.first; j < n; j += g.stride) y[j] = x[j] + (mask ? mask[j] : 0.f) - lse;
}

// gx (+)= gy - exp(y) * sum(gy)
template <class Lanes>
HR_HD void log_softmax_backward_row(const Lanes& g, const float* y, const float* gy, float* gx, int64_t n,
                                    bool accumulate) {
  float s = 0.f;
  for (int64_t j = g.first; j < n; j += g.stride) s += gy[j];
  s = g.sum(s);
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float v = gy[j] - expf(y[j]) * s;
    gx[j] = accumulate ? gx[j] + v : v;
  }
}

// Layer norm of one row: y = (x - mean) * rstd * gamma + beta; returns mean and rstd for the backward pass. n > 0.
template <class Lanes>
HR_HD void layer_norm_row(const Lanes& g, const float* x, const float* gamma, const float* beta, float* y,
                          float* mean_out, float* rstd_out, int64_t n, float eps) {
  float mean = 0.f;
  HR_SIMD_SUM(mean)
  for (int64_t j = g.first; j < n; j += g.stride) mean += x[j];
  mean = g.sum(mean) / static_cast<float>(n);
  float var = 0.f;
  HR_SIMD_SUM(var)
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float d = x[j] - mean;
    var += d * d;
  }
  var = g.sum(var) / static_cast<float>(n);
  const float rstd = 1.f / sqrtf(var + eps);
  for (int64_t j = g.first; j < n; j += g.stride) y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
  if (g.first == 0) {
    *mean_out = mean;
    *rstd_out = rstd;
  }
}

// gx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)), with g = gy * gamma and xhat = (x - mean) * rstd.
// The parameter grads (ggamma += gy * xhat, gbeta += gy) are reduced over rows by the caller.
template <class Lanes>
HR_HD void layer_norm_backward_row(const Lanes& g, const float* x, const float* gamma, float mean, float rstd,
                                   const float* gy, float* gx, int64_t n, bool accumulate) {
  float mg = 0.f, mgx = 0.f;
  HR_SIMD_SUM(mg, mgx)
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float gj = gy[j] * gamma[j];
    mg += gj;
    mgx += gj * (x[j] - mean) * rstd;
  }
  mg = g.sum(mg) / static_cast<float>(n);
  mgx = g.sum(mgx) / static_cast<float>(n);
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float xhat = (x[j] - mean) * rstd;
    const float v = rstd * (gy[j] * gamma[j] - mg - xhat * mgx);
    gx[j] = accumulate ? gx[j] + v : v;
  }
}

// Cross-entropy of one row with label smoothing s over C classes; writes logp, returns the loss (NaN for a label
// outside [0, C), which the backends report as an error).
template <class Lanes>
HR_HD float cross_entropy_row(const Lanes& g, const float* logits, int32_t label, float* logp, int64_t C, float s) {
  log_softmax_row(g, logits, nullptr, logp, C);
  float sum = 0.f;
  for (int64_t j = g.first; j < C; j += g.stride) sum += logp[j];
  sum = g.sum(sum);  // also orders the lanes' logp writes before the read of logp[label]
  const float lp = label >= 0 && label < C ? logp[label] : NAN;
  return -(1.f - s) * lp - (s / static_cast<float>(C)) * sum;
}

// glogits (+)= gscale * (softmax - target), target = (1 - s) onehot(label) + s / C
template <class Lanes>
HR_HD void cross_entropy_backward_row(const Lanes& g, const float* logp, int32_t label, float* glogits, int64_t C,
                                      float s, float gscale, bool accumulate) {
  const float off = s / static_cast<float>(C);
  for (int64_t j = g.first; j < C; j += g.stride) {
    const float t = off + (j == label ? 1.f - s : 0.f);
    const float v = gscale * (expf(logp[j]) - t);
    glogits[j] = accumulate ? glogits[j] + v : v;
  }
}

// AdamW (Loshchilov & Hutter): decoupled decay p -= lr * wd * p, then the Adam step with bias corrections
// bc1 = 1 - beta1^t, bc2 = 1 - beta2^t.
HR_HD void adamw_update(float& p, float g, float& m, float& v, float lr, float beta1, float beta2, float eps,
                        float wd, float bc1, float bc2) {
  p -= lr * wd * p;
  m = beta1 * m + (1.f - beta1) * g;
  v = beta2 * v + (1.f - beta2) * g * g;
  const float mhat = m / bc1;
  const float vhat = v / bc2;
  p -= lr * mhat / (sqrtf(vhat) + eps);
}

}  // namespace hr::math
