// Host-side entry points of the CUDA kernels, one per backend operation; CudaBackend (cuda_backend.cpp, compiled by
// the host compiler) calls these, the .cu files define them. All work is queued on `stream`; only the functions that
// return a value to the host synchronize. Arguments follow the contract of the same-named method in kernels/backend.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/caching_allocator.h"

namespace hr::cuda {

// elementwise.cu
void fill(float* x, int64_t n, float value, cudaStream_t stream);
void fill_i32(int32_t* x, int64_t n, int32_t value, cudaStream_t stream);
void to_bf16(const float* x, uint16_t* y, int64_t n, cudaStream_t stream);
// Contiguous (outer, batch, M, N) f32 rounded into bf16 matrices laid out as a gemm's C16 (ldc, strideC, outerC).
void round_matrices(const float* x, uint16_t* y, int64_t outer, int64_t batch, int64_t M, int64_t N, int64_t ldc,
                    int64_t strideC, int64_t outerC, cudaStream_t stream);
void uniform(float* x, int64_t n, uint64_t seed, uint64_t offset, cudaStream_t stream);
void dropout(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t offset, cudaStream_t stream);
// The gemm epilogue: C[b, m, n] = gelu(C[b, m, n] + bias[n]), bias optional (null), GELU when `gelu`; C rows have
// stride ldc, batches strideC.
void gemm_epilogue(float* C, const float* bias, bool gelu, int64_t batch, int64_t M, int64_t N, int64_t ldc,
                   int64_t strideC, cudaStream_t stream);
void unary(Unary op, const float* x, float* y, int64_t n, float a, float b, cudaStream_t stream);
void unary_backward(Unary op, const float* x, const float* y, const float* gy, float* gx, int64_t n, float a, float b,
                    bool accumulate, cudaStream_t stream);
void binary(Binary op, const Broadcast& p, const float* a, const float* b, float* out, float scalar,
            cudaStream_t stream);
void copy_strided(int ndim, const int64_t* shape, const float* src, const int64_t* src_strides, float* dst,
                  const int64_t* dst_strides, bool accumulate, cudaStream_t stream);

// reductions.cu
void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate,
            CachingAllocator& allocator, cudaStream_t stream);
// out[k] (+)= sum over c of partial[c * K + k], c ascending: the second pass of a chunked column reduction
void sum_partials(const float* partial, int64_t chunks, int64_t K, float* out, bool accumulate, cudaStream_t stream);
double sum_squares(const float* x, int64_t n, CachingAllocator& allocator, cudaStream_t stream);  // synchronizes

// rows.cu
void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, float scale,
                      bool accumulate, cudaStream_t stream);
void softmax_dropout(const float* x, const float* mask, float* y, void* out, bool out_bf16, int64_t rows, int64_t n,
                     float scale, int64_t rows_per_mask, float p_drop, uint64_t seed, uint64_t offset,
                     cudaStream_t stream);
void softmax_dropout_backward(const float* y, const void* out, bool out_bf16, const float* gout, float* gx,
                              int64_t rows, int64_t n, float scale, float p_drop, bool accumulate,
                              cudaStream_t stream);
void log_softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, int64_t rows_per_mask,
                 cudaStream_t stream);
void log_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, bool accumulate,
                          cudaStream_t stream);
void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                int64_t rows, int64_t n, float eps, cudaStream_t stream);
void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* gy,
                         float* gx, float* ggamma, float* gbeta, int64_t rows, int64_t n, bool accumulate,
                         CachingAllocator& allocator, cudaStream_t stream);
// synchronizes; throws hr::Error when a label is neither ignore_index nor in [0, C)
int64_t cross_entropy(const float* logits, const int32_t* labels, float* logp, float* row_loss, int64_t rows,
                      int64_t C, int32_t ignore_index, float smoothing, CachingAllocator& allocator,
                      cudaStream_t stream);
// synchronizes and throws like cross_entropy
void cross_entropy_backward(const float* logp, const int32_t* labels, float* glogits, int64_t rows, int64_t C,
                            int32_t ignore_index, float smoothing, float gscale, bool accumulate,
                            CachingAllocator& allocator, cudaStream_t stream);

// attention.cu: FlashAttention-2 forward and backward (heads of up to kCudaFusedAttentionMaxHeadDim; wider ones throw)
void attention_forward(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats, cudaStream_t stream);
void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                        const float* gout, float* gq, float* gk, float* gv, CachingAllocator& allocator,
                        cudaStream_t stream);

// embedding.cu: both synchronize and throw hr::Error on a negative id (check_ids)
void gather_rows(const float* table, const int32_t* ids, float* out, int64_t n_ids, int64_t dim,
                 CachingAllocator& allocator, cudaStream_t stream);
void scatter_add_rows(const float* g, const int32_t* ids, float* gtable, int64_t n_ids, int64_t dim,
                      CachingAllocator& allocator, cudaStream_t stream);

// index_checks.cu: both synchronize, and throw hr::Error (kernels/backend_checks.h) at the first bad entry
void check_ids(const int32_t* ids, int64_t n, const char* op, CachingAllocator& allocator, cudaStream_t stream);
// the labels that are not ignore_index; each must be in [0, C)
int64_t count_labels(const int32_t* labels, int64_t rows, int64_t C, int32_t ignore_index, const char* op,
                     CachingAllocator& allocator, cudaStream_t stream);

// adamw.cu: one launch for all slots
void adamw(const AdamWSlot* slots, int count, const AdamWHyper& h, CachingAllocator& allocator, cudaStream_t stream);

}  // namespace hr::cuda
