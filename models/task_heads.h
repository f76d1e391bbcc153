// The built-in task heads: a sequence classifier (model.type encoder_classifier) and a span head for extractive QA
// (encoder_span_qa). Registered in models/task_head.cpp.
#pragma once

#include "models/basic_layers.h"
#include "models/task_head.h"

namespace hr {

// How a sequence classifier pools the hidden states: the [CLS] state, the masked mean, or BERT's pooler (a dense
// layer + tanh on the [CLS] state, parameters "classifier.pooler.*").
enum class Pooling { cls, mean, cls_pooler };

// Pooling, dropout, then a linear layer: (B, T, D) -> (B, num_labels).
class SequenceClassifierHead : public TaskHead {
 public:
  SequenceClassifierHead(int64_t d_model, int64_t num_labels, Pooling pooling, float dropout);
  Tensor forward(const Tensor& hidden, const EncoderInput& in) override;
  Tensor pool(const Tensor& hidden, const EncoderInput& in) const;  // (B, T, D) -> (B, D)
  const char* name() const override { return "classifier"; }
  Tensor& weight;  // (num_labels, D)
  Tensor& bias;    // (num_labels)
  Linear* pooler = nullptr;  // (D, D) with cls_pooler

 private:
  Pooling pooling_;
  float dropout_;
};

// Start and end logits per token: (B, T, D) -> (B, T, 2).
class SpanHead : public TaskHead {
 public:
  explicit SpanHead(int64_t d_model);
  Tensor forward(const Tensor& hidden, const EncoderInput& in) override;
  const char* name() const override { return "span"; }
  Tensor& weight;  // (2, D)
  Tensor& bias;    // (2)
};

std::unique_ptr<TaskHead> make_sequence_classifier_head(const Config& model_block, const HeadSettings& s);
std::unique_ptr<TaskHead> make_span_head(const Config& model_block, const HeadSettings& s);

}  // namespace hr
