// Per-row routines (softmax, log-softmax, layer norm, cross-entropy) and the AdamW update, shared by every backend.
//
// A row is worked on by a group of lanes: lane `first` of `stride` lanes handles elements first, first + stride, ...
// of the row, and `sum` / `max` combine the lanes' partial results, every lane getting the total. The CPU backend runs
// a row on one lane (SerialLanes); the CUDA backend on a warp or a block of threads (kernels/cuda/lanes.cuh). A lane
// writes only its own elements and reads another lane's only after a sum or max, which orders the two.
#pragma once

#include "kernels/math/bf16.h"
#include "kernels/math/exp.h"
#include "kernels/math/hd.h"
#include "kernels/math/random.h"

namespace hr::math {

// One lane: the whole row, sums as they are.
struct SerialLanes {
  static constexpr int64_t first = 0, stride = 1;
  HR_HD static float sum(float v) { return v; }
  HR_HD static float max(float v) { return v; }
};

// Where softmax_dropout_row's dropout factors come from: drop(j) is element j's factor, 1/(1-p) or 0. drop.draw_row(n)
// is called once a row, after the probabilities and before any drop(j): the CPU's whole-row draw (cpu::RowDropout)
// ran up to 15% slower ahead of the softmax's passes.
// No dropout: the multiply by 1 folds away.
struct NoDropout {
  HR_HD void draw_row(int64_t) const {}
  HR_HD float operator()(int64_t) const { return 1.f; }
};
// Drawn element by element, element j of the row being element i0 + j of the stream: for lanes that own scattered
// elements of a row (the GPU's). A stream without dropout gives 1 everywhere.
struct DrawnDropout {
  DropoutFactors drop;
  uint64_t i0;
  HR_HD void draw_row(int64_t) const {}
  HR_HD float operator()(int64_t j) const { return drop(i0 + static_cast<uint64_t>(j)); }
};

namespace detail {

HR_HD void put(float* out, int64_t j, float v) { out[j] = v; }
HR_HD void put(uint16_t* out_bf16, int64_t j, float v) { out_bf16[j] = to_bf16(v); }

// p = prob(j) into y (KeepY), p * drop(j) into out (f32, or bf16 bits)
template <bool KeepY, class Lanes, class Prob, class Drop, class Out>
HR_HD void write_probs(const Lanes& g, int64_t n, const Prob& prob, float* y, const Drop& drop, Out* out) {
  HR_SIMD
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float p = prob(j);
    if constexpr (KeepY) y[j] = p;
    put(out, j, p * drop(j));
  }
}

// softmax_dropout_row's last pass: y unless it is null, out or out_bf16 unless null
template <class Lanes, class Prob, class Drop>
HR_HD void write_probs(const Lanes& g, int64_t n, const Prob& prob, float* y, const Drop& drop, float* out,
                       uint16_t* out_bf16) {
  if (y && out) write_probs<true>(g, n, prob, y, drop, out);
  else if (y && out_bf16) write_probs<true>(g, n, prob, y, drop, out_bf16);
  else if (out) write_probs<false>(g, n, prob, y, drop, out);
  else if (out_bf16) write_probs<false>(g, n, prob, y, drop, out_bf16);
  else {
    HR_SIMD
    for (int64_t j = g.first; j < n; j += g.stride) y[j] = prob(j);
  }
}

template <bool Masked, class Lanes, class Drop>
HR_HD void softmax_dropout_masked(const Lanes& g, const float* x, const float* mask, float* y, float* out,
                                  uint16_t* out_bf16, int64_t n, float scale, const Drop& drop, float* exps) {
  const auto score = [=](int64_t j) { return scale * x[j] + (Masked ? mask[j] : 0.f); };
  float mx = -INFINITY;
  HR_SIMD_MAX(mx)
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float s = score(j);
    mx = mx < s ? s : mx;
  }
  mx = g.max(mx);
  float sum = 0.f;
  if (exps) {
    HR_SIMD_SUM(sum)
    for (int64_t j = g.first; j < n; j += g.stride) {
      const float e = exp_or_zero(score(j) - mx);
      exps[j] = e;
      sum += e;
    }
  } else {
    HR_SIMD_SUM(sum)
    for (int64_t j = g.first; j < n; j += g.stride) sum += exp_or_zero(score(j) - mx);
  }
  const float inv = 1.f / g.sum(sum);
  // Kept exps become the probabilities in place, in a pass of their own: folded into the last pass (one read of y
  // fewer) the CPU ran 1.3x slower with y and out f32 rows of 512.
  if (exps) {
    HR_SIMD
    for (int64_t j = g.first; j < n; j += g.stride) exps[j] *= inv;
  }
  float* y_left = exps == y ? nullptr : y;
  if (!y_left && !out && !out_bf16) return;
  drop.draw_row(n);
  if (exps) write_probs(g, n, [=](int64_t j) { return exps[j]; }, y_left, drop, out, out_bf16);
  else write_probs(g, n, [=](int64_t j) { return exp_or_zero(score(j) - mx) * inv; }, y_left, drop, out, out_bf16);
}

// gx (+)= scale * y * (d(j) - <d, y>), d(j) the gradient of output j
template <class Lanes, class Grad>
HR_HD void softmax_backward_of(const Lanes& g, const float* y, const Grad& d, float* gx, int64_t n, float scale,
                               bool accumulate) {
  float dot = 0.f;
  HR_SIMD_SUM(dot)
  for (int64_t j = g.first; j < n; j += g.stride) dot += d(j) * y[j];
  dot = g.sum(dot);
  if (accumulate) {
    HR_SIMD
    for (int64_t j = g.first; j < n; j += g.stride) gx[j] += scale * y[j] * (d(j) - dot);
  } else {
    HR_SIMD
    for (int64_t j = g.first; j < n; j += g.stride) gx[j] = scale * y[j] * (d(j) - dot);
  }
}

}  // namespace detail

// p = softmax(scale * x + mask) over a row (mask may be null), written to y unless it is null, and p * drop(j) to out
// (f32) or out_bf16 unless both are null: softmax, and attention's weights with their dropout and rounding. Every
// backend's softmax. exps (n floats, which may be y) keeps the exps between the passes; null computes them again in
// the last pass, trading arithmetic for memory traffic (the GPU). Scores more than 87 below the row's maximum get
// probability 0, so the key mask's -1e9 gives exact zeros.
template <class Lanes, class Drop>
HR_HD void softmax_dropout_row(const Lanes& g, const float* x, const float* mask, float* y, float* out,
                               uint16_t* out_bf16, int64_t n, float scale, const Drop& drop, float* exps) {
  if (!y && !out && !out_bf16) return;
  if (mask) detail::softmax_dropout_masked<true>(g, x, mask, y, out, out_bf16, n, scale, drop, exps);
  else detail::softmax_dropout_masked<false>(g, x, mask, y, out, out_bf16, n, scale, drop, exps);
}

// gx (+)= scale * y * (gy - <gy, y>)
template <class Lanes>
HR_HD void softmax_backward_row(const Lanes& g, const float* y, const float* gy, float* gx, int64_t n, float scale,
                                bool accumulate) {
  detail::softmax_backward_of(g, y, [=](int64_t j) { return gy[j]; }, gx, n, scale, accumulate);
}

// Backend::softmax_dropout_backward's row: softmax_backward_row with gout * keep where the forward kept the weight
// (its output out, f32, or out_bf16, bf16 bits, is not 0) and 0 where it dropped it; both null: no dropout. d (n
// floats) holds those gradients between the passes, so that the sum adds in the same order for either output type
// (vectorised, the two loops would differ in width); null computes them in each pass (the GPU).
template <class Lanes>
HR_HD void softmax_dropout_backward_row(const Lanes& g, const float* y, const float* out, const uint16_t* out_bf16,
                                        const float* gout, float* gx, int64_t n, float scale, float keep,
                                        bool accumulate, float* d) {
  const auto kept_f32 = [=](int64_t j) { return out[j] != 0.f ? gout[j] * keep : 0.f; };
  const auto kept_bf16 = [=](int64_t j) { return (out_bf16[j] & 0x7FFFu) != 0 ? gout[j] * keep : 0.f; };
  if (!out && !out_bf16) {
    softmax_backward_row(g, y, gout, gx, n, scale, accumulate);
  } else if (d) {
    if (out) {
      HR_SIMD
      for (int64_t j = g.first; j < n; j += g.stride) d[j] = kept_f32(j);
    } else {
      HR_SIMD
      for (int64_t j = g.first; j < n; j += g.stride) d[j] = kept_bf16(j);
    }
    softmax_backward_row(g, y, d, gx, n, scale, accumulate);
  } else if (out) {
    detail::softmax_backward_of(g, y, kept_f32, gx, n, scale, accumulate);
  } else {
    detail::softmax_backward_of(g, y, kept_bf16, gx, n, scale, accumulate);
  }
}

namespace detail {

template <class Lanes, class Score>
HR_HD void log_softmax_of(const Lanes& g, const Score& score, float* y, int64_t n) {
  float mx = -INFINITY;
  HR_SIMD_MAX(mx)
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float v = score(j);
    mx = mx < v ? v : mx;
  }
  mx = g.max(mx);
  float sum = 0.f;
  HR_SIMD_SUM(sum)
  for (int64_t j = g.first; j < n; j += g.stride) sum += exp_or_zero(score(j) - mx);
  const float lse = mx + logf(g.sum(sum));
  HR_SIMD
  for (int64_t j = g.first; j < n; j += g.stride) y[j] = score(j) - lse;
}

}  // namespace detail

// y = log_softmax(x + mask); mask may be null. exp_or_zero rather than expf: with a 30522-word vocabulary the MLM
// loss's rows are a tenth of a pretraining step when expf and fmaxf stay scalar calls.
template <class Lanes>
HR_HD void log_softmax_row(const Lanes& g, const float* x, const float* mask, float* y, int64_t n) {
  if (mask) detail::log_softmax_of(g, [=](int64_t j) { return x[j] + mask[j]; }, y, n);
  else detail::log_softmax_of(g, [=](int64_t j) { return x[j]; }, y, n);
}

// gx (+)= gy - exp(y) * sum(gy); y <= 0 up to rounding, where exp_nonpositive still holds
template <class Lanes>
HR_HD void log_softmax_backward_row(const Lanes& g, const float* y, const float* gy, float* gx, int64_t n,
                                    bool accumulate) {
  float s = 0.f;
  HR_SIMD_SUM(s)
  for (int64_t j = g.first; j < n; j += g.stride) s += gy[j];
  s = g.sum(s);
  HR_SIMD
  for (int64_t j = g.first; j < n; j += g.stride) {
    const float v = gy[j] - exp_or_zero(y[j]) * s;
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
  if (s != 0.f) {
    HR_SIMD_SUM(sum)
    for (int64_t j = g.first; j < C; j += g.stride) sum += logp[j];
  }
  sum = g.sum(sum);  // also orders the lanes' logp writes before the read of logp[label]
  const float lp = label >= 0 && label < C ? logp[label] : NAN;
  return -(1.f - s) * lp - (s / static_cast<float>(C)) * sum;
}

// glogits (+)= gscale * (softmax - target), target = (1 - s) onehot(label) + s / C
template <class Lanes>
HR_HD void cross_entropy_backward_row(const Lanes& g, const float* logp, int32_t label, float* glogits, int64_t C,
                                      float s, float gscale, bool accumulate) {
  const float off = s / static_cast<float>(C);
  HR_SIMD
  for (int64_t j = g.first; j < C; j += g.stride) {
    const float t = off + (j == label ? 1.f - s : 0.f);
    const float v = gscale * (exp_or_zero(logp[j]) - t);
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
