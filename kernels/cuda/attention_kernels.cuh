// The device code of the CUDA fused attention (kernels/cuda/attention.cu has the launchers and says what the kernels
// do). Device code only, without CUDA headers, in an unnamed namespace: nvcc compiles it in attention.cu, and
// tests/test_cuda_attention_emulated.cpp compiles it with the host compiler under tests/cuda_emulation.h, which runs
// each block's threads as host threads, so that the kernels run, and are held to the CPU kernel, without a GPU.
// Include it in one file of a program only.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/backend.h"
#include "kernels/base/error.h"
#include "kernels/cuda/attention_tiles.h"
#include "kernels/math/bf16.h"
#include "kernels/math/exp.h"  // exp_or_zero: the CPU kernel's exps, cut to 0 below -87
#include "kernels/math/random.h"

// Loops nvcc unrolls (fully, or four iterations at a time); the host compiler, which knows no such pragma, as it likes
#ifdef __CUDACC__
#define HR_UNROLL _Pragma("unroll")
#define HR_UNROLL_4 _Pragma("unroll 4")
#else
#define HR_UNROLL
#define HR_UNROLL_4
#endif

// The kernels' dynamic shared memory, as a float array `name`; the emulation declares it its own way.
#ifndef HR_ATTENTION_SHARED
#define HR_ATTENTION_SHARED(name) extern __shared__ float name[]
#endif

namespace hr::cuda {
namespace {

using attn::kSide;
using attn::RowDraws;

// FusedAttentionArgs as the kernels read them
struct Params {
  int64_t B, H, Tq, Tk, Dh;
  bool bf16;  // q, k and v hold bf16 bits; every product reads bf16 operands
  const void* q;
  const void* k;
  const void* v;
  const float* mask;  // (B, Tk) or null
  float scale;
  math::DropoutFactors drop;
};

Params params_of(const FusedAttentionArgs& a) {
  return Params{a.B, a.H, a.Tq, a.Tk, a.Dh, a.inputs == GemmInputs::BF16, a.q, a.k, a.v, a.mask, a.scale,
                math::DropoutFactors(a.p_drop, a.seed, a.offset)};
}

// Element `at` of an operand widened to f32: bf16 bits or an f32 value
__device__ float load(const void* src, bool bf16, int64_t at) {
  return bf16 ? math::from_bf16(static_cast<const uint16_t*>(src)[at]) : static_cast<const float*>(src)[at];
}

// x rounded to bf16 (and widened back) when `round`: a value as a bf16 product reads it
__device__ float round_if(float x, bool round) { return round ? math::from_bf16(math::to_bf16(x)) : x; }

// The maximum and the sum over the 16 threads of a half warp, the threads of one ty, which share their rows; every
// thread of the warp must call them together (the shuffles name the whole warp). An XOR below 16 stays in the half.
__device__ float half_warp_max(float v) {
  HR_UNROLL
  for (int o = kSide / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float half_warp_sum(float v) {
  HR_UNROLL
  for (int o = kSide / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Rows [r0, r0 + n) of head h of sequence b of a (B, T, H*Dh) operand into the (Rows, KD) tile `tile` (row stride
// tile_stride(KD)), widened to f32 and, with `round`, rounded to bf16 first; zero past n rows and past Dh columns.
// Every thread of the block takes part; consecutive threads read consecutive columns of a row.
template <int KD, int Rows>
__device__ void load_tile(float* tile, const void* src, bool bf16, bool round, int64_t b, int64_t h, int64_t r0, int n,
                          int64_t T, int64_t H, int64_t Dh) {
  constexpr int P = attn::tile_stride(KD);
  for (int e = threadIdx.x; e < Rows * KD; e += attn::kThreads) {
    const int r = e / KD, c = e % KD;
    float x = 0.f;
    if (r < n && c < Dh) x = round_if(load(src, bf16, attn::head_offset(T, H, Dh, b, h, r0 + r, c)), round);
    tile[r * P + c] = x;
  }
}

// The keys' mask of keys [j0, j0 + n) of sequence b into mask_tile (Rows), 0 past n and without a mask
template <int Rows>
__device__ void load_mask(float* mask_tile, const float* mask, int64_t b, int64_t Tk, int64_t j0, int n) {
  for (int j = threadIdx.x; j < Rows; j += attn::kThreads) mask_tile[j] = mask && j < n ? mask[b * Tk + j0 + j] : 0.f;
}

// ---------------------------------------------------------------- forward

template <int KD>
__global__ void __launch_bounds__(attn::kThreads) forward_kernel(Params p, void* out, bool out_bf16, float* stats) {
  constexpr int Q = attn::forward_queries(KD), K = attn::kForwardKeys;
  constexpr int P = attn::tile_stride(KD), PS = attn::tile_stride(K);
  constexpr int RI = Q / kSide, RJ = K / kSide, RC = KD / kSide;  // a thread's rows, keys and columns
  HR_ATTENTION_SHARED(smem);
  float* qs = smem;            // (Q, KD) the block's queries
  float* kvs = qs + Q * P;     // (K, KD) a block of keys, then their values
  float* ws = kvs + K * P;     // (Q, K) the weights after dropout (and bf16's rounding), as the product reads them
  float* ms = ws + Q * PS;     // (K) the keys' mask
  const int ty = static_cast<int>(threadIdx.x) / kSide, tx = static_cast<int>(threadIdx.x) % kSide;
  const attn::BlockPlace at = attn::block_place(blockIdx.x, attn::tiles_of(p.Tq, Q), Q, p.H);
  const int64_t b = at.b, h = at.h, i0 = at.row0;
  const int mq = static_cast<int>(p.Tq - i0 < Q ? p.Tq - i0 : Q);
  load_tile<KD, Q>(qs, p.q, p.bf16, false, b, h, i0, mq, p.Tq, p.H, p.Dh);

  float acc[RI][RC], m[RI], l[RI];  // the rows' unnormalised outputs, running maxima and sums
  HR_UNROLL
  for (int ii = 0; ii < RI; ++ii) {
    m[ii] = -INFINITY;
    l[ii] = 0.f;
    HR_UNROLL
    for (int cc = 0; cc < RC; ++cc) acc[ii][cc] = 0.f;
  }
  for (int64_t j0 = 0; j0 < p.Tk; j0 += K) {
    const int nk = static_cast<int>(p.Tk - j0 < K ? p.Tk - j0 : K);
    __syncthreads();  // every thread is done with the previous block's values, weights and mask (and the first time:
                      // the queries are in place once the sync below has passed)
    load_tile<KD, K>(kvs, p.k, p.bf16, false, b, h, j0, nk, p.Tk, p.H, p.Dh);
    load_mask<K>(ms, p.mask, b, p.Tk, j0, nk);
    __syncthreads();

    float s[RI][RJ];  // scores of rows ty + 16 ii, keys tx + 16 jj
    HR_UNROLL
    for (int ii = 0; ii < RI; ++ii)
      HR_UNROLL
      for (int jj = 0; jj < RJ; ++jj) s[ii][jj] = 0.f;
    HR_UNROLL_4
    for (int c = 0; c < KD; ++c) {
      float qv[RI], kv[RJ];
      HR_UNROLL
      for (int ii = 0; ii < RI; ++ii) qv[ii] = qs[(ty + kSide * ii) * P + c];
      HR_UNROLL
      for (int jj = 0; jj < RJ; ++jj) kv[jj] = kvs[(tx + kSide * jj) * P + c];
      HR_UNROLL
      for (int ii = 0; ii < RI; ++ii)
        HR_UNROLL
        for (int jj = 0; jj < RJ; ++jj) s[ii][jj] += qv[ii] * kv[jj];
    }

    // the online softmax of each row, as the CPU kernel runs it: the block's maximum with the running one, the
    // running sum and output shrunk by exp(old - new maximum), the block's exps summed before dropout
    HR_UNROLL
    for (int ii = 0; ii < RI; ++ii) {
      const int i = ty + kSide * ii;
      float mx = m[ii];
      HR_UNROLL
      for (int jj = 0; jj < RJ; ++jj) {
        const int j = tx + kSide * jj;
        s[ii][jj] = p.scale * s[ii][jj] + ms[j];
        if (j < nk) mx = fmaxf(mx, s[ii][jj]);
      }
      mx = half_warp_max(mx);
      const float shrink = math::exp_or_zero(m[ii] - mx);  // 0 at the first block (m = -inf)
      const RowDraws drop(p.drop, attn::weight_counter(p.H, p.Tq, p.Tk, b, h, i0 + i, j0));
      float sum = 0.f;
      HR_UNROLL
      for (int jj = 0; jj < RJ; ++jj) {
        const int j = tx + kSide * jj;
        // (s - max) first: a padded row's scores and maximum are both near -1e9, where only their difference is exact
        float w = j < nk ? math::exp_or_zero(s[ii][jj] - mx) : 0.f;
        sum += w;
        if (j < nk) w = round_if(w * drop(j), p.bf16);
        ws[i * PS + j] = w;
      }
      l[ii] = l[ii] * shrink + half_warp_sum(sum);
      m[ii] = mx;
      HR_UNROLL
      for (int cc = 0; cc < RC; ++cc) acc[ii][cc] *= shrink;
    }
    __syncthreads();  // the weights are written, and every thread is done with the keys
    load_tile<KD, K>(kvs, p.v, p.bf16, false, b, h, j0, nk, p.Tk, p.H, p.Dh);
    __syncthreads();

    HR_UNROLL_4
    for (int j = 0; j < K; ++j) {
      float wv[RI], vv[RC];
      HR_UNROLL
      for (int ii = 0; ii < RI; ++ii) wv[ii] = ws[(ty + kSide * ii) * PS + j];
      HR_UNROLL
      for (int cc = 0; cc < RC; ++cc) vv[cc] = kvs[j * P + tx + kSide * cc];
      HR_UNROLL
      for (int ii = 0; ii < RI; ++ii)
        HR_UNROLL
        for (int cc = 0; cc < RC; ++cc) acc[ii][cc] += wv[ii] * vv[cc];
    }
  }

  HR_UNROLL
  for (int ii = 0; ii < RI; ++ii) {
    const int i = ty + kSide * ii;
    if (i >= mq) continue;
    const float inv = 1.f / l[ii];
    HR_UNROLL
    for (int cc = 0; cc < RC; ++cc) {
      const int c = tx + kSide * cc;
      if (c >= p.Dh) continue;
      const int64_t o = attn::head_offset(p.Tq, p.H, p.Dh, b, h, i0 + i, c);
      const float y = acc[ii][cc] * inv;
      if (out_bf16) static_cast<uint16_t*>(out)[o] = math::to_bf16(y);
      else static_cast<float*>(out)[o] = y;
    }
    if (tx == 0) {
      float* st = stats + attn::stats_row(p.H, p.Tq, b, h, i0 + i) * 2;
      st[0] = m[ii];
      st[1] = logf(l[ii]);
    }
  }
}

// ---------------------------------------------------------------- backward

// rowsum(gout * out) of each query row (b, h, i), at dsum[stats_row(b, h, i)]: a warp a row, gout as given (not
// rounded, as the CPU kernel sums it), out widened from bf16 when out_bf16
__global__ void row_dots_kernel(const void* out, bool out_bf16, const float* gout, float* dsum, int64_t B, int64_t H,
                                int64_t Tq, int64_t Dh) {
  const int64_t rows = B * H * Tq;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t r = first; r < rows; r += step) {  // the same r across the warp: the reduction below is uniform
    const int64_t bh = r / Tq, i = r % Tq;
    const int64_t row = attn::head_offset(Tq, H, Dh, bh / H, bh % H, i, 0);
    float d = 0.f;
    for (int64_t c = lane; c < Dh; c += 32) d += gout[row + c] * load(out, out_bf16, row + c);
    for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    if (lane == 0) dsum[r] = d;
  }
}

// A backward block's shared memory: four (N, KD) tiles, two (N, N) ones and the rows' statistics
template <int KD>
struct BackwardTiles {
  static constexpr int N = attn::backward_rows(KD), P = attn::tile_stride(KD), PS = attn::tile_stride(N);
  float *ks, *vs, *qs, *gs, *ws, *ds, *mask, *row_max, *row_log, *row_dot;
  __device__ explicit BackwardTiles(float* smem) {
    ks = smem;              // (N, KD) keys
    vs = ks + N * P;        // (N, KD) values
    qs = vs + N * P;        // (N, KD) queries
    gs = qs + N * P;        // (N, KD) the output's gradient, rounded to bf16 under bf16
    ws = gs + N * P;        // (N, N) weights after dropout (rounded under bf16), queries by keys
    ds = ws + N * PS;       // (N, N) the scores' gradient (rounded under bf16), queries by keys
    mask = ds + N * PS;     // (N) the keys' mask
    row_max = mask + N;     // (N) each query row's maximum (stats[0])
    row_log = row_max + N;  // (N) the log of its sum (stats[1])
    row_dot = row_log + N;  // (N) rowsum(gout * out)
  }
};

// Queries [i0, i0 + mq) of the tiles' query rows (queries, gout, statistics), 0 past mq. Every thread takes part.
template <int KD>
__device__ void load_queries(const BackwardTiles<KD>& t, const Params& p, const float* gout, const float* stats,
                             const float* dsum, int64_t b, int64_t h, int64_t i0, int mq) {
  constexpr int N = BackwardTiles<KD>::N;
  load_tile<KD, N>(t.qs, p.q, p.bf16, false, b, h, i0, mq, p.Tq, p.H, p.Dh);
  load_tile<KD, N>(t.gs, gout, false, p.bf16, b, h, i0, mq, p.Tq, p.H, p.Dh);
  for (int r = threadIdx.x; r < N; r += attn::kThreads) {
    const int64_t row = attn::stats_row(p.H, p.Tq, b, h, i0 + r);
    t.row_max[r] = r < mq ? stats[2 * row] : 0.f;
    t.row_log[r] = r < mq ? stats[2 * row + 1] : 0.f;
    t.row_dot[r] = r < mq ? dsum[row] : 0.f;
  }
}

// Keys [j0, j0 + nk) into the tiles' key rows (keys, values, mask), 0 past nk. Every thread takes part.
template <int KD>
__device__ void load_keys(const BackwardTiles<KD>& t, const Params& p, int64_t b, int64_t h, int64_t j0, int nk) {
  constexpr int N = BackwardTiles<KD>::N;
  load_tile<KD, N>(t.ks, p.k, p.bf16, false, b, h, j0, nk, p.Tk, p.H, p.Dh);
  load_tile<KD, N>(t.vs, p.v, p.bf16, false, b, h, j0, nk, p.Tk, p.H, p.Dh);
  load_mask<N>(t.mask, p.mask, b, p.Tk, j0, nk);
}

// The weights and the scores' gradient of the tiles' queries [i0, i0 + mq) against their keys [j0, j0 + nk), from
// the forward's statistics, as the CPU kernel computes them: w = exp((scale q.k + mask - max) - log sum), the weight
// after dropout w f (rounded under bf16) into t.ws when `weights`, and scale w (gout.v f - rowsum(gout * out))
// (rounded under bf16) into t.ds; both 0 outside the mq x nk corner. The caller syncs before (tiles loaded) and after.
template <int KD>
__device__ void score_grads(const BackwardTiles<KD>& t, const Params& p, int64_t b, int64_t h, int64_t i0, int mq,
                            int64_t j0, int nk, bool weights) {
  constexpr int N = BackwardTiles<KD>::N, P = BackwardTiles<KD>::P, PS = BackwardTiles<KD>::PS, R = N / kSide;
  const int ty = static_cast<int>(threadIdx.x) / kSide, tx = static_cast<int>(threadIdx.x) % kSide;
  float s[R][R], dp[R][R];  // scores and the weights' gradient of query rows ty + 16 ii, keys tx + 16 jj
  HR_UNROLL
  for (int ii = 0; ii < R; ++ii)
    HR_UNROLL
    for (int jj = 0; jj < R; ++jj) s[ii][jj] = dp[ii][jj] = 0.f;
  HR_UNROLL_4
  for (int c = 0; c < KD; ++c) {
    float qv[R], ov[R], kv[R], vv[R];
    HR_UNROLL
    for (int ii = 0; ii < R; ++ii) {
      qv[ii] = t.qs[(ty + kSide * ii) * P + c];
      ov[ii] = t.gs[(ty + kSide * ii) * P + c];
    }
    HR_UNROLL
    for (int jj = 0; jj < R; ++jj) {
      kv[jj] = t.ks[(tx + kSide * jj) * P + c];
      vv[jj] = t.vs[(tx + kSide * jj) * P + c];
    }
    HR_UNROLL
    for (int ii = 0; ii < R; ++ii)
      HR_UNROLL
      for (int jj = 0; jj < R; ++jj) {
        s[ii][jj] += qv[ii] * kv[jj];
        dp[ii][jj] += ov[ii] * vv[jj];
      }
  }
  HR_UNROLL
  for (int ii = 0; ii < R; ++ii) {
    const int i = ty + kSide * ii;
    const RowDraws drop(p.drop, attn::weight_counter(p.H, p.Tq, p.Tk, b, h, i0 + i, j0));
    HR_UNROLL
    for (int jj = 0; jj < R; ++jj) {
      const int j = tx + kSide * jj;
      float w = 0.f, g = 0.f;
      if (i < mq && j < nk) {
        const float x = p.scale * s[ii][jj] + t.mask[j];
        const float e = math::exp_or_zero((x - t.row_max[i]) - t.row_log[i]);
        const float f = drop(j);
        w = round_if(e * f, p.bf16);
        g = round_if(p.scale * e * (dp[ii][jj] * f - t.row_dot[i]), p.bf16);
      }
      if (weights) t.ws[i * PS + j] = w;
      t.ds[i * PS + j] = g;
    }
  }
}

// dk and dv of one block of keys: dv = sum over query blocks of weights^T gout, dk = sum of dscores^T q
template <int KD>
__global__ void __launch_bounds__(attn::kThreads) backward_kv_kernel(Params p, const float* gout, const float* stats,
                                                                      const float* dsum, float* gk, float* gv) {
  using Tiles = BackwardTiles<KD>;
  constexpr int N = Tiles::N, P = Tiles::P, PS = Tiles::PS, RJ = N / kSide, RC = KD / kSide;
  HR_ATTENTION_SHARED(smem);
  const Tiles t(smem);
  const int ty = static_cast<int>(threadIdx.x) / kSide, tx = static_cast<int>(threadIdx.x) % kSide;
  const attn::BlockPlace at = attn::block_place(blockIdx.x, attn::tiles_of(p.Tk, N), N, p.H);
  const int64_t b = at.b, h = at.h, j0 = at.row0;
  const int nk = static_cast<int>(p.Tk - j0 < N ? p.Tk - j0 : N);
  load_keys(t, p, b, h, j0, nk);

  float dk[RJ][RC], dv[RJ][RC];  // keys ty + 16 jr, columns tx + 16 cc
  HR_UNROLL
  for (int jr = 0; jr < RJ; ++jr)
    HR_UNROLL
    for (int cc = 0; cc < RC; ++cc) dk[jr][cc] = dv[jr][cc] = 0.f;
  for (int64_t i0 = 0; i0 < p.Tq; i0 += N) {
    const int mq = static_cast<int>(p.Tq - i0 < N ? p.Tq - i0 : N);
    __syncthreads();  // every thread is done with the previous query block (the first time: the keys are written)
    load_queries(t, p, gout, stats, dsum, b, h, i0, mq);
    __syncthreads();
    score_grads(t, p, b, h, i0, mq, j0, nk, true);
    __syncthreads();  // the weights and the scores' gradient are written
    HR_UNROLL_4
    for (int i = 0; i < N; ++i) {
      float wv[RJ], sv[RJ], ov[RC], qv[RC];
      HR_UNROLL
      for (int jr = 0; jr < RJ; ++jr) {
        wv[jr] = t.ws[i * PS + ty + kSide * jr];
        sv[jr] = t.ds[i * PS + ty + kSide * jr];
      }
      HR_UNROLL
      for (int cc = 0; cc < RC; ++cc) {
        ov[cc] = t.gs[i * P + tx + kSide * cc];
        qv[cc] = t.qs[i * P + tx + kSide * cc];
      }
      HR_UNROLL
      for (int jr = 0; jr < RJ; ++jr)
        HR_UNROLL
        for (int cc = 0; cc < RC; ++cc) {
          dv[jr][cc] += wv[jr] * ov[cc];
          dk[jr][cc] += sv[jr] * qv[cc];
        }
    }
  }
  // written whether or not any query came by: with Tq = 0 no query reads a key, and dk = dv = 0

  HR_UNROLL
  for (int jr = 0; jr < RJ; ++jr) {
    const int j = ty + kSide * jr;
    if (j >= nk) continue;
    HR_UNROLL
    for (int cc = 0; cc < RC; ++cc) {
      const int c = tx + kSide * cc;
      if (c >= p.Dh) continue;
      const int64_t o = attn::head_offset(p.Tk, p.H, p.Dh, b, h, j0 + j, c);
      gk[o] = dk[jr][cc];
      gv[o] = dv[jr][cc];
    }
  }
}

// dq of one block of queries: the sum over key blocks of dscores k
template <int KD>
__global__ void __launch_bounds__(attn::kThreads) backward_q_kernel(Params p, const float* gout, const float* stats,
                                                                     const float* dsum, float* gq) {
  using Tiles = BackwardTiles<KD>;
  constexpr int N = Tiles::N, P = Tiles::P, PS = Tiles::PS, RI = N / kSide, RC = KD / kSide;
  HR_ATTENTION_SHARED(smem);
  const Tiles t(smem);
  const int ty = static_cast<int>(threadIdx.x) / kSide, tx = static_cast<int>(threadIdx.x) % kSide;
  const attn::BlockPlace at = attn::block_place(blockIdx.x, attn::tiles_of(p.Tq, N), N, p.H);
  const int64_t b = at.b, h = at.h, i0 = at.row0;
  const int mq = static_cast<int>(p.Tq - i0 < N ? p.Tq - i0 : N);
  load_queries(t, p, gout, stats, dsum, b, h, i0, mq);

  float dq[RI][RC];  // query rows ty + 16 ii, columns tx + 16 cc
  HR_UNROLL
  for (int ii = 0; ii < RI; ++ii)
    HR_UNROLL
    for (int cc = 0; cc < RC; ++cc) dq[ii][cc] = 0.f;
  for (int64_t j0 = 0; j0 < p.Tk; j0 += N) {
    const int nk = static_cast<int>(p.Tk - j0 < N ? p.Tk - j0 : N);
    __syncthreads();  // every thread is done with the previous key block (the first time: the queries are written)
    load_keys(t, p, b, h, j0, nk);
    __syncthreads();
    score_grads(t, p, b, h, i0, mq, j0, nk, false);
    __syncthreads();  // the scores' gradient is written
    HR_UNROLL_4
    for (int j = 0; j < N; ++j) {
      float sv[RI], kv[RC];
      HR_UNROLL
      for (int ii = 0; ii < RI; ++ii) sv[ii] = t.ds[(ty + kSide * ii) * PS + j];
      HR_UNROLL
      for (int cc = 0; cc < RC; ++cc) kv[cc] = t.ks[j * P + tx + kSide * cc];
      HR_UNROLL
      for (int ii = 0; ii < RI; ++ii)
        HR_UNROLL
        for (int cc = 0; cc < RC; ++cc) dq[ii][cc] += sv[ii] * kv[cc];
    }
  }

  HR_UNROLL
  for (int ii = 0; ii < RI; ++ii) {
    const int i = ty + kSide * ii;
    if (i >= mq) continue;
    HR_UNROLL
    for (int cc = 0; cc < RC; ++cc) {
      const int c = tx + kSide * cc;
      if (c < p.Dh) gq[attn::head_offset(p.Tq, p.H, p.Dh, b, h, i0 + i, c)] = dq[ii][cc];
    }
  }
}

// ---------------------------------------------------------------- the passes

// Calls fn(std::integral_constant<int, KD>{}) for the head-size tile of a head of Dh; throws for a head too wide
template <class Fn>
void with_head_tile(int64_t Dh, Fn&& fn) {
  switch (attn::head_tile(Dh)) {
    case 16: return fn(std::integral_constant<int, 16>{});
    case 32: return fn(std::integral_constant<int, 32>{});
    case 64: return fn(std::integral_constant<int, 64>{});
    case 128: return fn(std::integral_constant<int, 128>{});
    case 256: return fn(std::integral_constant<int, 256>{});
    default:
      throw Error("attention: heads of " + std::to_string(Dh) + " dimensions; the CUDA kernel takes 1 to " +
                  std::to_string(kCudaFusedAttentionMaxHeadDim));
  }
}

// The kernels of each pass with their grids, handed to launch(kernel, blocks, threads, shared floats, args...):
// attention.cu queues them on the backend's stream, the emulation runs them on host threads. Arguments are checked
// (check_attention) by the caller.
template <class Launch>
void forward_pass(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats, Launch&& launch) {
  if (a.B == 0 || a.Tq == 0) return;
  const Params p = params_of(a);
  with_head_tile(a.Dh, [&](auto tile) {
    constexpr int KD = decltype(tile)::value;
    launch(forward_kernel<KD>, a.B * a.H * attn::tiles_of(a.Tq, attn::forward_queries(KD)), attn::kThreads,
           attn::forward_shared_floats(KD), p, out, out_bf16, stats);
  });
}

// dsum: scratch for B*H*Tq floats (rowsum(gout * out))
template <class Launch>
void backward_pass(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats, const float* gout,
                   float* gq, float* gk, float* gv, float* dsum, Launch&& launch) {
  if (a.B == 0) return;
  with_head_tile(a.Dh, [](auto) {});  // a head too wide throws before anything runs
  const Params p = params_of(a);
  const int64_t rows = a.B * a.H * a.Tq;
  if (rows > 0) {  // a warp a row, at most 8192 blocks (the rest by grid stride)
    const int64_t warps = attn::kThreads / 32, blocks = attn::tiles_of(rows, warps);
    launch(row_dots_kernel, blocks < 8192 ? blocks : 8192, attn::kThreads, 0, out, out_bf16, gout, dsum, a.B, a.H,
           a.Tq, a.Dh);
  }
  with_head_tile(a.Dh, [&](auto tile) {
    constexpr int KD = decltype(tile)::value;
    constexpr int N = attn::backward_rows(KD);
    const int64_t floats = attn::backward_shared_floats(KD);
    const float* row_dots = dsum;
    // with Tq = 0 this one still runs: it writes dk = dv = 0
    launch(backward_kv_kernel<KD>, a.B * a.H * attn::tiles_of(a.Tk, N), attn::kThreads, floats, p, gout, stats,
           row_dots, gk, gv);
    if (rows > 0)
      launch(backward_q_kernel<KD>, a.B * a.H * attn::tiles_of(a.Tq, N), attn::kThreads, floats, p, gout, stats,
             row_dots, gq);
  });
}

}  // namespace
}  // namespace hr::cuda
