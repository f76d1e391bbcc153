// Elementwise kernels: grid-stride loops over the functors of kernels/math, the same code the CPU backend runs.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/cuda/strided_index.h"
#include "kernels/math/bf16.h"
#include "kernels/math/random.h"
#include "kernels/math/unary.h"

namespace hr::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* x, int64_t n, T value) {
  HR_GRID_STRIDE(i, n) x[i] = value;
}

__global__ void to_bf16_kernel(const float* x, uint16_t* y, int64_t n) {
  HR_GRID_STRIDE(i, n) y[i] = math::to_bf16(x[i]);
}

// contiguous (outer, batch, M, N) f32 -> the strided bf16 matrices of a gemm's C16
__global__ void round_matrices_kernel(const float* x, uint16_t* y, int64_t n, int64_t batch, int64_t M, int64_t N,
                                      int64_t ldc, int64_t strideC, int64_t outerC) {
  HR_GRID_STRIDE(i, n) {
    const int64_t col = i % N, r = i / N, m = r % M, b = r / M % batch, o = r / M / batch;
    y[o * outerC + b * strideC + m * ldc + col] = math::to_bf16(x[i]);
  }
}

__global__ void uniform_kernel(float* x, int64_t n, uint64_t seed, uint64_t offset) {
  HR_GRID_STRIDE(i, n) x[i] = math::uniform01(seed, offset + static_cast<uint64_t>(i));
}

// the CPU backend's loop, element by element
__global__ void dropout_kernel(const float* x, float* y, int64_t n, math::DropoutFactors drop) {
  HR_GRID_STRIDE(i, n) { y[i] = x[i] * drop(static_cast<uint64_t>(i)); }
}

// C viewed as (batch * M, N) rows; row r lives at (r / M) * strideC + (r % M) * ldc
__global__ void gemm_epilogue_kernel(float* C, const float* bias, bool gelu, int64_t rows, int64_t M, int64_t N,
                                     int64_t ldc, int64_t strideC) {
  HR_GRID_STRIDE(i, rows * N) {
    const int64_t r = i / N, col = i % N;
    float& c = C[(r / M) * strideC + (r % M) * ldc + col];
    const float v = bias ? c + bias[col] : c;
    c = gelu ? math::gelu(v) : v;
  }
}

__global__ void unary_kernel(Unary op, const float* x, float* y, int64_t n, float a, float b) {
  HR_GRID_STRIDE(i, n) y[i] = math::unary_forward(op, x[i], a, b);
}

// Either saved tensor may be absent when the derivative does not need it.
__global__ void unary_backward_kernel(Unary op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                                      float a, float b, bool accumulate) {
  HR_GRID_STRIDE(i, n) {
    const float g = gy[i] * math::unary_derivative(op, x ? x[i] : 0.f, y ? y[i] : 0.f, a, b);
    gx[i] = accumulate ? gx[i] + g : g;
  }
}

// out is contiguous, so its offset is the flat index
template <class I>
__global__ void binary_kernel(Binary op, StridedPair p, I n, const float* a, const float* b, float* out,
                              float scalar) {
  HR_GRID_STRIDE_AS(I, i, n) {
    int64_t oa, ob;
    p.offsets(i, oa, ob);
    out[i] = math::binary_forward(op, a[oa], b[ob], scalar);
  }
}

// Launched as one thread when dst repeats elements: the grid-stride loop then visits them in order, as on the CPU.
template <class I>
__global__ void copy_strided_kernel(StridedPair p, I n, const float* src, float* dst, bool accumulate) {
  HR_GRID_STRIDE_AS(I, i, n) {
    int64_t os, od;
    p.offsets(i, os, od);
    dst[od] = accumulate ? dst[od] + src[os] : src[os];
  }
}

}  // namespace

void fill(float* x, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, value);
  HR_CUDA_CHECK_LAUNCH();
}

void fill_i32(int32_t* x, int64_t n, int32_t value, cudaStream_t stream) {
  if (n <= 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, value);
  HR_CUDA_CHECK_LAUNCH();
}

void to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  to_bf16_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
  HR_CUDA_CHECK_LAUNCH();
}

void round_matrices(const float* x, uint16_t* y, int64_t outer, int64_t batch, int64_t M, int64_t N, int64_t ldc,
                    int64_t strideC, int64_t outerC, cudaStream_t stream) {
  const int64_t n = outer * batch * M * N;
  if (n <= 0) return;
  round_matrices_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n, batch, M, N, ldc, strideC, outerC);
  HR_CUDA_CHECK_LAUNCH();
}

void uniform(float* x, int64_t n, uint64_t seed, uint64_t offset, cudaStream_t stream) {
  if (n <= 0) return;
  uniform_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, n, seed, offset);
  HR_CUDA_CHECK_LAUNCH();
}

void dropout(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t offset, cudaStream_t stream) {
  if (n <= 0) return;
  dropout_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n, math::DropoutFactors(p, seed, offset));
  HR_CUDA_CHECK_LAUNCH();
}

void gemm_epilogue(float* C, const float* bias, bool gelu, int64_t batch, int64_t M, int64_t N, int64_t ldc,
                   int64_t strideC, cudaStream_t stream) {
  if (batch * M * N <= 0 || (!bias && !gelu)) return;
  gemm_epilogue_kernel<<<grid_for(batch * M * N), kThreads, 0, stream>>>(C, bias, gelu, batch * M, M, N, ldc,
                                                                         strideC);
  HR_CUDA_CHECK_LAUNCH();
}

void unary(Unary op, const float* x, float* y, int64_t n, float a, float b, cudaStream_t stream) {
  if (n <= 0) return;
  unary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, x, y, n, a, b);
  HR_CUDA_CHECK_LAUNCH();
}

void unary_backward(Unary op, const float* x, const float* y, const float* gy, float* gx, int64_t n, float a, float b,
                    bool accumulate, cudaStream_t stream) {
  if (n <= 0) return;
  unary_backward_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, x, y, gy, gx, n, a, b, accumulate);
  HR_CUDA_CHECK_LAUNCH();
}

void binary(Binary op, const Broadcast& p, const float* a, const float* b, float* out, float scalar,
            cudaStream_t stream) {
  const int64_t n = p.numel();
  if (n <= 0) return;
  const StridedPair pair = collapse(p.ndim, p.shape, p.sa, p.sb);
  with_index_type(n, [&](auto index) {
    using I = decltype(index);
    binary_kernel<I><<<grid_for(n), kThreads, 0, stream>>>(op, pair, static_cast<I>(n), a, b, out, scalar);
  });
  HR_CUDA_CHECK_LAUNCH();
}

void copy_strided(int ndim, const int64_t* shape, const float* src, const int64_t* src_strides, float* dst,
                  const int64_t* dst_strides, bool accumulate, cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  if (n <= 0) return;
  const StridedPair pair = collapse(ndim, shape, src_strides, dst_strides);
  // a dst that repeats elements is written in order by one thread, so the result is the CPU backend's
  const bool serial = pair.repeats1();
  with_index_type(n, [&](auto index) {
    using I = decltype(index);
    copy_strided_kernel<I><<<serial ? 1 : grid_for(n), serial ? 1 : kThreads, 0, stream>>>(pair, static_cast<I>(n),
                                                                                             src, dst, accumulate);
  });
  HR_CUDA_CHECK_LAUNCH();
}

}  // namespace hr::cuda
