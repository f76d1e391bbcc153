// The small building blocks: Linear (PyTorch layout, weight (out, in)), LayerNorm and FeedForward.
#pragma once

#include "framework/module.h"
#include "framework/ops.h"

namespace hr {

class Linear : public Module {
 public:
  // Weights ~ N(0, init_std) (BERT's 0.02 by default), bias zero.
  Linear(int64_t in, int64_t out, bool bias = true, float init_std = 0.02f);
  // (..., in) -> (..., out); `bf16_for_product`: see linear() (framework/ops.h)
  Tensor forward(const Tensor& x, bool bf16_for_product = false) const { return linear(x, weight, bias, bf16_for_product); }
  Tensor& weight;  // (out, in)
 private:
  Tensor no_bias_;
 public:
  Tensor& bias;  // (out), undefined without bias
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, float eps = 1e-5f);
  Tensor forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }
  Tensor& weight;
  Tensor& bias;
  float eps;
};

// Linear -> GELU -> dropout (activation_dropout: BERT has none) -> Linear; the dropout after the block is the caller's
// residual dropout
class FeedForward : public Module {
 public:
  FeedForward(int64_t d_model, int64_t ffn_dim, float activation_dropout);
  Tensor forward(const Tensor& x) const;  // (B, T, D) -> (B, T, D)
  Linear& in;
  Linear& out;
  float dropout_p;
};

}  // namespace hr
