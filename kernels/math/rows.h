// Per-row routines (softmax, log-softmax, layer norm, cross-entropy) and the AdamW update, shared by every backend.
// Each takes one row by pointer and its length; a backend maps rows to threads (CPU) or blocks (CUDA).
#pragma once

#include "kernels/math/hd.h"

namespace hr::math {

// y = softmax(scale * x + mask); mask may be null
HR_HD void softmax_row(const float* x, const float* mask, float* y, int64_t n, float scale) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const float v = scale * x[j] + (mask ? mask[j] : 0.f);
    y[j] = v;
    mx = fmaxf(mx, v);
  }
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    const float e = expf(y[j] - mx);
    y[j] = e;
    sum += e;
  }
  const float inv = 1.f / sum;
  for (int64_t j = 0; j < n; ++j) y[j] *= inv;
}

// gx (+)= scale * y * (gy - <gy, y>)
HR_HD void softmax_backward_row(const float* y, const float* gy, float* gx, int64_t n, float scale, bool accumulate) {
  float dot = 0.f;
  HR_SIMD_SUM(dot)
  for (int64_t j = 0; j < n; ++j) dot += gy[j] * y[j];
  for (int64_t j = 0; j < n; ++j) {
    const float g = scale * y[j] * (gy[j] - dot);
    gx[j] = accumulate ? gx[j] + g : g;
  }
}

// y = log_softmax(x + mask); mask may be null
HR_HD void log_softmax_row(const float* x, const float* mask, float* y, int64_t n) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) mx = fmaxf(mx, x[j] + (mask ? mask[j] : 0.f));
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) sum += expf(x[j] + (mask ? mask[j] : 0.f) - mx);
  const float lse = mx + logf(sum);
  for (int64_t j = 0; j < n; ++j) y[j] = x[j] + (mask ? mask[j] : 0.f) - lse;
}

// gx (+)= gy - exp(y) * sum(gy)
HR_HD void log_softmax_backward_row(const float* y, const float* gy, float* gx, int64_t n, bool accumulate) {
  float s = 0.f;
  for (int64_t j = 0; j < n; ++j) s += gy[j];
  for (int64_t j = 0; j < n; ++j) {
    const float g = gy[j] - expf(y[j]) * s;
    gx[j] = accumulate ? gx[j] + g : g;
  }
}

// Layer norm of one row: y = (x - mean) * rstd * gamma + beta; returns mean and rstd for the backward pass.
HR_HD void layer_norm_row(const float* x, const float* gamma, const float* beta, float* y, float* mean_out,
                          float* rstd_out, int64_t n, float eps) {
  float mean = 0.f;
  HR_SIMD_SUM(mean)
  for (int64_t j = 0; j < n; ++j) mean += x[j];
  mean /= static_cast<float>(n);
  float var = 0.f;
  HR_SIMD_SUM(var)
  for (int64_t j = 0; j < n; ++j) {
    const float d = x[j] - mean;
    var += d * d;
  }
  var /= static_cast<float>(n);
  const float rstd = 1.f / sqrtf(var + eps);
  for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
  *mean_out = mean;
  *rstd_out = rstd;
}

// gx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)), with g = gy * gamma and xhat = (x - mean) * rstd.
// The parameter grads (ggamma += gy * xhat, gbeta += gy) are reduced over rows by the caller.
HR_HD void layer_norm_backward_row(const float* x, const float* gamma, float mean, float rstd, const float* gy,
                                   float* gx, int64_t n, bool accumulate) {
  float mg = 0.f, mgx = 0.f;
  HR_SIMD_SUM(mg, mgx)
  for (int64_t j = 0; j < n; ++j) {
    const float g = gy[j] * gamma[j];
    mg += g;
    mgx += g * (x[j] - mean) * rstd;
  }
  mg /= static_cast<float>(n);
  mgx /= static_cast<float>(n);
  for (int64_t j = 0; j < n; ++j) {
    const float xhat = (x[j] - mean) * rstd;
    const float v = rstd * (gy[j] * gamma[j] - mg - xhat * mgx);
    gx[j] = accumulate ? gx[j] + v : v;
  }
}

// Cross-entropy of one row with label smoothing s over C classes; writes logp, returns the loss.
HR_HD float cross_entropy_row(const float* logits, int32_t label, float* logp, int64_t C, float s) {
  log_softmax_row(logits, nullptr, logp, C);
  float sum = 0.f;
  for (int64_t j = 0; j < C; ++j) sum += logp[j];
  return -(1.f - s) * logp[label] - (s / static_cast<float>(C)) * sum;
}

// glogits (+)= gscale * (softmax - target), target = (1 - s) onehot(label) + s / C
HR_HD void cross_entropy_backward_row(const float* logp, int32_t label, float* g, int64_t C, float s, float gscale,
                                      bool accumulate) {
  const float off = s / static_cast<float>(C);
  for (int64_t j = 0; j < C; ++j) {
    const float t = off + (j == label ? 1.f - s : 0.f);
    const float v = gscale * (expf(logp[j]) - t);
    g[j] = accumulate ? g[j] + v : v;
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
