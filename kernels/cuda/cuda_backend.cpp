// The CUDA backend: one stream for all work (cuBLAS included), a caching allocator for memory, cuBLAS for gemm and
// the kernels of kernels/cuda/*.cu for the rest.
//
// gemm runs in full FP32 by default (CUBLAS_DEFAULT_MATH: no TF32), so results match the CPU backend to about 1e-5
// relative. HR_CUDA_TF32=1 lets cuBLAS use TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH): several times faster on
// Hopper, but inputs are rounded to a 10-bit mantissa, so expect about 1e-3 relative error against the CPU.
#include "kernels/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/backend_checks.h"
#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/host_copy.h"
#include "kernels/cuda/launchers.h"

namespace hr {
namespace {

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    HR_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    HR_CUDA_CHECK(cublasCreate(&cublas_));
    HR_CUDA_CHECK(cublasSetStream(cublas_, stream_));
    const char* tf32 = std::getenv("HR_CUDA_TF32");
    const bool use_tf32 = tf32 != nullptr && std::strcmp(tf32, "1") == 0;
    HR_CUDA_CHECK(cublasSetMathMode(cublas_, use_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  // Never destroyed (see cuda_backend()), so no destructor releases the stream and handle.

  Device device() const override { return Device::CUDA; }

  // ---- memory
  void* alloc(size_t bytes) override { return allocator_.allocate(bytes); }
  void dealloc(void* p, size_t bytes) override { allocator_.deallocate(p, bytes); }
  size_t system_allocations() const override { return allocator_.system_allocations(); }
  size_t bytes_in_use() const override { return allocator_.bytes_in_use(); }
  size_t peak_bytes_in_use() const override { return allocator_.peak_bytes_in_use(); }

  void to_host(void* dst_host, const void* src, size_t bytes) override {
    cuda::copy_to_host(dst_host, src, bytes, stream_);
  }
  // returns when the caller may reuse or free src_host
  void from_host(void* dst, const void* src_host, size_t bytes) override {
    cuda::copy_from_host(dst, src_host, bytes, stream_);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    HR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void synchronize() override { HR_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

  // ---- fills and random numbers
  void fill(float* x, int64_t n, float value) override { cuda::fill(x, n, value, stream_); }
  void fill_i32(int32_t* x, int64_t n, int32_t value) override { cuda::fill_i32(x, n, value, stream_); }
  void uniform(float* x, int64_t n, uint64_t seed, uint64_t offset) override {
    cuda::uniform(x, n, seed, offset, stream_);
  }
  void dropout(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t offset) override {
    check_dropout(p, "dropout");
    cuda::dropout(x, y, n, p, seed, offset, stream_);
  }

  // ---- matmul
  void gemm(const GemmArgs& g) override {
    check_gemm(g);
    if (g.outer == 0 || g.batch == 0 || g.M == 0 || g.N == 0) return;
    if (g.C16) {
      // a bf16 result: the f32 one (bias and GELU included) in contiguous scratch, then rounded into place, as the
      // CPU's primitive rounds after its post-ops
      cuda::ScratchBuffer c(allocator_, static_cast<size_t>(g.outer * g.batch * g.M * g.N) * sizeof(float));
      GemmArgs f = g;
      f.C16 = nullptr;
      f.C = c.as<float>();
      f.ldc = g.N, f.strideC = g.M * g.N, f.outerC = g.batch * g.M * g.N;
      gemm(f);
      return cuda::round_matrices(f.C, g.C16, g.outer, g.batch, g.M, g.N, g.ldc, g.strideC, g.outerC, stream_);
    }
    // cuBLAS's strided batches have one stride: an outer batch is a loop of them, over the shorter of the two batch
    // dimensions (attention's heads rather than its sequences), the other one strided
    const size_t in_bytes = g.inputs == GemmInputs::BF16 ? sizeof(uint16_t) : sizeof(float);
    const bool swap = g.outer > g.batch;
    const int64_t loops = swap ? g.batch : g.outer;
    for (int64_t i = 0; i < loops; ++i) {
      GemmArgs one = g;
      one.outer = 1;
      if (swap) one.batch = g.outer, one.strideA = g.outerA, one.strideB = g.outerB, one.strideC = g.outerC;
      one.A = static_cast<const char*>(g.A) + i * (swap ? g.strideA : g.outerA) * in_bytes;
      one.B = static_cast<const char*>(g.B) + i * (swap ? g.strideB : g.outerB) * in_bytes;
      one.C = g.C + i * (swap ? g.strideC : g.outerC);
      gemm_batch(one);
    }
  }

  // One strided batch (g.outer == 1), arguments checked.
  void gemm_batch(const GemmArgs& g) {
    HR_CHECK(fits_int(g.batch) && fits_int(g.M) && fits_int(g.N) && fits_int(g.K) && fits_int(g.lda) &&
                 fits_int(g.ldb) && fits_int(g.ldc),
             "gemm: sizes and leading dimensions must fit in int for cuBLAS");
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first and N, M swapped. A stored
    // row-major matrix is its transpose stored column-major, with the same leading dimension.
    const cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int M = static_cast<int>(g.M), N = static_cast<int>(g.N), K = static_cast<int>(g.K);
    const int lda = std::max(1, static_cast<int>(g.lda)), ldb = std::max(1, static_cast<int>(g.ldb));
    const int ldc = std::max(1, static_cast<int>(g.ldc));
    if (g.inputs == GemmInputs::BF16) {
      // bf16 inputs, f32 output and accumulation (CUBLAS_COMPUTE_32F): tensor cores on sm_80 and later
      HR_CUDA_CHECK(cublasGemmStridedBatchedEx(cublas_, opB, opA, N, M, K, &g.alpha, g.B, CUDA_R_16BF, ldb,
                                               g.strideB, g.A, CUDA_R_16BF, lda, g.strideA, &g.beta, g.C, CUDA_R_32F,
                                               ldc, g.strideC, static_cast<int>(g.batch), CUBLAS_COMPUTE_32F,
                                               CUBLAS_GEMM_DEFAULT));
    } else if (g.batch == 1) {
      HR_CUDA_CHECK(cublasSgemm(cublas_, opB, opA, N, M, K, &g.alpha, static_cast<const float*>(g.B), ldb,
                                static_cast<const float*>(g.A), lda, &g.beta, g.C, ldc));
    } else {
      HR_CUDA_CHECK(cublasSgemmStridedBatched(cublas_, opB, opA, N, M, K, &g.alpha, static_cast<const float*>(g.B),
                                              ldb, g.strideB, static_cast<const float*>(g.A), lda, g.strideA,
                                              &g.beta, g.C, ldc, g.strideC, static_cast<int>(g.batch)));
    }
    cuda::gemm_epilogue(g.C, g.bias, g.gelu, g.batch, g.M, g.N, g.ldc, g.strideC, stream_);
  }

  std::string gemm_implementation(const GemmArgs& g) override {
    return g.inputs == GemmInputs::BF16 ? "cublasGemmStridedBatchedEx bf16/f32" : "cublasSgemm";
  }
  Bf16 bf16_support(std::string* why) override {
    int dev = 0, major = 0, minor = 0;
    HR_CUDA_CHECK(cudaGetDevice(&dev));
    HR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    HR_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (why) *why = "the GPU has compute capability " + std::to_string(major) + "." + std::to_string(minor);
    return major >= 8 ? Bf16::Native : Bf16::None;  // cuBLAS's bf16 gemm needs Ampere or later
  }
  void to_bf16(const float* x, uint16_t* y, int64_t n) override { cuda::to_bf16(x, y, n, stream_); }

  // ---- elementwise
  void unary(Unary op, const float* x, float* y, int64_t n, float a, float b) override {
    cuda::unary(op, x, y, n, a, b, stream_);
  }
  void unary_backward(Unary op, const float* x, const float* y, const float* gy, float* gx, int64_t n, float a,
                      float b, bool accumulate) override {
    cuda::unary_backward(op, x, y, gy, gx, n, a, b, accumulate, stream_);
  }
  void binary(Binary op, const Broadcast& p, const float* a, const float* b, float* out, float scalar) override {
    check_ndim(p.ndim, "binary");
    cuda::binary(op, p, a, b, out, scalar, stream_);
  }
  void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate) override {
    check_ndim(p.ndim, "sum_to");
    cuda::sum_to(p, x, out, out_numel, accumulate, allocator_, stream_);
  }
  void copy_strided(int ndim, const int64_t* shape, const float* src, const int64_t* src_strides, float* dst,
                    const int64_t* dst_strides, bool accumulate) override {
    check_ndim(ndim, "copy_strided");
    cuda::copy_strided(ndim, shape, src, src_strides, dst, dst_strides, accumulate, stream_);
  }
  double sum_squares(const float* x, int64_t n) override { return cuda::sum_squares(x, n, allocator_, stream_); }

  // ---- rows
  void softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, float scale,
               int64_t rows_per_mask) override {
    cuda::softmax_dropout(x, mask, y, nullptr, false, rows, n, scale, rows_per_mask, 0.f, 0, 0, stream_);
  }
  void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, float scale,
                        bool accumulate) override {
    cuda::softmax_backward(y, gy, gx, rows, n, scale, accumulate, stream_);
  }
  void softmax_dropout(const float* x, const float* mask, float* y, void* out, bool out_bf16, int64_t rows, int64_t n,
                       float scale, int64_t rows_per_mask, float p_drop, uint64_t seed, uint64_t offset) override {
    cuda::softmax_dropout(x, mask, y, out, out_bf16, rows, n, scale, rows_per_mask, p_drop, seed, offset, stream_);
  }
  void softmax_dropout_backward(const float* y, const void* out, bool out_bf16, const float* gout, float* gx,
                                int64_t rows, int64_t n, float scale, float p_drop, bool accumulate) override {
    cuda::softmax_dropout_backward(y, out, out_bf16, gout, gx, rows, n, scale, p_drop, accumulate, stream_);
  }
  // FlashAttention-2 on the CUDA cores (kernels/cuda/attention.cu), computing what the CPU kernel computes
  void attention(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats) override {
    cuda::attention_forward(a, out, out_bf16, stats, stream_);
  }
  void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                          const float* gout, float* gq, float* gk, float* gv) override {
    cuda::attention_backward(a, out, out_bf16, stats, gout, gq, gk, gv, allocator_, stream_);
  }
  void log_softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n,
                   int64_t rows_per_mask) override {
    cuda::log_softmax(x, mask, y, rows, n, rows_per_mask, stream_);
  }
  void log_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                            bool accumulate) override {
    cuda::log_softmax_backward(y, gy, gx, rows, n, accumulate, stream_);
  }
  void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                  int64_t rows, int64_t n, float eps) override {
    check_layer_norm(rows, n);
    cuda::layer_norm(x, gamma, beta, y, mean, rstd, rows, n, eps, stream_);
  }
  void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* gy,
                           float* gx, float* ggamma, float* gbeta, int64_t rows, int64_t n, bool accumulate) override {
    cuda::layer_norm_backward(x, gamma, mean, rstd, gy, gx, ggamma, gbeta, rows, n, accumulate, allocator_, stream_);
  }

  // ---- embeddings
  void gather_rows(const float* table, const int32_t* ids, float* out, int64_t n_ids, int64_t dim) override {
    cuda::gather_rows(table, ids, out, n_ids, dim, allocator_, stream_);
  }
  void scatter_add_rows(const float* g, const int32_t* ids, float* gtable, int64_t n_ids, int64_t dim) override {
    cuda::scatter_add_rows(g, ids, gtable, n_ids, dim, allocator_, stream_);
  }

  // ---- cross-entropy
  int64_t cross_entropy(const float* logits, const int32_t* labels, float* logp, float* row_loss, int64_t rows,
                        int64_t C, int32_t ignore_index, float smoothing) override {
    return cuda::cross_entropy(logits, labels, logp, row_loss, rows, C, ignore_index, smoothing, allocator_, stream_);
  }
  void cross_entropy_backward(const float* logp, const int32_t* labels, float* glogits, int64_t rows, int64_t C,
                              int32_t ignore_index, float smoothing, float gscale, bool accumulate) override {
    cuda::cross_entropy_backward(logp, labels, glogits, rows, C, ignore_index, smoothing, gscale, accumulate,
                                 allocator_, stream_);
  }

  // ---- optimizer
  void adamw(const AdamWSlot* slots, int count, const AdamWHyper& h) override {
    HR_CHECK(h.step >= 1, "adamw: step " + std::to_string(h.step) + " must be >= 1");
    cuda::adamw(slots, count, h, allocator_, stream_);
  }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cuda::CachingAllocator allocator_;
};

}  // namespace

bool cuda_device_present() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error so that later calls do not report it
    return false;
  }
  return count > 0;
}

Backend& cuda_backend() {
  // Created on first use and never destroyed: at exit the CUDA runtime may be torn down before static destructors
  // run. A failed creation throws and is retried by the next call.
  static CudaBackend* const instance = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(std::string("no CUDA device found: ") + cudaGetErrorString(status));
    }
    if (count == 0) throw Error("no CUDA device found: cudaGetDeviceCount reports 0 devices");
    return new CudaBackend();
  }();
  return *instance;
}

}  // namespace hr
