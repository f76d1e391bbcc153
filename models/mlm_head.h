// BERT's masked-language-model head (BertOnlyMLMHead, model.type encoder_mlm): dense -> GELU -> LayerNorm, then a
// decoder tied to the token embeddings plus an output bias. Pretraining decodes only the masked positions
// (`logits_at`): a dense decoder over every position of a 30522-token vocabulary costs more than a small encoder.
#pragma once

#include <vector>

#include "models/basic_layers.h"
#include "models/task_head.h"

namespace hr {

class MlmHead : public TaskHead {
 public:
  // `word_embeddings` (V, D) is the model's token table: the decoder's weight, shared, not a parameter of the head.
  MlmHead(int64_t d_model, float ln_eps, Tensor& word_embeddings);
  // Every position: (B, T, D) -> (B, T, V) logits (prediction, and Hugging Face's prediction_logits).
  Tensor forward(const Tensor& hidden, const EncoderInput& in) override;
  // Only the rows `positions` (b * T + t) of hidden (B, T, D): (M, V) logits.
  Tensor logits_at(const Tensor& hidden, const std::vector<int64_t>& positions) const;
  const char* name() const override { return "mlm"; }

  Linear& dense;  // (D, D)
  LayerNorm& ln;
  Tensor& bias;   // (V)

 private:
  Tensor decode(const Tensor& h) const;  // (..., D) -> (..., V)
  Tensor& decoder_;                      // (V, D): the token embeddings
};

std::unique_ptr<TaskHead> make_mlm_head(const Config& model_block, const HeadSettings& s);

}  // namespace hr
