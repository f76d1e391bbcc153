// The geometry of the CUDA fused attention kernels (kernels/cuda/attention.cu), for the host and the device: which
// head-size tile serves a head, how many queries and keys a block of each kernel holds, the shared memory that takes,
// how a block finds its (sequence, head, tile), where a head's element lies and which dropout counter a weight
// draws. Plain arithmetic without CUDA types, so that tests/test_cuda_backend.cpp checks it on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention_blocks.h"
#include "kernels/backend.h"
#include "kernels/math/hd.h"
#include "kernels/math/random.h"

namespace hr::cuda::attn {

// A block is 16 x 16 threads: thread t is (ty, tx) = (t / 16, t % 16). In every product a thread owns the elements
// (ty + 16 r, tx + 16 c) of the result: the 16 threads of one ty, a half warp, share their rows, so a row's maximum
// and sum are a shuffle across the half warp away, and neighbouring tx read neighbouring columns from shared memory.
constexpr int kThreads = 256;
constexpr int kSide = 16;

// Keys a forward block walks at a time: the CPU kernel's block (kernels/attention_blocks.h), so that under bf16 each
// block's weights are rounded against the same running maxima on both devices. One (kForwardKeys, kd) tile holds a
// block's keys, then its values: two such tiles would not fit beside the widest head's queries.
constexpr int kForwardKeys = kFusedAttentionKeyBlock;

// The largest dynamic shared memory a block may opt into on sm_90 (227 KiB).
constexpr size_t kMaxSharedBytes = 227 * 1024;

// The head-size tile of a head of Dh: the smallest of 16, 32, 64, 128 and 256 that holds it (the tiles are padded with
// zero columns past Dh); 0 for Dh outside [1, kCudaFusedAttentionMaxHeadDim].
HR_HD int head_tile(int64_t Dh) {
  if (Dh < 1 || Dh > kCudaFusedAttentionMaxHeadDim) return 0;
  int kd = 16;
  while (kd < Dh) kd *= 2;
  return kd;
}

// Queries a forward block holds (its keys: kForwardKeys); 32 for the widest tile, where 64 would take 225 of the
// 227 KiB of shared memory and 64 registers a thread for the output rows alone.
HR_HD constexpr int forward_queries(int kd) { return kd <= 128 ? 64 : 32; }
// Queries and keys of a backward block (both kernels hold as many of each: four (n, kd) tiles).
HR_HD constexpr int backward_rows(int kd) { return kd <= 128 ? 64 : 32; }

// Row stride (floats) of a tile with kd columns in shared memory: one more than kd, so that the 16 threads of a half
// warp reading one column of 16 different rows hit 16 different banks.
HR_HD constexpr int tile_stride(int kd) { return kd + 1; }

// Shared memory (floats) of the forward kernel: queries (Q, kd), keys then values (K, kd), the weights (Q, K) and the
// keys' mask (K). The widest tile: (32 + 128) * 257 + 32 * 129 + 128 floats, 177 KiB (opted into: attention.cu).
HR_HD constexpr int64_t forward_shared_floats(int kd) {
  return int64_t{forward_queries(kd)} * tile_stride(kd) + int64_t{kForwardKeys} * tile_stride(kd) +
         int64_t{forward_queries(kd)} * tile_stride(kForwardKeys) + kForwardKeys;
}
// Shared memory (floats) of either backward kernel: keys, values, queries and the output's gradient (n, kd) each, the
// weights after dropout and the scores' gradient (n, n) each, the keys' mask and three statistics of each query row
// (maximum, log of the sum, rowsum(gout * out)).
HR_HD constexpr int64_t backward_shared_floats(int kd) {
  const int64_t n = backward_rows(kd);
  return 4 * n * tile_stride(kd) + 2 * n * tile_stride(static_cast<int>(n)) + n + 3 * n;
}

// Tiles of `rows` that cover n (n >= 0).
HR_HD constexpr int64_t tiles_of(int64_t n, int64_t rows) { return (n + rows - 1) / rows; }

// Block `block` of a one-dimensional grid of (B*H) x tiles blocks, tiles of one (sequence, head) side by side: its
// sequence, head and first row.
struct BlockPlace {
  int64_t b, h, row0;
};
HR_HD BlockPlace block_place(int64_t block, int64_t tiles, int64_t rows, int64_t H) {
  const int64_t bh = block / tiles;
  return {bh / H, bh % H, block % tiles * rows};
}

// Element (row r, column c) of head h of sequence b in a (B, T, H*Dh) tensor.
HR_HD int64_t head_offset(int64_t T, int64_t H, int64_t Dh, int64_t b, int64_t h, int64_t r, int64_t c) {
  return ((b * T + r) * H + h) * Dh + c;
}

// Row i of head h of sequence b in the (B, H, Tq) statistics (stats holds 2 floats a row, rowsum(gout * out) 1).
HR_HD int64_t stats_row(int64_t H, int64_t Tq, int64_t b, int64_t h, int64_t i) { return (b * H + h) * Tq + i; }

// The element of weight (b, h, i, j) in the dropout stream: the unfused (B, H, Tq, Tk) weights' (FusedAttentionArgs).
HR_HD uint64_t weight_counter(int64_t H, int64_t Tq, int64_t Tk, int64_t b, int64_t h, int64_t i, int64_t j) {
  return static_cast<uint64_t>(((b * H + h) * Tq + i) * Tk + j);
}

// The dropout factors of one row's weights from key j0 on: weight j is element first + j of the stream, drawn as
// math::DropoutFactors::operator() draws it, with the hash key of the counter's high word computed once for the row
// (it changes at most once along a row of a block, where the low word wraps).
struct RowDraws {
  uint64_t seed, c0;
  uint32_t threshold, key0;
  float keep;
  HR_HD RowDraws(const math::DropoutFactors& d, uint64_t first)
      : seed(d.seed), c0(d.offset + first), threshold(d.threshold),
        key0(d.threshold ? math::dropout_key(d.seed, c0 >> 32) : 0u), keep(d.keep) {}
  HR_HD float operator()(int j) const {
    if (threshold == 0) return 1.f;
    const uint64_t c = c0 + static_cast<uint64_t>(j);
    const uint32_t key = (c >> 32) == (c0 >> 32) ? key0 : math::dropout_key(seed, c >> 32);
    return math::dropout_bits(key, static_cast<uint32_t>(c)) >= threshold ? keep : 0.f;
  }
};

}  // namespace hr::cuda::attn
