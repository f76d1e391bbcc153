// The CUDA built-ins that the fused attention kernels use (kernels/cuda/attention_kernels.cuh), stood in for by host
// threads, so that tests/test_cuda_attention_emulated.cpp runs the kernels themselves without a GPU: a grid runs block
// after block, each block on the same blockDim.x host threads over one shared-memory buffer (filled with NaN before
// each block, so that a read of anything no thread of the block wrote shows); __syncthreads is a barrier of the
// block's threads and __shfl_xor_sync one of the warp's 32 that swaps values through memory. What it cannot show:
// speed, the device's own expf and contractions into FMA, and a race that the host threads' timing happens to hide.
// Include it before the kernels, in a file the host compiler compiles (no CUDA header may come before it).
#pragma once

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)

struct EmulatedDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local EmulatedDim3 threadIdx, blockIdx;
inline EmulatedDim3 blockDim, gridDim;

namespace hr::testing::emulation {

// What the threads of the block being run share
struct Block {
  std::barrier<> all;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<float> exchange;  // one value a thread, for the shuffles
  std::vector<float> shared;
  Block(unsigned threads, size_t shared_floats)
      : all(threads), exchange(threads), shared(shared_floats, NAN) {
    for (unsigned w = 0; w < (threads + 31) / 32; ++w)
      warps.push_back(std::make_unique<std::barrier<>>(threads - 32 * w < 32 ? threads - 32 * w : 32));
  }
};
inline thread_local Block* current = nullptr;  // the block of the calling thread

// kernel<<<grid, threads, shared_floats * sizeof(float)>>>(args...), block after block: one team of host threads runs
// every block, its shared memory filled with NaN again between blocks
template <class... Params, class... Args>
void emulate(void (*kernel)(Params...), int64_t grid, int threads, int64_t shared_floats, const Args&... args) {
  gridDim = {static_cast<unsigned>(grid), 1, 1};
  blockDim = {static_cast<unsigned>(threads), 1, 1};
  Block block(static_cast<unsigned>(threads), static_cast<size_t>(shared_floats));
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      current = &block;
      threadIdx = {static_cast<unsigned>(t), 0, 0};
      for (int64_t b = 0; b < grid; ++b) {
        blockIdx = {static_cast<unsigned>(b), 0, 0};
        kernel(args...);
        block.all.arrive_and_wait();  // every thread is done with the block
        if (t == 0) std::fill(block.shared.begin(), block.shared.end(), NAN);
        block.all.arrive_and_wait();
      }
    });
  for (std::thread& t : team) t.join();
}

// launch(kernel, blocks, threads, shared floats, args...) as the kernels' passes call it
struct EmulatedLaunch {
  template <class... Params, class... Args>
  void operator()(void (*kernel)(Params...), int64_t blocks, int threads, int64_t floats, const Args&... args) const {
    emulate(kernel, blocks, threads, floats, args...);
  }
};

}  // namespace hr::testing::emulation

inline void __syncthreads() { hr::testing::emulation::current->all.arrive_and_wait(); }

// Every lane of the warp calls it together, as on the device (the kernels shuffle in warp-uniform code only)
inline float __shfl_xor_sync(unsigned /*mask*/, float v, int lane_mask) {
  hr::testing::emulation::Block& b = *hr::testing::emulation::current;
  const unsigned t = threadIdx.x;
  std::barrier<>& warp = *b.warps[t / 32];
  b.exchange[t] = v;
  warp.arrive_and_wait();
  const float other = b.exchange[t ^ static_cast<unsigned>(lane_mask)];
  warp.arrive_and_wait();
  return other;
}

#define HR_ATTENTION_SHARED(name) float* name = ::hr::testing::emulation::current->shared.data()
