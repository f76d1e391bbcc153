// Row operations (softmax, log-softmax, layer norm, cross-entropy) with one thread block per row.
//
// These are block-parallel versions of the per-row functors of kernels/math/rows.h: each thread handles a strided
// share of the row and the row's sums and maxima are block reductions (launch.cuh). Every per-element expression is
// the functor's, term for term; only the order in which a row's sums are added differs, which the parity tests against
// the CPU backend (tests/test_cuda_backend.cpp) bound at 1e-4 relative.
#include <climits>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"

namespace hr::cuda {
namespace {

// y = softmax(scale * x + mask_row), the mask row being r / rows_per_mask (math::softmax_row)
__global__ void softmax_kernel(const float* x, const float* mask, float* y, int64_t rows, int64_t n, float scale,
                               int64_t rows_per_mask) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    const float* xr = x + r * n;
    const float* mr = mask ? mask + (r / rows_per_mask) * n : nullptr;
    float* yr = y + r * n;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, scale * xr[j] + (mr ? mr[j] : 0.f));
    mx = block_reduce(mx, MaxOp{}, -INFINITY, smem);
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float e = expf(scale * xr[j] + (mr ? mr[j] : 0.f) - mx);
      yr[j] = e;
      sum += e;
    }
    const float inv = 1.f / block_reduce(sum, SumOp{}, 0.f, smem);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] *= inv;  // each thread rescales what it wrote
  }
}

// gx (+)= scale * y * (gy - <gy, y>)  (math::softmax_backward_row)
__global__ void softmax_backward_kernel(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                                        float scale, bool accumulate) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    const float *yr = y + r * n, *gr = gy + r * n;
    float* out = gx + r * n;
    float dot = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dot += gr[j] * yr[j];
    dot = block_reduce(dot, SumOp{}, 0.f, smem);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float g = scale * yr[j] * (gr[j] - dot);
      out[j] = accumulate ? out[j] + g : g;
    }
  }
}

// y = x + mask - logsumexp(x + mask) over the row (math::log_softmax_row); returns the logsumexp
__device__ float log_softmax_block(const float* xr, const float* mr, float* yr, int64_t n, float* smem) {
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, xr[j] + (mr ? mr[j] : 0.f));
  mx = block_reduce(mx, MaxOp{}, -INFINITY, smem);
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(xr[j] + (mr ? mr[j] : 0.f) - mx);
  const float lse = mx + logf(block_reduce(sum, SumOp{}, 0.f, smem));
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = xr[j] + (mr ? mr[j] : 0.f) - lse;
  return lse;
}

__global__ void log_softmax_kernel(const float* x, const float* mask, float* y, int64_t rows, int64_t n,
                                   int64_t rows_per_mask) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    log_softmax_block(x + r * n, mask ? mask + (r / rows_per_mask) * n : nullptr, y + r * n, n, smem);
  }
}

// gx (+)= gy - exp(y) * sum(gy)  (math::log_softmax_backward_row)
__global__ void log_softmax_backward_kernel(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                                            bool accumulate) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    const float *yr = y + r * n, *gr = gy + r * n;
    float* out = gx + r * n;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += gr[j];
    s = block_reduce(s, SumOp{}, 0.f, smem);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float g = gr[j] - expf(yr[j]) * s;
      out[j] = accumulate ? out[j] + g : g;
    }
  }
}

// math::layer_norm_row: two-pass mean and variance
__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                  float* rstd, int64_t rows, int64_t n, float eps) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float m = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m += xr[j];
    m = block_reduce(m, SumOp{}, 0.f, smem) / static_cast<float>(n);
    float var = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float d = xr[j] - m;
      var += d * d;
    }
    var = block_reduce(var, SumOp{}, 0.f, smem) / static_cast<float>(n);
    const float rs = 1.f / sqrtf(var + eps);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = (xr[j] - m) * rs * gamma[j] + beta[j];
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
}

// gx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)), g = gy * gamma  (math::layer_norm_backward_row)
__global__ void layer_norm_backward_kernel(const float* x, const float* gamma, const float* mean, const float* rstd,
                                           const float* gy, float* gx, int64_t rows, int64_t n, bool accumulate) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    const float *xr = x + r * n, *gr = gy + r * n;
    float* out = gx + r * n;
    const float m = mean[r], rs = rstd[r];
    float mg = 0.f, mgx = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float g = gr[j] * gamma[j];
      mg += g;
      mgx += g * (xr[j] - m) * rs;
    }
    mg = block_reduce(mg, SumOp{}, 0.f, smem) / static_cast<float>(n);
    mgx = block_reduce(mgx, SumOp{}, 0.f, smem) / static_cast<float>(n);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float xhat = (xr[j] - m) * rs;
      const float v = rs * (gr[j] * gamma[j] - mg - xhat * mgx);
      out[j] = accumulate ? out[j] + v : v;
    }
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

// Per row: logp = log_softmax(logits), loss = -(1 - s) logp[y] - (s / C) sum(logp), 0 for ignored rows
// (math::cross_entropy_row). Labels outside [0, C) are reported by the host (cross_entropy below).
__global__ void cross_entropy_kernel(const float* logits, const int32_t* labels, float* logp, float* row_loss,
                                     int64_t rows, int64_t C, int32_t ignore_index, float s) {
  __shared__ float smem[32];
  HR_ROW_LOOP(r, rows) {
    const float* xr = logits + r * C;
    float* lr = logp + r * C;
    const float lse = log_softmax_block(xr, nullptr, lr, C, smem);
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) sum += xr[j] - lse;  // the logp this thread wrote
    sum = block_reduce(sum, SumOp{}, 0.f, smem);
    if (threadIdx.x == 0) {
      const int32_t y = labels[r];
      float loss = 0.f;
      if (y != ignore_index) {
        const float lp = y >= 0 && y < C ? xr[y] - lse : NAN;
        loss = -(1.f - s) * lp - (s / static_cast<float>(C)) * sum;
      }
      row_loss[r] = loss;
    }
  }
}

// One block: out[0] = rows whose label is not ignore_index, out[1] = first row with a label outside [0, C) (or
// LLONG_MAX)
__global__ void count_labels_kernel(const int32_t* labels, int64_t rows, int64_t C, int32_t ignore_index,
                                    long long* out) {
  __shared__ long long smem[32];
  long long count = 0, bad = LLONG_MAX;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const int32_t y = labels[r];
    if (y == ignore_index) continue;
    ++count;
    if ((y < 0 || y >= C) && r < bad) bad = r;
  }
  count = block_reduce(count, SumOp{}, 0ll, smem);
  bad = block_reduce(bad, MinOp{}, LLONG_MAX, smem);
  if (threadIdx.x == 0) {
    out[0] = count;
    out[1] = bad;
  }
}

// glogits (+)= gscale * (exp(logp) - target), 0 for ignored rows (math::cross_entropy_backward_row)
__global__ void cross_entropy_backward_kernel(const float* logp, const int32_t* labels, float* g, int64_t rows,
                                              int64_t C, int32_t ignore_index, float s, float gscale,
                                              bool accumulate) {
  const float off = s / static_cast<float>(C);
  HR_GRID_STRIDE(i, rows * C) {
    const int32_t y = labels[i / C];
    float v = 0.f;
    if (y != ignore_index) {
      const float t = off + (i % C == y ? 1.f - s : 0.f);
      v = gscale * (expf(logp[i]) - t);
    }
    g[i] = accumulate ? g[i] + v : v;
  }
}

}  // namespace

void softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, float scale, int64_t rows_per_mask,
             cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  HR_CHECK(!mask || rows_per_mask > 0, "softmax: rows_per_mask must be positive with a mask");
  softmax_kernel<<<row_blocks(rows), row_threads(n), 0, stream>>>(x, mask, y, rows, n, scale, rows_per_mask);
  HR_CUDA_CHECK_LAUNCH();
}

void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, float scale,
                      bool accumulate, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  softmax_backward_kernel<<<row_blocks(rows), row_threads(n), 0, stream>>>(y, gy, gx, rows, n, scale, accumulate);
  HR_CUDA_CHECK_LAUNCH();
}

void log_softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, int64_t rows_per_mask,
                 cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  HR_CHECK(!mask || rows_per_mask > 0, "log_softmax: rows_per_mask must be positive with a mask");
  log_softmax_kernel<<<row_blocks(rows), row_threads(n), 0, stream>>>(x, mask, y, rows, n, rows_per_mask);
  HR_CUDA_CHECK_LAUNCH();
}

void log_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, bool accumulate,
                          cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  log_softmax_backward_kernel<<<row_blocks(rows), row_threads(n), 0, stream>>>(y, gy, gx, rows, n, accumulate);
  HR_CUDA_CHECK_LAUNCH();
}

void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  layer_norm_kernel<<<row_blocks(rows), row_threads(n), 0, stream>>>(x, gamma, beta, y, mean, rstd, rows, n, eps);
  HR_CUDA_CHECK_LAUNCH();
}

void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* gy,
                         float* gx, float* ggamma, float* gbeta, int64_t rows, int64_t n, bool accumulate,
                         CachingAllocator& allocator, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  layer_norm_backward_kernel<<<row_blocks(rows), row_threads(n), 0, stream>>>(x, gamma, mean, rstd, gy, gx, rows, n,
                                                                              accumulate);
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
  cross_entropy_kernel<<<row_blocks(rows), row_threads(C), 0, stream>>>(logits, labels, logp, row_loss, rows, C,
                                                                        ignore_index, smoothing);
  HR_CUDA_CHECK_LAUNCH();
  ScratchBuffer result(allocator, 2 * sizeof(long long));
  count_labels_kernel<<<1, 1024, 0, stream>>>(labels, rows, C, ignore_index, result.as<long long>());
  HR_CUDA_CHECK_LAUNCH();
  long long host[2];
  HR_CUDA_CHECK(cudaMemcpyAsync(host, result.as<long long>(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  HR_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (host[1] != LLONG_MAX) {
    int32_t label = 0;
    HR_CUDA_CHECK(cudaMemcpyAsync(&label, labels + host[1], sizeof(label), cudaMemcpyDeviceToHost, stream));
    HR_CUDA_CHECK(cudaStreamSynchronize(stream));
    throw Error("cross_entropy: row " + std::to_string(host[1]) + " has label " + std::to_string(label) +
                ", outside [0, " + std::to_string(C) + ") and not the ignore index " + std::to_string(ignore_index));
  }
  return host[0];
}

void cross_entropy_backward(const float* logp, const int32_t* labels, float* glogits, int64_t rows, int64_t C,
                            int32_t ignore_index, float smoothing, float gscale, bool accumulate, cudaStream_t stream) {
  if (rows <= 0 || C <= 0) return;
  cross_entropy_backward_kernel<<<grid_for(rows * C), kThreads, 0, stream>>>(logp, labels, glogits, rows, C,
                                                                             ignore_index, smoothing, gscale,
                                                                             accumulate);
  HR_CUDA_CHECK_LAUNCH();
}

}  // namespace hr::cuda
