#include "models/task_heads.h"

#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

SequenceClassifierHead::SequenceClassifierHead(int64_t d_model, int64_t num_labels, Pooling pooling, float dropout)
    : weight(register_parameter("weight", {num_labels, d_model}, Init::normal(0.02f))),
      bias(register_parameter("bias", {num_labels}, Init::zeros())),
      pooling_(pooling),
      dropout_(dropout) {
  if (pooling == Pooling::cls_pooler) pooler = &register_module("pooler", std::make_unique<Linear>(d_model, d_model));
}

Tensor SequenceClassifierHead::pool(const Tensor& h, const EncoderInput& in) const {
  if (pooling_ == Pooling::mean) {
    Tensor m = reshape(in.token_mask, {h.dim(0), h.dim(1), 1});
    return div(sum(mul(h, m), 1), sum(m, 1));  // masked mean: (B, D) / (B, 1)
  }
  Tensor cls = select(h, 1, 0);  // (B, D)
  return pooler ? tanh(pooler->forward(cls)) : cls;
}

Tensor SequenceClassifierHead::forward(const Tensor& h, const EncoderInput& in) {
  return linear(dropout(pool(h, in), dropout_, training()), weight, bias);  // (B, num_labels)
}

SpanHead::SpanHead(int64_t d_model)
    : weight(register_parameter("weight", {2, d_model}, Init::normal(0.02f))),
      bias(register_parameter("bias", {2}, Init::zeros())) {}

Tensor SpanHead::forward(const Tensor& h, const EncoderInput&) { return linear(h, weight, bias); }  // (B, T, 2)

std::unique_ptr<TaskHead> make_sequence_classifier_head(const Config& m, const HeadSettings& s) {
  HR_CHECK(s.dims.num_labels > 0, "a classifier needs at least one label");
  const std::string p = m.get_choice("pooling", {"cls", "mean", "cls_pooler"}, "cls");
  const Pooling pooling = p == "mean" ? Pooling::mean : p == "cls_pooler" ? Pooling::cls_pooler : Pooling::cls;
  return std::make_unique<SequenceClassifierHead>(s.d_model, s.dims.num_labels, pooling, s.dropout);
}

std::unique_ptr<TaskHead> make_span_head(const Config&, const HeadSettings& s) {
  return std::make_unique<SpanHead>(s.d_model);
}

}  // namespace hr
