// Fused attention for the CUDA backend (Backend::attention, attention_backward): FlashAttention-2 (Dao 2023) on the
// GPU's CUDA cores, computing what the CPU kernel (kernels/cpu/cpu_attention.cpp) computes, value for value up to the
// order of the sums: the same scores (scale * q k^T + mask), the same exp with the same cut to 0 below -87, the same
// statistics (each row's maximum and the log of its sum, apart), the same dropout draws, and under bf16 the same
// roundings (the weights after dropout, the output's gradient and the scores' gradient rounded to bf16 before the
// products that read them, every product summed in f32).
//
//   forward   one block per (sequence, head, 64 queries; 32 for heads over 128): it walks the keys in blocks of 128
//             (the CPU's, kernels/attention_blocks.h, so that under bf16 the weights are rounded against the same
//             running maxima), one shared tile holding a block's keys and then its values, with an online softmax;
//             it keeps its output rows in registers and writes the output and the statistics.
//   backward  three kernels, none of them atomic, so the gradients are the same from run to run:
//             row_dots   rowsum(gout * out) of every query row (the D of FlashAttention-2), a warp a row;
//             kv         one block per (sequence, head, 64 keys; 32 for heads over 128) holding its keys and values
//                        and their gradients' rows, walking the query blocks: dv += weights^T gout, dk += dscores^T q;
//             q          one block per (sequence, head, 64 queries; 32) walking the key blocks: dq += dscores k.
//             Both recompute the weights and the scores' gradient of each (query block, key block) pair from the
//             forward's statistics (score_grads below); the q kernel recomputing the scores and the weights'
//             gradient, rather than kv adding into dq with atomics, costs two more products (seven instead of five)
//             but keeps every sum in one fixed order.
//
// Every product is a shared-memory tiled loop in f32: operands are widened (bf16 exactly) into (rows, kd) tiles, kd
// the head-size tile (16, 32, 64, 128 or 256; attention_tiles.h), padded with zero rows and columns, and each of the
// block's 16 x 16 threads sums the elements (ty + 16 r, tx + 16 c) of the result in registers (attention_tiles.h says
// why that layout). No tensor cores: bf16 operands run through the same f32 loops (a bf16 product is exact in f32),
// which keeps one code path for both input types, each product an f32 sum of the operands the CPU kernel sums; wmma or
// mma.sync for the bf16 products is the next step for speed, once this kernel has run against the CPU's on a GPU.
#include <cuda_runtime.h>

#include <climits>
#include <string>

#include "kernels/backend_checks.h"
#include "kernels/cuda/attention_kernels.cuh"
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launchers.h"

namespace hr::cuda {
namespace {

// Queues `kernel` on the stream over `blocks` blocks of `threads` threads with `floats` of dynamic shared memory,
// opting the kernel into more than the default 48 KiB where it needs it
struct StreamLaunch {
  cudaStream_t stream;
  template <class... Params_, class... Args>
  void operator()(void (*kernel)(Params_...), int64_t blocks, int threads, int64_t floats,
                  const Args&... args) const {
    HR_CHECK(blocks <= INT_MAX, "attention: " + std::to_string(blocks) + " blocks is more than a CUDA grid holds");
    const size_t bytes = static_cast<size_t>(floats) * sizeof(float);
    if (bytes > 48 * 1024)
      HR_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    kernel<<<static_cast<unsigned>(blocks), threads, bytes, stream>>>(args...);
    HR_CUDA_CHECK_LAUNCH();
  }
};

}  // namespace

void attention_forward(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats, cudaStream_t stream) {
  check_attention(a);
  forward_pass(a, out, out_bf16, stats, StreamLaunch{stream});
}

void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                        const float* gout, float* gq, float* gk, float* gv, CachingAllocator& allocator,
                        cudaStream_t stream) {
  check_attention(a);
  ScratchBuffer dsum(allocator, static_cast<size_t>(a.B * a.H * a.Tq) * sizeof(float));
  backward_pass(a, out, out_bf16, stats, gout, gq, gk, gv, dsum.as<float>(), StreamLaunch{stream});
}

}  // namespace hr::cuda
