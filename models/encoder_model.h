// The whole model: embeddings (token + learned position [+ segment]), a stack of registry-built layers, and a task
// head: a sequence classifier (CLS or masked-mean pooling) or a span head (start/end logits for extractive QA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "models/basic_layers.h"
#include "models/layer.h"

namespace hr {

// One batch of token sequences, padded to a common length T.
struct EncoderInput {
  Tensor ids;         // (B, T) i32
  Tensor segments;    // (B, T) i32 segment ids (QA pairs), or undefined
  Tensor token_mask;  // (B, T) f32: 1 for a token, 0 for padding
  Tensor key_mask;    // (B, T) f32 additive: 0 for a token, -1e9 for padding
};
// Builds the tensors of an EncoderInput from host rows (each row's length <= T; shorter rows are padded with pad_id).
EncoderInput make_encoder_input(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id, Device d,
                                const std::vector<std::vector<int32_t>>* segments = nullptr);

class Embeddings : public Module {
 public:
  Embeddings(int64_t vocab, int64_t max_len, int64_t segments, int64_t d_model, float dropout, float ln_eps);
  Tensor forward(const EncoderInput& in) const;  // (B, T, D)
  Tensor& token;     // (V, D)
  Tensor& position;  // (max_len, D)
  Tensor* segment = nullptr;  // (S, D)
  LayerNorm& ln;

 private:
  float dropout_;
};

struct ModelDims {
  int64_t vocab_size = 0;
  int64_t num_labels = 0;  // classification only
};

class EncoderModel : public Module {
 public:
  enum class Task { Classification, SpanQA };
  EncoderModel(const Config& model, const ModelDims& dims);

  // Classification: (B, num_labels) logits. SpanQA: (B, T, 2) start/end logits. attention_maps: see LayerContext.
  Tensor forward(const EncoderInput& in, std::vector<Tensor>* attention_maps = nullptr);
  Tensor hidden_states(const EncoderInput& in, std::vector<Tensor>* attention_maps = nullptr);  // (B, T, D)
  Tensor penalty() const;  // the sum of the layers' penalties (L0 gates), or undefined
  std::vector<LayerStats> layer_stats(int64_t seq_len) const;
  Layer& layer(size_t i) const { return *layers_[i]; }
  size_t num_layers() const { return layers_.size(); }

  Task task() const { return task_; }
  int64_t d_model() const { return d_model_; }
  int64_t max_len() const { return max_len_; }
  int64_t num_labels() const { return task_ == Task::Classification ? head_->weight.dim(0) : 0; }
  int64_t segments() const { return segments_; }

 private:
  Task task_;
  int64_t d_model_, max_len_, segments_;
  bool pre_norm_;
  std::string pooling_;
  float dropout_;
  Embeddings* embeddings_ = nullptr;
  std::vector<Layer*> layers_;
  LayerNorm* final_ln_ = nullptr;  // pre-LN stacks end with a LayerNorm
  Linear* head_ = nullptr;         // (num_labels, D) or (2, D)
};

// Builds the model from the `model:` block and checks every key of that block was understood.
std::unique_ptr<EncoderModel> build_model(const Config& model, const ModelDims& dims);

}  // namespace hr
