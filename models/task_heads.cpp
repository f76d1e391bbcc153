#include "models/task_heads.h"

#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

SequenceClassifierHead::SequenceClassifierHead(int64_t d_model, int64_t num_labels, bool mean_pooling, float dropout)
    : weight(register_parameter("weight", {num_labels, d_model}, Init::normal(0.02f))),
      bias(register_parameter("bias", {num_labels}, Init::zeros())),
      mean_pooling_(mean_pooling),
      dropout_(dropout) {}

Tensor SequenceClassifierHead::forward(const Tensor& h, const EncoderInput& in) {
  Tensor pooled;
  if (!mean_pooling_) {
    pooled = select(h, 1, 0);  // (B, D)
  } else {
    Tensor m = reshape(in.token_mask, {h.dim(0), h.dim(1), 1});
    pooled = div(sum(mul(h, m), 1), sum(m, 1));  // masked mean: (B, D) / (B, 1)
  }
  return linear(dropout(pooled, dropout_, training()), weight, bias);  // (B, num_labels)
}

SpanHead::SpanHead(int64_t d_model)
    : weight(register_parameter("weight", {2, d_model}, Init::normal(0.02f))),
      bias(register_parameter("bias", {2}, Init::zeros())) {}

Tensor SpanHead::forward(const Tensor& h, const EncoderInput&) { return linear(h, weight, bias); }  // (B, T, 2)

std::unique_ptr<TaskHead> make_sequence_classifier_head(const Config& m, const HeadSettings& s) {
  HR_CHECK(s.dims.num_labels > 0, "a classifier needs at least one label");
  const bool mean = m.get_choice("pooling", {"cls", "mean"}, "cls") == "mean";
  return std::make_unique<SequenceClassifierHead>(s.d_model, s.dims.num_labels, mean, s.dropout);
}

std::unique_ptr<TaskHead> make_span_head(const Config&, const HeadSettings& s) {
  return std::make_unique<SpanHead>(s.d_model);
}

}  // namespace hr
