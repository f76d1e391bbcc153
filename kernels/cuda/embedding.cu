// Embedding lookups and their gradient.
//
// scatter_add_rows is deterministic without atomics: the block of entry i does nothing unless i is the first
// occurrence of its id; that block then adds every g row with the same id, in ascending order, into the table row.
// Each table row is thus written by exactly one block, in the order of a sequential loop. Finding first occurrences
// costs O(n_ids^2) comparisons of ids read from cache: small next to the matmuls for the few thousand ids of a batch.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"

namespace hr::cuda {
namespace {

__global__ void gather_rows_kernel(const float* table, const int32_t* ids, float* out, int64_t n_ids, int64_t dim) {
  HR_GRID_STRIDE(i, n_ids * dim) out[i] = table[static_cast<int64_t>(ids[i / dim]) * dim + i % dim];
}

__global__ void scatter_add_rows_kernel(const float* g, const int32_t* ids, float* gtable, int64_t n_ids,
                                        int64_t dim) {
  HR_ROW_LOOP(i, n_ids) {
    const int32_t id = ids[i];
    int seen = 0;
    for (int64_t j = threadIdx.x; j < i; j += blockDim.x) seen |= ids[j] == id;
    if (__syncthreads_or(seen)) continue;  // an earlier block owns this id
    float* row = gtable + static_cast<int64_t>(id) * dim;
    const unsigned lane = threadIdx.x & 31u;
    for (int64_t c0 = 0; c0 < dim; c0 += blockDim.x) {  // uniform across the block: every lane takes part in ballots
      const int64_t c = c0 + threadIdx.x;
      float acc = c < dim ? row[c] : 0.f;
      // each warp scans the ids 32 at a time and adds the matches in ascending order; the unrolled, predicated loads
      // are independent of acc, so they are all in flight together when an id repeats often (padding, token types)
      for (int64_t j0 = i; j0 < n_ids; j0 += 32) {
        const int64_t j = j0 + lane;
        const unsigned hits = __ballot_sync(0xffffffffu, j < n_ids && ids[j] == id);
        if (hits == 0 || c >= dim) continue;
#pragma unroll
        for (int k = 0; k < 32; ++k)
          if (hits & (1u << k)) acc += g[(j0 + k) * dim + c];
      }
      if (c < dim) row[c] = acc;
    }
  }
}

}  // namespace

void gather_rows(const float* table, const int32_t* ids, float* out, int64_t n_ids, int64_t dim,
                 CachingAllocator& allocator, cudaStream_t stream) {
  if (n_ids <= 0 || dim <= 0) return;
  check_ids(ids, n_ids, "gather_rows", allocator, stream);
  gather_rows_kernel<<<grid_for(n_ids * dim), kThreads, 0, stream>>>(table, ids, out, n_ids, dim);
  HR_CUDA_CHECK_LAUNCH();
}

void scatter_add_rows(const float* g, const int32_t* ids, float* gtable, int64_t n_ids, int64_t dim,
                      CachingAllocator& allocator, cudaStream_t stream) {
  if (n_ids <= 0 || dim <= 0) return;
  check_ids(ids, n_ids, "scatter_add_rows", allocator, stream);
  unsigned threads = 32;  // one column a thread, up to 1024
  while (threads < 1024 && threads < dim) threads *= 2;
  scatter_add_rows_kernel<<<row_blocks(n_ids), threads, 0, stream>>>(g, ids, gtable, n_ids, dim);
  HR_CUDA_CHECK_LAUNCH();
}

}  // namespace hr::cuda
