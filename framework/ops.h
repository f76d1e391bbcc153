// Differentiable ops: free functions, forward and backward side by side in framework/ops/*.cpp (one family a file).
// Each runs on the device of its inputs through that device's Backend and records itself on the tape when an input
// requires grad. Index inputs (token ids, labels) are i32 tensors and never differentiable.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/tensor.h"

namespace hr {

// ---- elementwise with numpy-style broadcasting (ops/elementwise.cpp)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor mask_fill(const Tensor& x, const Tensor& mask, float value);  // mask != 0 -> value (mask broadcast, no grad)
Tensor scale(const Tensor& x, float s);
Tensor add_scalar(const Tensor& x, float s);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // erf form
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor pow(const Tensor& x, float p);
Tensor clamp(const Tensor& x, float lo, float hi);  // gradient 1 inside [lo, hi], 0 outside
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

// In place and never recorded (gradient buffers, optimizers): dst += src of the same shape; x *= s.
void add_(Tensor& dst, const Tensor& src);
void scale_(Tensor& x, float s);

// Shape of a broadcast between a and b (numpy rules); throws naming both shapes when they do not broadcast.
Shape broadcast_shape(const Shape& a, const Shape& b);
// Sums g down to `shape` over the broadcast dimensions (the backward of a broadcast).
Tensor sum_to(const Tensor& g, const Shape& shape);

// ---- matmul (ops/matmul.cpp)
// a (..., M, K) @ b (..., K, N) -> (..., M, N); with trans flags a is (..., K, M) / b is (..., N, K). Batch dims must be
// equal, or one operand is 2-D and broadcast over the other's batch.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x (..., in) @ w^T + b: w (out, in) as PyTorch's Linear; bias (out) or undefined. x may be autocast_operand()'s copy.
// `bf16_for_product`: the caller only multiplies the result (attention's q, k and v), so without gradients to record
// under a bf16 scope the gemm writes it in bf16, the f32 result rounded, instead of f32 that the product rounds again.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, bool bf16_for_product = false);
// gelu(linear(x, w, bias)); without gradients to record, GELU is the gemm's epilogue (one pass over the output less),
// and `bf16_for_product` as for linear (the FFN's hidden layer, read only by its second linear without dropout).
Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& bias, bool bf16_for_product = false);
// x as the products above read it: under a bf16 autocast scope its bf16 copy, recorded so that x gets its gradient
// (the copy is all their backward rules keep), else x. An activation that feeds several products (attention's q, k and
// v) is rounded once this way instead of once in each.
Tensor autocast_operand(const Tensor& x);
// Attention's two products, reading and writing the heads where they lie in (B, T, H*Dh) (head h is columns
// [h*Dh, (h+1)*Dh)), so that nothing is permuted to (B, H, T, Dh) and back, forward or backward:
// q (B, Tq, H*Dh), k (B, Tk, H*Dh) -> (B, H, Tq, Tk): head h's q_h k_h^T.
Tensor head_scores(const Tensor& q, const Tensor& k, int64_t heads);
// probs (B, H, Tq, Tk), v (B, Tk, H*Dh) -> (B, Tq, H*Dh): head h's probs_h v_h in head h's columns.
Tensor head_context(const Tensor& probs, const Tensor& v);

// ---- shape (ops/shape.cpp). reshape is a view; permute/transpose/concat/split/slice materialise.
Tensor reshape(const Tensor& x, const Shape& shape);  // one dimension may be -1
Tensor permute(const Tensor& x, const std::vector<int>& perm);
Tensor transpose(const Tensor& x, int d0, int d1);
Tensor concat(const std::vector<Tensor>& xs, int dim);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim);
Tensor slice(const Tensor& x, int dim, int64_t start, int64_t end);  // [start, end)
Tensor select(const Tensor& x, int dim, int64_t index);                // removes dim
// Rows of x (first dim) picked by host indices: (n, ...) -> (k, ...). Backward scatters back.
Tensor index_select0(const Tensor& x, const std::vector<int64_t>& index);

// ---- reductions (ops/reduce.cpp)
Tensor sum(const Tensor& x);                                   // all elements -> scalar
Tensor mean(const Tensor& x);                                  // all elements -> scalar
Tensor sum(const Tensor& x, int dim, bool keepdim = false);
Tensor mean(const Tensor& x, int dim, bool keepdim = false);

// ---- softmax family over the last dim (ops/softmax.cpp)
// softmax(scale * x + mask): mask is an additive float tensor of shape (M, n) whose row r / (rows / M) applies to row r
// of x viewed as (rows, n) (e.g. x (B, H, T, T) with a key mask (B, T): each batch's H*T rows share its row); undefined
// for no mask. Masked entries (-1e9 or below) get probability 0; a fully masked row is uniform.
Tensor softmax(const Tensor& x, const Tensor& mask = Tensor(), float scale = 1.f);
Tensor log_softmax(const Tensor& x, const Tensor& mask = Tensor());
// Attention's weights as head_context multiplies them: dropout(softmax(x, mask, scale), p, training) in one pass (the
// values and dropout draws of those two ops), returned in bf16 under a bf16 autocast scope (the copy head_context would
// make), else f32. Its backward rule keeps the f32 probabilities and reads the dropout mask from the dropped weights
// (which head_context keeps anyway).
Tensor attention_weights(const Tensor& x, const Tensor& mask, float scale, float p, bool training);

// ---- fused attention (ops/attention.cpp): head_context(attention_weights(head_scores(q, k, heads), mask, scale, p,
// training), v) in one op that never makes the (B, H, Tq, Tk) weights (FlashAttention-2: blocks of keys with an online
// softmax; the backward pass recomputes the weights block by block from two floats a row). q (B, Tq, H*Dh), k and v
// (B, Tk, H*Dh) -> (B, Tq, H*Dh); mask (B, Tk) additive or undefined. The same dropout draws, and under a bf16 scope
// the same bf16 operands with f32 sums, as the unfused ops. `bf16_for_product`: the caller only multiplies the result
// (the output projection), so under a bf16 scope it is returned in bf16, as that product would round it, and the
// backward rule keeps that copy instead of an f32 one besides. CPU only for now (Backend::attention).
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads, const Tensor& mask,
                       float scale, float p, bool training, bool bf16_for_product = false);

// ---- normalisation (ops/norm.cpp): over the last dim, gamma/beta of size (n)
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps = 1e-5f);

// ---- embedding lookup (ops/embedding.cpp): table (V, D), ids i32 of any shape -> (ids..., D); backward scatter-adds.
// Ids out of range are an error naming the id and the table size.
Tensor embedding(const Tensor& table, const Tensor& ids);

// ---- dropout (ops/dropout.cpp): inverted dropout with mask from the global generator; identity when !training or p = 0.
Tensor dropout(const Tensor& x, float p, bool training);

// Uniform (0, 1) noise from the global generator (hard-concrete gates); a constant, not differentiable.
Tensor rand_uniform(const Shape& shape, Device d = Device::CPU);

// ---- losses (ops/loss.cpp)
// Mean cross-entropy of logits (N, C) against labels i32 (N) over rows whose label != ignore_index, with label
// smoothing s (PyTorch's definition). Labels outside [0, C) other than ignore_index are an error. A batch whose every
// row is ignored gives 0.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int32_t ignore_index = -100, float smoothing = 0.f);

}  // namespace hr
