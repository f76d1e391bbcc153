#include "kernels/cpu/cpu_attention.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_blocks.h"
#include "kernels/backend_checks.h"
#include "kernels/base/error.h"
#include "kernels/cpu/cpu_dropout.h"
#include "kernels/cpu/cpu_parallel.h"
#include "kernels/math/bf16.h"
#include "kernels/math/exp.h"
#include "kernels/math/random.h"

namespace hr::cpu {

namespace {

constexpr int64_t kKeys = kFusedAttentionKeyBlock;  // keys a block: the CUDA forward walks the same ones
constexpr int64_t kQueries = 64;                    // queries a forward task (and a backward inner block)

// Rows [i0, i0 + rows) of head h of sequence b in a (B, T, H*Dh) tensor, widened to f32 (dst: rows x Dh); `round`
// rounds f32 values to bf16 first (an f32 operand of a bf16 product).
void load_head_rows(const void* src, bool bf16, bool round, int64_t b, int64_t h, int64_t i0, int64_t rows,
                    int64_t T, int64_t H, int64_t Dh, float* __restrict dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = ((b * T + i0 + r) * H + h) * Dh;
    float* __restrict d = dst + r * Dh;
    if (bf16) {
      const uint16_t* __restrict s = static_cast<const uint16_t*>(src) + at;
      for (int64_t c = 0; c < Dh; ++c) d[c] = math::from_bf16(s[c]);
    } else if (round) {
      const float* __restrict s = static_cast<const float*>(src) + at;
      for (int64_t c = 0; c < Dh; ++c) d[c] = math::from_bf16(math::to_bf16(s[c]));
    } else {
      std::copy(static_cast<const float*>(src) + at, static_cast<const float*>(src) + at + Dh, d);
    }
  }
}

// Rows [i0, i0 + rows) of head h as an f32 matrix with its leading dimension: the tensor's own rows (H*Dh apart)
// when they are f32 and need no rounding, else a copy widened (or rounded) into buf (rows x Dh).
struct HeadRows {
  const float* at;
  int64_t ld;
};
HeadRows head_rows(const void* src, bool bf16, bool round, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t T,
                   int64_t H, int64_t Dh, float* buf) {
  if (!bf16 && !round) return {static_cast<const float*>(src) + ((b * T + i0) * H + h) * Dh, H * Dh};
  load_head_rows(src, bf16, round, b, h, i0, rows, T, H, Dh, buf);
  return {buf, Dh};
}

// C (m, n) = op(A) op(B) + beta C, row-major, by oneDNN's sgemm: its blocked micro-kernels run these block products
// at several times the rate of plain loops (docs/performance.md). Called inside our parallel tasks, it runs on the
// calling thread.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda, const float* B, int64_t ldb,
          float beta, float* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.f, A, lda, B, ldb, beta, C, ldc);
  HR_CHECK(st == dnnl_success, "attention: dnnl_sgemm failed with status " + std::to_string(static_cast<int>(st)));
}

// Heads narrower than this take the loops below instead of sgemm, with the keys as the vectorised dimension: for a
// 64 x 128 x 4 product a call's fixed cost exceeds its arithmetic (64 heads of 4 stepped at 1.75x one head of 256
// through sgemm, 1.4x through these loops: scripts/heads-equal-flops.sh, docs/performance.md).
constexpr int64_t kNarrow = 16;

// Rows [j0, j0 + n) of head h transposed into t (Dh, kKeys), zero past n (Dh < kNarrow).
void load_transposed(const void* src, bool bf16, bool round, int64_t b, int64_t h, int64_t j0, int64_t n, int64_t T,
                     int64_t H, int64_t Dh, float* __restrict t) {
  std::fill(t, t + Dh * kKeys, 0.f);
  float row[kNarrow];
  for (int64_t j = 0; j < n; ++j) {
    load_head_rows(src, bf16, round, b, h, j0 + j, 1, T, H, Dh, row);
    for (int64_t c = 0; c < Dh; ++c) t[c * kKeys + j] = row[c];
  }
}

// The narrow loops below run over a block's keys rounded up to this many (a vector of floats; past the keys, t, mt
// and w hold zeros): a block of 64 keys (T = 64) costs half a full one.
constexpr int64_t kLanes = 16;
int64_t lanes_up(int64_t nk) { return (nk + kLanes - 1) / kLanes * kLanes; }

// Reductions over a row of scores: 16 partial results a lane, then a tree of vector operations. An omp simd
// reduction ends in 16 scalar operations one after another (GCC 12), which at 64 heads of 4 (a reduction every
// 64 products) cost more than the products.
template <int W, class Op>
float tree(float* x, Op op) {
  if constexpr (W == 1) {
    return x[0];
  } else {
#pragma omp simd
    for (int l = 0; l < W / 2; ++l) x[l] = op(x[l], x[l + W / 2]);
    return tree<W / 2>(x, op);
  }
}
template <class Op>
float lane_reduce(const float* __restrict s, int64_t n, float init, Op op) {
  float part[kLanes];
  std::fill(part, part + kLanes, init);
  int64_t j0 = 0;
  for (; j0 + kLanes <= n; j0 += kLanes) {
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) part[l] = op(part[l], s[j0 + l]);
  }
  for (int64_t j = j0; j < n; ++j) part[j - j0] = op(part[j - j0], s[j]);
  return tree<kLanes>(part, op);
}
float lane_max(const float* s, int64_t n, float m) {
  return lane_reduce(s, n, m, [](float a, float b) { return a < b ? b : a; });
}
float lane_sum(const float* s, int64_t n) {
  return lane_reduce(s, n, 0.f, [](float a, float b) { return a + b; });
}

// s[r][j0 + j] = sum_c x[r][c] t[c][j0 + j] for R rows of x (ldx apart) and kChunk keys of t (Dh, kKeys): the
// R x kChunk sums stay in registers while t streams past.
constexpr int64_t kChunk = 64;
static_assert(kKeys % kChunk == 0, "a key block is whole chunks");
template <int R>
void block_dots(const float* __restrict x, int64_t ldx, const float* __restrict t, int64_t Dh, float* __restrict s) {
  float acc[R][kChunk] = {};
  for (int64_t c = 0; c < Dh; ++c) {
    const float* __restrict tc = t + c * kKeys;
    for (int r = 0; r < R; ++r) {
      const float xr = x[r * ldx + c];
#pragma omp simd
      for (int64_t j = 0; j < kChunk; ++j) acc[r][j] += xr * tc[j];
    }
  }
  for (int r = 0; r < R; ++r) std::copy(acc[r], acc[r] + kChunk, s + r * kKeys);
}

// s (rows, kKeys) = x (rows, Dh; ldx apart) t, t (Dh, kKeys), for the first nk keys rounded up to kChunk (the rest
// of each row is left as it was)
void narrow_dots(const float* x, int64_t ldx, int64_t rows, const float* t, int64_t Dh, int64_t nk, float* s) {
  for (int64_t j0 = 0; j0 < nk; j0 += kChunk) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) block_dots<4>(x + r * ldx, ldx, t + j0, Dh, s + r * kKeys + j0);
    for (; r < rows; ++r) block_dots<1>(x + r * ldx, ldx, t + j0, Dh, s + r * kKeys + j0);
  }
}

// acc (rows, Dh) += w (rows, kKeys) mt^T, mt (Dh, kKeys), over the first n keys (a multiple of kLanes): one dot
// product a sum
void narrow_add_dots(const float* __restrict w, int64_t rows, const float* __restrict mt, int64_t Dh, int64_t n,
                     float* __restrict acc) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < Dh; ++c) {
      float part[kLanes] = {};
      for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) part[l] += w[r * kKeys + j0 + l] * mt[c * kKeys + j0 + l];
      }
      acc[r * Dh + c] += tree<kLanes>(part, [](float x, float y) { return x + y; });
    }
  }
}

// acct (Dh, kKeys) += x^T w for x (rows, Dh; ldx apart) and w (rows, kKeys), over the first n keys
void narrow_add_products_t(const float* __restrict w, int64_t rows, const float* __restrict x, int64_t ldx,
                           int64_t Dh, int64_t n, float* __restrict acct) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < Dh; ++c) {
      const float xc = x[r * ldx + c];
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) acct[c * kKeys + j] += xc * w[r * kKeys + j];
    }
  }
}

// exp(y) for y <= 0, exactly 0 more than 87 below: the unfused softmax's exp (kernels/math/rows.h)
using math::exp_or_zero;

// s[j] = scale * s[j] + mask[j] for j < n
template <bool Masked>
void scale_scores(float* __restrict s, const float* __restrict mask, int64_t n, float scale) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) s[j] = scale * s[j] + (Masked ? mask[j] : 0.f);
}

// s[j] = exp(s[j] - m) for j < n (sub: a further amount off the exponent), 0 for j in [n, kKeys).
// (s - m) first: a padded row's scores and maximum are both near -1e9, where only their difference is exact.
void exps(float* __restrict s, int64_t n, float m, float sub) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) s[j] = exp_or_zero((s[j] - m) - sub);
  std::fill(s + n, s + kKeys, 0.f);
}

// w[j] *= f[j] (dropout's factors, f null: none), then rounded to bf16 with `round`
void drop_round(float* __restrict w, const float* __restrict f, int64_t n, bool round) {
  if (f) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) w[j] *= f[j];
  }
  if (round) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) w[j] = math::from_bf16(math::to_bf16(w[j]));
  }
}

// The scores' gradient from the weights' one: ds[j] = scale * p[j] * (dp[j] f[j] - dsum) (f null: 1), rounded to
// bf16 with `round`; 0 past n
void score_grads(const float* __restrict p, float* __restrict dp, const float* __restrict f, int64_t n, float dsum,
                 float scale, bool round) {
  if (f) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dp[j] = scale * p[j] * (dp[j] * f[j] - dsum);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dp[j] = scale * p[j] * (dp[j] - dsum);
  }
  if (round) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dp[j] = math::from_bf16(math::to_bf16(dp[j]));
  }
  std::fill(dp + n, dp + kKeys, 0.f);
}

// The first counter of weight (b, h, i, j) in the dropout stream (FusedAttentionArgs)
uint64_t weight_counter(const FusedAttentionArgs& a, int64_t b, int64_t h, int64_t i, int64_t j) {
  return static_cast<uint64_t>(((b * a.H + h) * a.Tq + i) * a.Tk + j);
}

// One forward task: queries [i0, i0 + mq) of head h of sequence b. scratch: see attention_forward.
void forward_block(const FusedAttentionArgs& a, int64_t b, int64_t h, int64_t i0, int64_t mq, void* out, bool out_bf16,
                   float* stats, float* scratch) {
  const int64_t Dh = a.Dh, H = a.H;
  const bool bf16 = a.inputs == GemmInputs::BF16;
  const math::DropoutFactors drop(a.p_drop, a.seed, a.offset);
  float* qbuf = scratch;              // (kQueries, Dh) when q needs widening
  float* kbuf = qbuf + kQueries * Dh;  // (kKeys, Dh) likewise
  float* vbuf = kbuf + kKeys * Dh;     // (kKeys, Dh)
  float* acc = vbuf + kKeys * Dh;      // (kQueries, Dh)
  float* s = acc + kQueries * Dh;      // (kQueries, kKeys) scores, then weights
  float* f = s + kQueries * kKeys;     // (kKeys) dropout factors
  float* m = f + kKeys;                // (kQueries) running maxima
  float* l = m + kQueries;             // (kQueries) running sums
  const bool narrow = Dh < kNarrow;
  const HeadRows q = head_rows(a.q, bf16, false, b, h, i0, mq, a.Tq, H, Dh, qbuf);
  std::fill(acc, acc + mq * Dh, 0.f);
  std::fill(m, m + mq, -INFINITY);
  std::fill(l, l + mq, 0.f);
  for (int64_t j0 = 0; j0 < a.Tk; j0 += kKeys) {
    const int64_t nk = std::min(kKeys, a.Tk - j0);
    HeadRows k{kbuf, 0}, v{vbuf, 0};  // narrow: kbuf and vbuf hold them transposed, (Dh, kKeys)
    if (narrow) {
      load_transposed(a.k, bf16, false, b, h, j0, nk, a.Tk, H, Dh, kbuf);
      load_transposed(a.v, bf16, false, b, h, j0, nk, a.Tk, H, Dh, vbuf);
      narrow_dots(q.at, q.ld, mq, kbuf, Dh, nk, s);
    } else {
      k = head_rows(a.k, bf16, false, b, h, j0, nk, a.Tk, H, Dh, kbuf);
      v = head_rows(a.v, bf16, false, b, h, j0, nk, a.Tk, H, Dh, vbuf);
      gemm(false, true, mq, nk, Dh, q.at, q.ld, k.at, k.ld, 0.f, s, kKeys);  // s = q k^T
    }
    for (int64_t r = 0; r < mq; ++r) {
      float* sr = s + r * kKeys;
      if (a.mask) scale_scores<true>(sr, a.mask + b * a.Tk + j0, nk, a.scale);
      else scale_scores<false>(sr, nullptr, nk, a.scale);
      const float mx = lane_max(sr, nk, m[r]);
      const float shrink = exp_or_zero(m[r] - mx);  // 0 at the first block (m = -inf)
      exps(sr, nk, mx, 0.f);
      l[r] = l[r] * shrink + lane_sum(sr, lanes_up(nk));
      m[r] = mx;
      if (drop.threshold) dropout_factors(drop, weight_counter(a, b, h, i0 + r, j0), nk, f);
      drop_round(sr, drop.threshold ? f : nullptr, nk, bf16);
      if (shrink != 1.f)
        for (int64_t c = 0; c < Dh; ++c) acc[r * Dh + c] *= shrink;
    }
    if (narrow) narrow_add_dots(s, mq, vbuf, Dh, lanes_up(nk), acc);
    else gemm(false, false, mq, Dh, nk, s, kKeys, v.at, v.ld, 1.f, acc, Dh);  // acc += weights v
  }
  for (int64_t r = 0; r < mq; ++r) {
    const float inv = 1.f / l[r];
    const int64_t at = ((b * a.Tq + i0 + r) * H + h) * Dh;
    if (out_bf16) {
      uint16_t* o = static_cast<uint16_t*>(out) + at;
      for (int64_t c = 0; c < Dh; ++c) o[c] = math::to_bf16(acc[r * Dh + c] * inv);
    } else {
      float* o = static_cast<float*>(out) + at;
      for (int64_t c = 0; c < Dh; ++c) o[c] = acc[r * Dh + c] * inv;
    }
    float* st = stats + ((b * H + h) * a.Tq + i0 + r) * 2;
    st[0] = m[r];
    st[1] = std::log(l[r]);
  }
}

// One backward task: head h of sequence b, FlashAttention-2's loops (keys outer, their dk and dv summed in gk and gv
// rows; queries inner, dq summed over key blocks in a buffer of the head's rows). scratch: see attention_backward.
void backward_head(const FusedAttentionArgs& a, int64_t b, int64_t h, const void* out, bool out_bf16, const float* stats,
                   const float* gout, float* gq, float* gk, float* gv, float* scratch) {
  const int64_t Dh = a.Dh, H = a.H, Tq = a.Tq, ld = H * Dh;
  const bool bf16 = a.inputs == GemmInputs::BF16;
  const math::DropoutFactors drop(a.p_drop, a.seed, a.offset);
  float* qbuf = scratch;               // (Tq, Dh) when q needs widening
  float* gobuf = qbuf + Tq * Dh;       // (Tq, Dh) when gout needs rounding
  float* dq = gobuf + Tq * Dh;         // (Tq, Dh)
  float* dsum = dq + Tq * Dh;          // (Tq) rowsum(gout * out) = rowsum(dweights * weights)
  float* kbuf = dsum + Tq;             // (kKeys, Dh)
  float* vbuf = kbuf + kKeys * Dh;     // (kKeys, Dh)
  float* p = vbuf + kKeys * Dh;        // (kQueries, kKeys) weights
  float* pd = p + kQueries * kKeys;    // (kQueries, kKeys) weights after dropout
  float* dp = pd + kQueries * kKeys;   // (kQueries, kKeys) their gradient, then the scores'
  float* f = dp + kQueries * kKeys;    // (kKeys)
  float* dkt = f + kKeys;              // (Dh, kKeys) a narrow head's dk, transposed
  float* dvt = dkt + Dh * kKeys;       // (Dh, kKeys)
  const bool narrow = Dh < kNarrow;
  const HeadRows q = head_rows(a.q, bf16, false, b, h, 0, Tq, Tq, H, Dh, qbuf);
  const HeadRows go = head_rows(gout, false, bf16, b, h, 0, Tq, Tq, H, Dh, gobuf);
  load_head_rows(out, out_bf16, false, b, h, 0, Tq, Tq, H, Dh, dq);  // dq holds the output until it is zeroed
  for (int64_t i = 0; i < Tq; ++i) {
    const float* g = gout + ((b * Tq + i) * H + h) * Dh;
    float d = 0.f;
    for (int64_t c = 0; c < Dh; ++c) d += g[c] * dq[i * Dh + c];
    dsum[i] = d;
  }
  std::fill(dq, dq + Tq * Dh, 0.f);
  for (int64_t j0 = 0; j0 < a.Tk; j0 += kKeys) {
    const int64_t nk = std::min(kKeys, a.Tk - j0);
    HeadRows k{kbuf, 0}, v{vbuf, 0};  // narrow: transposed, (Dh, kKeys)
    if (narrow) {
      load_transposed(a.k, bf16, false, b, h, j0, nk, a.Tk, H, Dh, kbuf);
      load_transposed(a.v, bf16, false, b, h, j0, nk, a.Tk, H, Dh, vbuf);
    } else {
      k = head_rows(a.k, bf16, false, b, h, j0, nk, a.Tk, H, Dh, kbuf);
      v = head_rows(a.v, bf16, false, b, h, j0, nk, a.Tk, H, Dh, vbuf);
    }
    // this key block's dk and dv summed over the query blocks: in gk and gv's rows (ld apart), or narrow, transposed
    // in dkt and dvt (Dh, kKeys)
    float* dk = gk + ((b * a.Tk + j0) * H + h) * Dh;
    float* dv = gv + ((b * a.Tk + j0) * H + h) * Dh;
    if (narrow) {
      std::fill(dkt, dkt + Dh * kKeys, 0.f);
      std::fill(dvt, dvt + Dh * kKeys, 0.f);
    } else {
      for (int64_t j = 0; j < nk; ++j) {
        std::fill(dk + j * ld, dk + j * ld + Dh, 0.f);
        std::fill(dv + j * ld, dv + j * ld + Dh, 0.f);
      }
    }
    for (int64_t i0 = 0; i0 < Tq; i0 += kQueries) {
      const int64_t mq = std::min(kQueries, Tq - i0);
      const float* qi = q.at + i0 * q.ld;
      const float* goi = go.at + i0 * go.ld;
      if (narrow) {
        narrow_dots(qi, q.ld, mq, kbuf, Dh, nk, p);
        narrow_dots(goi, go.ld, mq, vbuf, Dh, nk, dp);
      } else {
        gemm(false, true, mq, nk, Dh, qi, q.ld, k.at, k.ld, 0.f, p, kKeys);     // scores
        gemm(false, true, mq, nk, Dh, goi, go.ld, v.at, v.ld, 0.f, dp, kKeys);  // dweights = gout v^T
      }
      for (int64_t r = 0; r < mq; ++r) {
        const float* st = stats + ((b * H + h) * Tq + i0 + r) * 2;
        float* pr = p + r * kKeys;
        if (a.mask) scale_scores<true>(pr, a.mask + b * a.Tk + j0, nk, a.scale);
        else scale_scores<false>(pr, nullptr, nk, a.scale);
        exps(pr, nk, st[0], st[1]);
        float* pdr = pd + r * kKeys;
        std::copy(pr, pr + kKeys, pdr);
        if (drop.threshold) dropout_factors(drop, weight_counter(a, b, h, i0 + r, j0), nk, f);
        drop_round(pdr, drop.threshold ? f : nullptr, nk, bf16);
        score_grads(pr, dp + r * kKeys, drop.threshold ? f : nullptr, nk, dsum[i0 + r], a.scale, bf16);
      }
      if (narrow) {
        const int64_t n = lanes_up(nk);
        narrow_add_products_t(pd, mq, goi, go.ld, Dh, n, dvt);
        narrow_add_dots(dp, mq, kbuf, Dh, n, dq + i0 * Dh);
        narrow_add_products_t(dp, mq, qi, q.ld, Dh, n, dkt);
      } else {
        gemm(true, false, nk, Dh, mq, pd, kKeys, goi, go.ld, 1.f, dv, ld);           // dv += weights^T gout
        gemm(false, false, mq, Dh, nk, dp, kKeys, k.at, k.ld, 1.f, dq + i0 * Dh, Dh);  // dq += dscores k
        gemm(true, false, nk, Dh, mq, dp, kKeys, qi, q.ld, 1.f, dk, ld);             // dk += dscores^T q
      }
    }
    if (narrow)
      for (int64_t j = 0; j < nk; ++j)
        for (int64_t c = 0; c < Dh; ++c) {
          dk[j * ld + c] = dkt[c * kKeys + j];
          dv[j * ld + c] = dvt[c * kKeys + j];
        }
  }
  for (int64_t i = 0; i < Tq; ++i) std::copy(dq + i * Dh, dq + (i + 1) * Dh, gq + ((b * Tq + i) * H + h) * Dh);
}

}  // namespace

void attention_forward(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats) {
  check_attention(a);
  const int64_t blocks = (a.Tq + kQueries - 1) / kQueries, tasks = a.B * a.H * blocks;
  const size_t scratch = static_cast<size_t>(2 * kQueries * a.Dh + 2 * kKeys * a.Dh + kQueries * kKeys + kKeys +
                                             2 * kQueries);
  parallel_for(tasks, 4 * kQueries * a.Tk * a.Dh, [&](int64_t t0, int64_t t1) {
    std::vector<float> buffer(scratch);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bh = t / blocks, i0 = (t % blocks) * kQueries;
      forward_block(a, bh / a.H, bh % a.H, i0, std::min(kQueries, a.Tq - i0), out, out_bf16, stats, buffer.data());
    }
  });
}

void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                        const float* gout, float* gq, float* gk, float* gv) {
  check_attention(a);
  const size_t scratch = static_cast<size_t>(3 * a.Tq * a.Dh + a.Tq + 4 * kKeys * a.Dh + 3 * kQueries * kKeys +
                                             kKeys);
  if (a.Tq == 0) {  // no query reads any key
    std::fill(gk, gk + a.B * a.Tk * a.H * a.Dh, 0.f);
    std::fill(gv, gv + a.B * a.Tk * a.H * a.Dh, 0.f);
    return;
  }
  parallel_for(a.B * a.H, 10 * a.Tq * a.Tk * a.Dh, [&](int64_t t0, int64_t t1) {
    std::vector<float> buffer(scratch);
    for (int64_t t = t0; t < t1; ++t)
      backward_head(a, t / a.H, t % a.H, out, out_bf16, stats, gout, gq, gk, gv, buffer.data());
  });
}

}  // namespace hr::cpu
