// Lane groups that run the shared row routines of kernels/math/rows.h on the GPU (device code, nvcc only): a block of
// threads per row for long rows, a warp per row for short ones. launch_rows picks one by row length.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/launch.cuh"

namespace hr::cuda {

// One row per block; `smem` holds the 32 partials of a block reduction.
struct BlockLanes {
  int64_t first, stride;
  float* smem;
  __device__ explicit BlockLanes(float* s) : first(threadIdx.x), stride(blockDim.x), smem(s) {}
  __device__ float sum(float v) const { return block_reduce(v, SumOp{}, 0.f, smem); }
  __device__ float max(float v) const { return block_reduce(v, MaxOp{}, -INFINITY, smem); }
  __device__ int64_t row0() const { return blockIdx.x; }
  __device__ int64_t row_step() const { return gridDim.x; }
};

// One row per warp. __syncwarp orders the lanes' writes before the reads that follow a reduction.
struct WarpLanes {
  int64_t first, stride = 32;
  __device__ explicit WarpLanes(float*) : first(threadIdx.x & 31u) {}
  __device__ float sum(float v) const {
    __syncwarp();
    return warp_reduce(v, SumOp{});
  }
  __device__ float max(float v) const {
    __syncwarp();
    return warp_reduce(v, MaxOp{});
  }
  __device__ int64_t row0() const { return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; }
  __device__ int64_t row_step() const { return (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5; }
};

// Rows of the lane group `lanes`; uniform across the group, so its reductions may be used inside.
#define HR_LANE_ROWS(lanes, r, rows) for (int64_t r = (lanes).row0(); r < (rows); r += (lanes).row_step())

// Rows up to this long go one to a warp (at most 16 elements a lane): a block per row would be a 32-thread block,
// which leaves half of an SM's thread slots empty (32 blocks an SM at most).
constexpr int64_t kWarpRowMax = 512;

// Calls launch(std::type_identity<Lanes>{}, blocks, threads) with the lane group for rows of length n.
template <class Launch>
void launch_rows(int64_t rows, int64_t n, Launch&& launch) {
  if (n <= kWarpRowMax) {
    const int64_t warps_per_block = kThreads / 32, blocks = (rows + warps_per_block - 1) / warps_per_block;
    launch(std::type_identity<WarpLanes>{}, row_blocks(blocks), static_cast<unsigned>(kThreads));
  } else {
    launch(std::type_identity<BlockLanes>{}, row_blocks(rows), row_threads(n));
  }
}

}  // namespace hr::cuda
