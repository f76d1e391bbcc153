// The one interface between the framework and a compute device.
//
// Every method is a coarse operation over contiguous row-major buffers that live on the backend's device: one
// virtual call per op, never per element. Pointers passed in are device pointers of this backend. Unless a method says
// "accumulates", outputs are overwritten. The CPU backend (kernels/cpu) runs oneDNN primitives and OpenMP loops over
// the functors in kernels/math; the CUDA backend (kernels/cuda) runs cuBLAS and kernels over the same functors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/base/device.h"

namespace hr {

constexpr int kMaxDims = 6;

// C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] (+ bias[n] on every row), for b in [0, batch), then GELU of that
// when `gelu` is set (an epilogue: one pass over C instead of a second one).
// op(A) is (M, K), op(B) is (K, N), C is (M, N); all row-major with leading dimensions lda/ldb/ldc
// (lda is the row stride of A as stored, i.e. >= K when !transA, >= M when transA).
// A stride of 0 broadcasts that operand over the batch. strideC must not be 0 when batch > 1.
// An outer batch repeats all that `outer` times, operand X's matrices starting outerX further on (no broadcast): with
// batch = heads and strides of Dh it multiplies every (sequence, head) pair of a (B, T, H*Dh) tensor in place.
// A and B are both f32 or both bf16 (`inputs`); C, alpha, beta, the bias and the accumulation are always f32.
enum class GemmInputs : uint8_t { F32, BF16 };
struct GemmArgs {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  GemmInputs inputs = GemmInputs::F32;
  const void* A = nullptr; int64_t lda = 0, strideA = 0;  // float* or uint16_t* (bf16 bits), as `inputs` says
  const void* B = nullptr; int64_t ldb = 0, strideB = 0;
  float* C = nullptr; int64_t ldc = 0, strideC = 0;
  uint16_t* C16 = nullptr;  // instead of C: the result after bias and GELU rounded to bf16 (bf16 inputs, alpha 1, beta 0)
  int64_t outer = 1, outerA = 0, outerB = 0, outerC = 0;  // C[o, b] starts at C + o * outerC + b * strideC
  float alpha = 1.f, beta = 0.f;
  const float* bias = nullptr;  // (N) or null; only with beta == 0
  bool gelu = false;            // C = gelu(...) after the bias: the erf form of Unary::Gelu
};

// Attention's operands where the projections write them: q (B, Tq, H*Dh), k and v (B, Tk, H*Dh), out (B, Tq, H*Dh);
// head h is columns [h*Dh, (h+1)*Dh). stats (B, H, Tq, 2): each row's maximum of scale * q k^T + mask and the log
// of its sum of exps, apart rather than added into one log-sum-exp, so that a fully padded row (every score near -1e9,
// where a float's spacing is 64) keeps the few units of the log. With bf16 inputs every product reads bf16 operands
// (the weights and, backward, gout and the scores' gradient rounded as the unfused ops round them) into f32 sums.
struct FusedAttentionArgs {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, Dh = 0;
  GemmInputs inputs = GemmInputs::F32;
  const void* q = nullptr;  // float* or uint16_t* (bf16 bits), as `inputs` says
  const void* k = nullptr;
  const void* v = nullptr;
  const float* mask = nullptr;  // (B, Tk) additive, or null
  float scale = 1.f;
  // inverted dropout on the weights: weight (b, h, i, j) is element ((b*H + h)*Tq + i)*Tk + j of the stream (seed,
  // offset), drawn as softmax_dropout draws the (B, H, Tq, Tk) weights; 0 keeps every weight
  float p_drop = 0.f;
  uint64_t seed = 0, offset = 0;
};
// The widest head the CUDA backend's fused kernel takes (kernels/cuda/attention.cu); wider heads take the unfused path
// on CUDA (MultiHeadAttention::unfused_reason). The CPU kernel takes any width.
constexpr int64_t kCudaFusedAttentionMaxHeadDim = 256;

// A broadcast iteration over an output of `shape` (contiguous). Operand strides are in elements; 0 broadcasts.
struct Broadcast {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t sa[kMaxDims] = {};  // strides of operand a (or of the reduced output, for sum_to)
  int64_t sb[kMaxDims] = {};  // strides of operand b
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
};

// Elementwise functions y = f(x; a, b). The derivative rule of each lives beside it in kernels/math/unary.h.
enum class Unary : uint8_t {
  Copy, Neg, Exp, Log, Sigmoid, Tanh, Relu, Gelu /* erf form */, Sqrt, Square,
  Scale /* a*x */, AddScalar /* x+a */, Clamp /* min(max(x,a),b) */, Pow /* x^a */
};
enum class Binary : uint8_t {
  Add, Sub, Mul, Div,
  MaskFill /* b != 0 ? scalar : a */
};

struct AdamWHyper {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  int64_t step = 1;  // 1-based step, for the bias corrections
};
// One parameter tensor for the fused optimizer step.
struct AdamWSlot {
  float* param; const float* grad; float* m; float* v; int64_t n; float weight_decay;
  float lr_scale = 1.f;  // this tensor's learning rate is lr * lr_scale
  uint16_t* param_bf16 = nullptr;  // when set, the pass also writes the updated weights rounded to bf16 here
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;

  // ---- memory (through a caching allocator: steady-state steps must not reach the system allocator)
  virtual void* alloc(size_t bytes) = 0;
  virtual void dealloc(void* p, size_t bytes) = 0;
  virtual size_t system_allocations() const = 0;  // calls that reached malloc/cudaMalloc so far
  virtual size_t bytes_in_use() const = 0;
  virtual size_t peak_bytes_in_use() const = 0;
  virtual void to_host(void* dst_host, const void* src, size_t bytes) = 0;
  virtual void from_host(void* dst, const void* src_host, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // same device
  virtual void synchronize() = 0;

  // ---- fills and random numbers (counter-based: element i of stream (seed, offset) is the same on every backend)
  virtual void fill(float* x, int64_t n, float value) = 0;
  virtual void fill_i32(int32_t* x, int64_t n, int32_t value) = 0;
  // uniform in (0, 1), element i from counter (offset + i)
  virtual void uniform(float* x, int64_t n, uint64_t seed, uint64_t offset) = 0;
  // inverted dropout: y[i] = x[i] * s_i, s_i = 1/(1-p) with probability 1-p, else 0, drawn from counter (offset + i).
  // No mask is stored: the backward pass calls this again on the gradient with the same (seed, offset).
  virtual void dropout(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t offset) = 0;

  // ---- matmul
  virtual void gemm(const GemmArgs& args) = 0;
  // The library's name for the kernel that runs `args` (oneDNN's impl_info_str, e.g. "brg:avx512_core_amx_bf16").
  virtual std::string gemm_implementation(const GemmArgs& args) = 0;
  // How this device runs GemmInputs::BF16: natively, emulated (the same products without bf16 instructions: no faster
  // than f32), or not at all; `why` gets the device's instruction set or architecture in words.
  enum class Bf16 : uint8_t { Native, Emulated, None };
  virtual Bf16 bf16_support(std::string* why) = 0;
  // y = x rounded to bfloat16 (round to nearest even; NaN stays NaN), stored as its 16 bits
  virtual void to_bf16(const float* x, uint16_t* y, int64_t n) = 0;

  // ---- elementwise
  virtual void unary(Unary op, const float* x, float* y, int64_t n, float a, float b) = 0;
  // gx = gy * f'(x) (accumulate: gx += ...). x is the input, y = f(x) the saved output (either may be used).
  virtual void unary_backward(Unary op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                              float a, float b, bool accumulate) = 0;
  // out[i] = op(a[i * sa], b[i * sb]) over the broadcast iteration (out contiguous, shape p.shape).
  virtual void binary(Binary op, const Broadcast& p, const float* a, const float* b, float* out, float scalar) = 0;
  // out (numel out_numel) = sum of x over the dimensions where p.sa is 0; x is contiguous with shape p.shape and
  // p.sa holds the output's strides. Overwrites out (accumulate: adds to it).
  virtual void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate) = 0;
  // dst[idx . dst_strides] (+)= src[idx . src_strides] for every idx in shape: permute, slice, concat, split.
  virtual void copy_strided(int ndim, const int64_t* shape, const float* src, const int64_t* src_strides, float* dst,
                            const int64_t* dst_strides, bool accumulate) = 0;
  // sum of x[i]^2 in double precision (for the global gradient norm)
  virtual double sum_squares(const float* x, int64_t n) = 0;

  // ---- softmax over rows of length n: y = softmax(scale * x + mask_row), where mask_row is row
  // (r / rows_per_mask) of the additive mask (rows/rows_per_mask, n), or absent when mask is null.
  virtual void softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, float scale,
                       int64_t rows_per_mask) = 0;
  // gx = scale * y * (gy - sum(gy * y)) (accumulate: gx += ...)
  virtual void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, float scale,
                                bool accumulate) = 0;
  // Attention's weights as its product with V reads them, in one pass: p = softmax(scale * x + mask_row) as above,
  // written to y (f32) unless y is null (backward needs it), and p after inverted dropout (element i drawn as
  // dropout() draws it from (seed, offset); p_drop 0 keeps p) written to out (f32, or bf16 bits when out_bf16).
  virtual void softmax_dropout(const float* x, const float* mask, float* y, void* out, bool out_bf16, int64_t rows,
                               int64_t n, float scale, int64_t rows_per_mask, float p_drop, uint64_t seed,
                               uint64_t offset) = 0;
  // gx = scale * y * (d - sum(d * y)) with d = gout after the same dropout: d[i] = gout[i] / (1 - p_drop) where the
  // forward's out[i] (f32, or bf16 when out_bf16) is not 0, else 0; out null: d = gout. Reading the mask from what
  // the product with V keeps anyway costs no memory and no second draw (an element whose kept weight underflows to 0
  // has y < 1e-40, so what it would add is below float resolution).
  virtual void softmax_dropout_backward(const float* y, const void* out, bool out_bf16, const float* gout, float* gx,
                                        int64_t rows, int64_t n, float scale, float p_drop, bool accumulate) = 0;
  // ---- fused attention (FlashAttention-2): for every sequence b and head h, out_h = dropout(softmax(scale * q_h k_h^T +
  // mask_b)) v_h without the (Tq, Tk) weights: blocks of keys at a time with an online softmax. Each row's softmax
  // statistics are saved for the backward pass, which recomputes the weights block by block (FusedAttentionArgs).
  // out: f32, or bf16 bits when out_bf16 (the copy the next product would make).
  virtual void attention(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats) = 0;
  // gq, gk, gv (overwritten, f32, in q's, k's and v's layout) from gout, out and stats of attention(a, ...).
  virtual void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                                  const float* gout, float* gq, float* gk, float* gv) = 0;
  // y = log_softmax(x + mask_row) with the same mask convention (scale 1)
  virtual void log_softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n,
                           int64_t rows_per_mask) = 0;
  // gx = gy - exp(y) * sum(gy) (accumulate: gx += ...)
  virtual void log_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                                    bool accumulate) = 0;

  // ---- layer norm over rows of length n; mean and rstd (rows) are saved for backward
  virtual void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                          int64_t rows, int64_t n, float eps) = 0;
  // gx (accumulate: gx += ...); ggamma and gbeta always accumulate (they are parameter grads)
  virtual void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                                   const float* gy, float* gx, float* ggamma, float* gbeta, int64_t rows, int64_t n,
                                   bool accumulate) = 0;

  // ---- embeddings: out[i, :] = table[ids[i], :]; gtable[ids[i], :] += g[i, :] (accumulates)
  virtual void gather_rows(const float* table, const int32_t* ids, float* out, int64_t n_ids, int64_t dim) = 0;
  virtual void scatter_add_rows(const float* g, const int32_t* ids, float* gtable, int64_t n_ids, int64_t dim) = 0;

  // ---- cross-entropy over rows of C logits with integer labels. Per row r with label y != ignore_index:
  // logp = log_softmax(logits_r); loss_r = -(1 - s) * logp[y] - (s / C) * sum(logp); rows with y == ignore_index
  // get loss 0. logp (rows, C) is saved for backward. Returns the number of rows not ignored.
  virtual int64_t cross_entropy(const float* logits, const int32_t* labels, float* logp, float* row_loss,
                                int64_t rows, int64_t C, int32_t ignore_index, float smoothing) = 0;
  // glogits_r (+)= gscale * (softmax(logits_r) - target_r), target = (1 - s) * onehot(y) + s / C; 0 for ignored rows
  virtual void cross_entropy_backward(const float* logp, const int32_t* labels, float* glogits, int64_t rows,
                                      int64_t C, int32_t ignore_index, float smoothing, float gscale,
                                      bool accumulate) = 0;

  // ---- optimizer: decoupled weight decay AdamW over every slot, in one pass that also rounds the updated weights of
  // the slots with a param_bf16 (autocast's copies for the next step: framework/autocast.h, WeightCopies)
  virtual void adamw(const AdamWSlot* slots, int count, const AdamWHyper& h) = 0;
};

// The backend for a device. CUDA throws hr::Error with a clear message when it was not built or no GPU is present.
Backend& backend(Device d);
bool cuda_available();

}  // namespace hr
