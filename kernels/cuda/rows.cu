// Row operations (softmax, log-softmax, layer norm, cross-entropy): the shared per-row routines of kernels/math/rows.h,
// run by a warp or a block of threads per row (kernels/cuda/lanes.cuh). Only the order in which a row's sums are added
// differs from the CPU backend, which the parity tests (tests/test_cuda_backend.cpp) bound at 1e-4 relative.
#include "kernels/backend_checks.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/lanes.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/math/rows.h"

namespace hr::cuda {
namespace {

template <class Lanes>
__global__ void softmax_backward_kernel(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                                        float scale, bool accumulate) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) { math::softmax_backward_row(g, y + r * n, gy + r * n, gx + r * n, n, scale, accumulate); }
}

template <class Lanes>
__global__ void softmax_dropout_kernel(const float* x, const float* mask, float* y, float* out, uint16_t* out_bf16,
                                       int64_t rows, int64_t n, float scale, int64_t rows_per_mask,
                                       math::DropoutFactors drop) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) {
    // the exps computed again rather than kept in y or out: keeping them costs a row's global write and read to save
    // a read of x (and a bf16 output without y has no room for them)
    math::softmax_dropout_row(g, x + r * n, mask ? mask + r / rows_per_mask * n : nullptr, y ? y + r * n : nullptr,
                              out ? out + r * n : nullptr, out_bf16 ? out_bf16 + r * n : nullptr, n, scale,
                              math::DrawnDropout{drop, static_cast<uint64_t>(r * n)}, nullptr);
  }
}

template <class Lanes>
__global__ void softmax_dropout_backward_kernel(const float* y, const float* out, const uint16_t* out_bf16,
                                                const float* gout, float* gx, int64_t rows, int64_t n, float scale,
                                                float keep, bool accumulate) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) {
    math::softmax_dropout_backward_row(g, y + r * n, out ? out + r * n : nullptr,
                                       out_bf16 ? out_bf16 + r * n : nullptr, gout + r * n, gx + r * n, n, scale,
                                       keep, accumulate, nullptr);
  }
}

template <class Lanes>
__global__ void log_softmax_kernel(const float* x, const float* mask, float* y, int64_t rows, int64_t n,
                                   int64_t rows_per_mask) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) {
    math::log_softmax_row(g, x + r * n, mask ? mask + r / rows_per_mask * n : nullptr, y + r * n, n);
  }
}

template <class Lanes>
__global__ void log_softmax_backward_kernel(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                                            bool accumulate) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) { math::log_softmax_backward_row(g, y + r * n, gy + r * n, gx + r * n, n, accumulate); }
}

template <class Lanes>
__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                  float* rstd, int64_t rows, int64_t n, float eps) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) { math::layer_norm_row(g, x + r * n, gamma, beta, y + r * n, mean + r, rstd + r, n, eps); }
}

template <class Lanes>
__global__ void layer_norm_backward_kernel(const float* x, const float* gamma, const float* mean, const float* rstd,
                                           const float* gy, float* gx, int64_t rows, int64_t n, bool accumulate) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) {
    math::layer_norm_backward_row(g, x + r * n, gamma, mean[r], rstd[r], gy + r * n, gx + r * n, n, accumulate);
  }
}

// Thread (column j, chunk c) sums gy * xhat and gy over the chunk's rows: partials (chunks, n) for ggamma and gbeta.
// With one chunk it adds straight into ggamma and gbeta.
__global__ void layer_norm_param_partial_kernel(const float* x, const float* mean, const float* rstd, const float* gy,
                                                int64_t rows, int64_t n, int64_t len, float* pg, float* pb) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int64_t r0 = blockIdx.y * len, r1 = r0 + len < rows ? r0 + len : rows;
  float sg = 0.f, sb = 0.f;
  for (int64_t r = r0; r < r1; ++r) {
    const float g = gy[r * n + j];
    sg += g * ((x[r * n + j] - mean[r]) * rstd[r]);
    sb += g;
  }
  if (gridDim.y == 1) {
    pg[j] += sg;
    pb[j] += sb;
  } else {
    pg[blockIdx.y * n + j] = sg;
    pb[blockIdx.y * n + j] = sb;
  }
}

// Per row: logp = log_softmax(logits) and the row's loss, 0 for ignored rows. A label outside [0, C) gives a NaN
// loss here and is reported by the host (cross_entropy below).
template <class Lanes>
__global__ void cross_entropy_kernel(const float* logits, const int32_t* labels, float* logp, float* row_loss,
                                     int64_t rows, int64_t C, int32_t ignore_index, float s) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) {
    const int32_t y = labels[r];
    float loss = 0.f;
    if (y == ignore_index) {
      math::log_softmax_row(g, logits + r * C, nullptr, logp + r * C, C);  // logp stays defined for every row
    } else {
      loss = math::cross_entropy_row(g, logits + r * C, y, logp + r * C, C, s);
    }
    if (g.first == 0) row_loss[r] = loss;
  }
}

// glogits (+)= gscale * (exp(logp) - target); ignored rows get 0 (or keep their value when accumulating)
template <class Lanes>
__global__ void cross_entropy_backward_kernel(const float* logp, const int32_t* labels, float* glogits, int64_t rows,
                                              int64_t C, int32_t ignore_index, float s, float gscale,
                                              bool accumulate) {
  __shared__ float smem[32];
  const Lanes g(smem);
  HR_LANE_ROWS(g, r, rows) {
    float* gr = glogits + r * C;
    if (labels[r] != ignore_index) {
      math::cross_entropy_backward_row(g, logp + r * C, labels[r], gr, C, s, gscale, accumulate);
    } else if (!accumulate) {
      for (int64_t j = g.first; j < C; j += g.stride) gr[j] = 0.f;
    }
  }
}

}  // namespace

void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, float scale,
                      bool accumulate, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    softmax_backward_kernel<Lanes><<<blocks, threads, 0, stream>>>(y, gy, gx, rows, n, scale, accumulate);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void softmax_dropout(const float* x, const float* mask, float* y, void* out, bool out_bf16, int64_t rows, int64_t n,
                     float scale, int64_t rows_per_mask, float p_drop, uint64_t seed, uint64_t offset,
                     cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  check_softmax_dropout(mask, rows_per_mask, p_drop);
  const math::DropoutFactors drop(p_drop, seed, offset);
  float* out_f32 = out_bf16 ? nullptr : static_cast<float*>(out);
  uint16_t* out_b = out_bf16 ? static_cast<uint16_t*>(out) : nullptr;
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    softmax_dropout_kernel<Lanes><<<blocks, threads, 0, stream>>>(x, mask, y, out_f32, out_b, rows, n, scale,
                                                                  rows_per_mask, drop);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void softmax_dropout_backward(const float* y, const void* out, bool out_bf16, const float* gout, float* gx,
                              int64_t rows, int64_t n, float scale, float p_drop, bool accumulate,
                              cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  const float* out_f32 = out_bf16 ? nullptr : static_cast<const float*>(out);
  const uint16_t* out_b = out_bf16 ? static_cast<const uint16_t*>(out) : nullptr;
  const float keep = 1.f / (1.f - p_drop);
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    softmax_dropout_backward_kernel<Lanes><<<blocks, threads, 0, stream>>>(y, out_f32, out_b, gout, gx, rows, n,
                                                                           scale, keep, accumulate);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void log_softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, int64_t rows_per_mask,
                 cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  HR_CHECK(!mask || rows_per_mask > 0, "log_softmax: rows_per_mask must be positive with a mask");
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    log_softmax_kernel<Lanes><<<blocks, threads, 0, stream>>>(x, mask, y, rows, n, rows_per_mask);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void log_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, bool accumulate,
                          cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    log_softmax_backward_kernel<Lanes><<<blocks, threads, 0, stream>>>(y, gy, gx, rows, n, accumulate);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    layer_norm_kernel<Lanes><<<blocks, threads, 0, stream>>>(x, gamma, beta, y, mean, rstd, rows, n, eps);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* gy,
                         float* gx, float* ggamma, float* gbeta, int64_t rows, int64_t n, bool accumulate,
                         CachingAllocator& allocator, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  launch_rows(rows, n, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    layer_norm_backward_kernel<Lanes><<<blocks, threads, 0, stream>>>(x, gamma, mean, rstd, gy, gx, rows, n,
                                                                      accumulate);
  });
  HR_CUDA_CHECK_LAUNCH();
  // ggamma and gbeta: deterministic column sums over the rows, in chunks of rows and then over the chunks
  const int64_t chunks = reduction_chunks(n, rows), len = (rows + chunks - 1) / chunks;
  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), static_cast<unsigned>(chunks));
  if (chunks == 1) {
    layer_norm_param_partial_kernel<<<grid, kThreads, 0, stream>>>(x, mean, rstd, gy, rows, n, len, ggamma, gbeta);
    HR_CUDA_CHECK_LAUNCH();
    return;
  }
  ScratchBuffer partial(allocator, static_cast<size_t>(2 * chunks * n) * sizeof(float));
  float *pg = partial.as<float>(), *pb = pg + chunks * n;
  layer_norm_param_partial_kernel<<<grid, kThreads, 0, stream>>>(x, mean, rstd, gy, rows, n, len, pg, pb);
  HR_CUDA_CHECK_LAUNCH();
  sum_partials(pg, chunks, n, ggamma, true, stream);
  sum_partials(pb, chunks, n, gbeta, true, stream);
}

int64_t cross_entropy(const float* logits, const int32_t* labels, float* logp, float* row_loss, int64_t rows,
                      int64_t C, int32_t ignore_index, float smoothing, CachingAllocator& allocator,
                      cudaStream_t stream) {
  if (rows <= 0) return 0;
  HR_CHECK(C > 0, "cross_entropy: needs at least one class");
  launch_rows(rows, C, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    cross_entropy_kernel<Lanes><<<blocks, threads, 0, stream>>>(logits, labels, logp, row_loss, rows, C, ignore_index,
                                                                smoothing);
  });
  HR_CUDA_CHECK_LAUNCH();
  return count_labels(labels, rows, C, ignore_index, "cross_entropy", allocator, stream);
}

void cross_entropy_backward(const float* logp, const int32_t* labels, float* glogits, int64_t rows, int64_t C,
                            int32_t ignore_index, float smoothing, float gscale, bool accumulate,
                            CachingAllocator& allocator, cudaStream_t stream) {
  if (rows <= 0 || C <= 0) return;
  count_labels(labels, rows, C, ignore_index, "cross_entropy_backward", allocator, stream);
  launch_rows(rows, C, [&](auto lanes, unsigned blocks, unsigned threads) {
    using Lanes = typename decltype(lanes)::type;
    cross_entropy_backward_kernel<Lanes><<<blocks, threads, 0, stream>>>(logp, labels, glogits, rows, C, ignore_index,
                                                                         smoothing, gscale, accumulate);
  });
  HR_CUDA_CHECK_LAUNCH();
}

}  // namespace hr::cuda
