#include "models/mlm_head.h"

#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

MlmHead::MlmHead(int64_t d_model, float ln_eps, Tensor& word_embeddings)
    : dense(register_module("dense", std::make_unique<Linear>(d_model, d_model))),
      ln(register_module("ln", std::make_unique<LayerNorm>(d_model, ln_eps))),
      bias(register_parameter("bias", {word_embeddings.dim(0)}, Init::zeros())),
      decoder_(word_embeddings) {
  HR_CHECK(word_embeddings.ndim() == 2 && word_embeddings.dim(1) == d_model,
           "mlm head: the token embeddings must be (V, d_model)");
}

Tensor MlmHead::decode(const Tensor& h) const {
  return linear(ln.forward(gelu(dense.forward(h))), decoder_, bias);  // h W_e^T + b: (..., V)
}

Tensor MlmHead::forward(const Tensor& hidden, const EncoderInput&) { return decode(hidden); }

Tensor MlmHead::logits_at(const Tensor& hidden, const std::vector<int64_t>& positions) const {
  HR_CHECK(hidden.ndim() == 3, "mlm head: hidden states must be (B, T, D)");
  const Tensor rows = reshape(hidden, {hidden.dim(0) * hidden.dim(1), hidden.dim(2)});  // (B*T, D)
  return decode(index_select0(rows, positions));                                        // (M, V)
}

std::unique_ptr<TaskHead> make_mlm_head(const Config&, const HeadSettings& s) {
  HR_CHECK(s.token_embeddings, "the mlm head needs the model's token embeddings");
  return std::make_unique<MlmHead>(s.d_model, s.layer_norm_eps, *s.token_embeddings);
}

}  // namespace hr
