// Deterministic reductions: sum_to (the gradient of a broadcast) and sum_squares (for the global gradient norm).
// Both reduce in two passes through partial sums in a fixed order, never with float atomics, so a result is the same
// bit for bit on every run of the same shapes.
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/host_copy.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/cuda/strided_index.h"

namespace hr::cuda {
namespace {

// sum_to as a (kept, reduced) split of x's dimensions: output element k sums x over every reduced index r.
struct SumToPlan {
  int nk = 0, nr = 0;
  int64_t kshape[kMaxDims] = {}, kstride[kMaxDims] = {};  // kept dims and their strides in x
  int64_t rshape[kMaxDims] = {}, rstride[kMaxDims] = {};  // reduced dims and their strides in x
  int64_t K = 1, R = 1;
};

// Drops size-1 dims, merges neighbours of the same kind (x is contiguous, and so is the output over the kept dims,
// which this checks), and returns the plan.
SumToPlan plan_sum_to(const Broadcast& p, int64_t out_numel) {
  SumToPlan plan;
  int64_t xstride[kMaxDims], contiguous = 1, expected_out_stride = 1;
  for (int d = p.ndim - 1; d >= 0; --d) {
    xstride[d] = contiguous;
    contiguous *= p.shape[d];
  }
  for (int d = p.ndim - 1; d >= 0; --d) {  // inner to outer, to check the output strides
    if (p.shape[d] == 1 || p.sa[d] == 0) continue;
    if (p.sa[d] != expected_out_stride)
      throw Error("sum_to: the output strides are not those of a contiguous tensor (dim " + std::to_string(d) + ")");
    expected_out_stride *= p.shape[d];
  }
  if (expected_out_stride != out_numel)
    throw Error("sum_to: out_numel " + std::to_string(out_numel) + " does not match the kept dimensions (" +
                std::to_string(expected_out_stride) + " elements)");
  bool last_kept = false;
  for (int d = 0; d < p.ndim; ++d) {
    if (p.shape[d] == 1) continue;
    const bool kept = p.sa[d] != 0;
    int& nd = kept ? plan.nk : plan.nr;
    int64_t* shape = kept ? plan.kshape : plan.rshape;
    int64_t* stride = kept ? plan.kstride : plan.rstride;
    if (nd > 0 && last_kept == kept) {  // neighbour of the same kind: one dimension
      shape[nd - 1] *= p.shape[d];
      stride[nd - 1] = xstride[d];
    } else {
      shape[nd] = p.shape[d];
      stride[nd] = xstride[d];
      ++nd;
    }
    last_kept = kept;
    (kept ? plan.K : plan.R) *= p.shape[d];
  }
  return plan;
}

// Thread (k, chunk) sums x over reduced indices [chunk * len, (chunk + 1) * len) for output element k. With one chunk
// it writes the output; otherwise partial[chunk * K + k].
__global__ void sum_to_partial_kernel(SumToPlan plan, const float* x, int64_t len, float* dst, bool accumulate) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= plan.K) return;
  const float* base = x + strided_offset(k, plan.nk, plan.kshape, plan.kstride);
  const int64_t r0 = blockIdx.y * len, r1 = r0 + len < plan.R ? r0 + len : plan.R;
  float sum = 0.f;
  for (int64_t r = r0; r < r1; ++r) sum += base[strided_offset(r, plan.nr, plan.rshape, plan.rstride)];
  if (gridDim.y == 1) {
    dst[k] = accumulate ? dst[k] + sum : sum;
  } else {
    dst[blockIdx.y * plan.K + k] = sum;
  }
}

__global__ void sum_partials_kernel(const float* partial, int64_t chunks, int64_t K, float* out, bool accumulate) {
  HR_GRID_STRIDE(k, K) {
    float sum = 0.f;
    for (int64_t c = 0; c < chunks; ++c) sum += partial[c * K + k];
    out[k] = accumulate ? out[k] + sum : sum;
  }
}

// Block b sums x[i]^2 in double over its grid-stride share into partial[b]; a one-block launch then sums the partials.
__global__ void sum_squares_kernel(const float* x, int64_t n, double* partial) {
  __shared__ double smem[32];
  double sum = 0.0;
  HR_GRID_STRIDE(i, n) {
    const double v = x[i];
    sum += v * v;
  }
  sum = block_reduce(sum, SumOp{}, 0.0, smem);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void sum_doubles_kernel(const double* partial, int64_t n, double* out) {
  __shared__ double smem[32];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += partial[i];
  sum = block_reduce(sum, SumOp{}, 0.0, smem);
  if (threadIdx.x == 0) *out = sum;
}

}  // namespace

void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate,
            CachingAllocator& allocator, cudaStream_t stream) {
  const SumToPlan plan = plan_sum_to(p, out_numel);
  if (plan.K == 0) return;
  if (plan.R == 0) {  // an empty sum
    if (!accumulate) fill(out, out_numel, 0.f, stream);
    return;
  }
  const int64_t chunks = reduction_chunks(plan.K, plan.R), len = (plan.R + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((plan.K + kThreads - 1) / kThreads), static_cast<unsigned>(chunks));
  if (chunks == 1) {
    sum_to_partial_kernel<<<grid, kThreads, 0, stream>>>(plan, x, len, out, accumulate);
    HR_CUDA_CHECK_LAUNCH();
    return;
  }
  ScratchBuffer partial(allocator, static_cast<size_t>(chunks * plan.K) * sizeof(float));
  sum_to_partial_kernel<<<grid, kThreads, 0, stream>>>(plan, x, len, partial.as<float>(), false);
  HR_CUDA_CHECK_LAUNCH();
  sum_partials(partial.as<float>(), chunks, plan.K, out, accumulate, stream);
}

void sum_partials(const float* partial, int64_t chunks, int64_t K, float* out, bool accumulate, cudaStream_t stream) {
  if (K <= 0) return;
  sum_partials_kernel<<<grid_for(K), kThreads, 0, stream>>>(partial, chunks, K, out, accumulate);
  HR_CUDA_CHECK_LAUNCH();
}

double sum_squares(const float* x, int64_t n, CachingAllocator& allocator, cudaStream_t stream) {
  if (n <= 0) return 0.0;
  const unsigned blocks = grid_for(n);
  ScratchBuffer partial(allocator, (blocks + 1) * sizeof(double));  // the partials, then the total
  double* d = partial.as<double>();
  sum_squares_kernel<<<blocks, kThreads, 0, stream>>>(x, n, d);
  HR_CUDA_CHECK_LAUNCH();
  sum_doubles_kernel<<<1, 1024, 0, stream>>>(d, blocks, d + blocks);
  HR_CUDA_CHECK_LAUNCH();
  double total = 0.0;
  copy_to_host(&total, d + blocks, sizeof(double), stream);
  return total;
}

}  // namespace hr::cuda
