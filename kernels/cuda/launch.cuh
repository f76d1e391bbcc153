// Launch geometry and block-wide reductions shared by the kernels of the CUDA backend (device code, nvcc only).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace hr::cuda {

constexpr int kThreads = 256;       // elementwise kernels
constexpr int64_t kMaxBlocks = 8192;  // grid-stride loops cover the rest; enough to fill 132 SMs several times over

// Blocks for a grid-stride loop over n elements (n > 0).
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Threads of the block that reduces one row of length n: about four elements a thread, a power of two in [32, 1024].
inline unsigned row_threads(int64_t n) {
  unsigned t = 32;
  while (t < 1024 && 4 * static_cast<int64_t>(t) < n) t *= 2;
  return t;
}

// How many chunks a reduction of R elements for each of K outputs is cut into, so that the (output, chunk) threads
// fill the GPU; chunks hold at least 16 elements, and there are at most 65535 (the grid's y limit). R > 0.
inline int64_t reduction_chunks(int64_t K, int64_t R) {
  constexpr int64_t kTargetThreads = int64_t{1} << 18, kMinChunk = 16, kMaxChunks = 65535;
  int64_t chunks = (kTargetThreads + K - 1) / K;
  if (chunks > (R + kMinChunk - 1) / kMinChunk) chunks = (R + kMinChunk - 1) / kMinChunk;
  if (chunks > kMaxChunks) chunks = kMaxChunks;
  const int64_t len = (R + chunks - 1) / chunks;
  return (R + len - 1) / len;  // no empty chunk
}

// Blocks for a loop of one block per row (HR_ROW_LOOP); rows > 0.
inline unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20)); }

// Row loop for one-block-per-row kernels; uniform across the block, so block reductions may be used inside.
#define HR_ROW_LOOP(r, rows) for (int64_t r = blockIdx.x; r < (rows); r += gridDim.x)

// Grid-stride loop index for 1-d launches.
#define HR_GRID_STRIDE(i, n)                                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);        \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// The same with index type I, for kernels templated on it (with_index_type)
#define HR_GRID_STRIDE_AS(I, i, n)                                                                \
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                      \
       i += static_cast<I>(gridDim.x) * blockDim.x)

// Calls fn(I{}) with I = uint32_t when n fits in 31 bits (so that i + the grid's stride cannot wrap), else int64_t.
template <class Fn>
void with_index_type(int64_t n, Fn&& fn) {
  if (n < (int64_t{1} << 31)) {
    fn(uint32_t{});
  } else {
    fn(int64_t{});
  }
}

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};

// Butterfly reduction over a warp: every lane ends with the same value, combined in the same order.
template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduction over a block whose size is a multiple of 32; every thread gets the result. The order of combination is
// fixed by blockDim, so results are reproducible run to run. `smem` holds 32 values and may be reused right after.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity, T* smem) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // an earlier reduction may still be reading smem
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < (blockDim.x >> 5) ? smem[lane] : identity;
  return warp_reduce(v, op);
}

}  // namespace hr::cuda
