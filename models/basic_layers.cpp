#include "models/basic_layers.h"

namespace hr {

Linear::Linear(int64_t in, int64_t out, bool with_bias, float init_std)
    : weight(register_parameter("weight", {out, in}, Init::normal(init_std))),
      bias(with_bias ? register_parameter("bias", {out}, Init::zeros()) : no_bias_) {}

LayerNorm::LayerNorm(int64_t dim, float eps_)
    : weight(register_parameter("weight", {dim}, Init::ones())),
      bias(register_parameter("bias", {dim}, Init::zeros())),
      eps(eps_) {}

FeedForward::FeedForward(int64_t d_model, int64_t ffn_dim, float activation_dropout)
    : in(register_module("in", std::make_unique<Linear>(d_model, ffn_dim))),
      out(register_module("out", std::make_unique<Linear>(ffn_dim, d_model))),
      dropout_p(activation_dropout) {}

Tensor FeedForward::forward(const Tensor& x) const {
  const bool no_dropout = !training() || dropout_p == 0.f;  // then only the second linear reads the hidden layer
  return out.forward(hr::dropout(linear_gelu(x, in.weight, in.bias, no_dropout), dropout_p, training()));
}

}  // namespace hr
