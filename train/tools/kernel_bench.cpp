#include "train/tools/kernel_bench.h"

#include <algorithm>
#include <functional>

#include "framework/tensor.h"
#include "train/tools/bench.h"

namespace hr {

namespace {

Broadcast same_shape(int64_t rows, int64_t cols) {
  Broadcast p;
  p.ndim = 2;
  p.shape[0] = rows, p.shape[1] = cols;
  p.sa[0] = p.sb[0] = cols;
  p.sa[1] = p.sb[1] = 1;
  return p;
}

}  // namespace

std::vector<KernelTiming> time_kernels(Device d, int64_t rows, int64_t d_model, int64_t ffn, int64_t heads_rows,
                                       int64_t T, int64_t parameters, int runs) {
  Backend& be = backend(d);
  const int64_t wide = rows * ffn, narrow = rows * d_model, probs = heads_rows * T;
  const int64_t big = std::max({wide, probs, parameters});
  Tensor x = Tensor::full({big}, 0.5f, d), y = Tensor::full({big}, 0.25f, d), z = Tensor::empty({big}, d);
  Tensor m = Tensor::zeros({parameters}, d), v = Tensor::zeros({parameters}, d);
  Tensor half = Tensor::empty({big}, d, DType::BF16);
  Tensor gamma = Tensor::full({d_model}, 1.f, d), beta = Tensor::zeros({d_model}, d);
  Tensor mean = Tensor::empty({rows}, d), rstd = Tensor::empty({rows}, d);
  const float s = 1.f / 8.f;

  std::vector<KernelTiming> out;
  const auto time = [&](std::string name, int64_t n, double bytes_per_element, const std::function<void()>& call) {
    const double us = 1000 * median_call_ms(be, runs, call);
    out.push_back({std::move(name), n, bytes_per_element * static_cast<double>(n), us});
  };
  time("to_bf16 (B*T, ffn)", wide, 6, [&] { be.to_bf16(x.data(), half.bf16(), wide); });
  time("dropout (B*T, ffn)", wide, 8, [&] { be.dropout(x.data(), z.data(), wide, 0.1f, 1, 0); });
  time("gelu (B*T, ffn)", wide, 8, [&] { be.unary(Unary::Gelu, x.data(), z.data(), wide, 0.f, 0.f); });
  time("gelu backward (B*T, ffn)", wide, 12, [&] {  // GELU's derivative reads its input; the saved output is unused
    be.unary_backward(Unary::Gelu, x.data(), x.data(), y.data(), z.data(), wide, 0.f, 0.f, false);
  });
  time("add (B*T, D)", narrow, 12,
       [&] { be.binary(Binary::Add, same_shape(rows, d_model), x.data(), y.data(), z.data(), 0.f); });
  time("layer_norm (B*T, D)", narrow, 8, [&] {
    be.layer_norm(x.data(), gamma.data(), beta.data(), z.data(), mean.data(), rstd.data(), rows, d_model, 1e-5f);
  });
  time("softmax (B*H*T, T)", probs, 8, [&] { be.softmax(x.data(), nullptr, z.data(), heads_rows, T, s, 1); });
  time("softmax backward (B*H*T, T)", probs, 12,
       [&] { be.softmax_backward(x.data(), y.data(), z.data(), heads_rows, T, s, false); });
  time("dropout (B*H*T, T)", probs, 8, [&] { be.dropout(x.data(), z.data(), probs, 0.1f, 1, 0); });
  time("softmax + dropout -> bf16 (B*H*T, T)", probs, 10, [&] {  // attention_weights: probabilities and bf16 output
    be.softmax_dropout(x.data(), nullptr, z.data(), half.bf16(), true, heads_rows, T, s, 1, 0.1f, 1, 0);
  });
  time("softmax + dropout backward (B*H*T, T)", probs, 14, [&] {
    be.softmax_dropout_backward(x.data(), half.bf16(), true, y.data(), z.data(), heads_rows, T, s, 0.1f, false);
  });
  time("sum_squares (parameters)", parameters, 4, [&] { be.sum_squares(y.data(), parameters); });
  const AdamWSlot slot{z.data(), y.data(), m.data(), v.data(), parameters, 0.01f};
  time("adamw (parameters)", parameters, 28, [&] { be.adamw(&slot, 1, AdamWHyper{}); });
  return out;
}

}  // namespace hr
