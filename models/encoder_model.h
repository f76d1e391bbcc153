// The whole model: embeddings (token + learned position [+ segment]), a stack of registry-built layers, and a task
// head chosen by model.type from the head registry (models/task_head.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/autocast.h"
#include "framework/config.h"
#include "models/basic_layers.h"
#include "models/encoder_input.h"
#include "models/layer.h"
#include "models/task_head.h"

namespace hr {

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

class EncoderModel : public Module {
 public:
  EncoderModel(const Config& model, const ModelDims& dims);

  // The head's output, e.g. (B, num_labels) logits or (B, T, 2) start/end logits. attention_maps: see LayerContext.
  // Runs in precision() unless an autocast scope is already open (framework/autocast.h).
  Tensor forward(const EncoderInput& in, std::vector<Tensor>* attention_maps = nullptr);
  Tensor hidden_states(const EncoderInput& in, std::vector<Tensor>* attention_maps = nullptr);  // (B, T, D)
  Tensor penalty() const;  // the sum of the layers' penalties (L0 gates), or undefined
  std::vector<LayerStats> layer_stats(int64_t seq_len) const;
  Layer& layer(size_t i) const { return *layers_[i]; }
  size_t num_layers() const { return layers_.size(); }

  const std::string& type() const { return type_; }  // model.type: which head
  TaskHead& head() const { return *head_; }
  const ModelDims& dims() const { return dims_; }  // vocabulary, labels and segments as built
  int64_t d_model() const { return d_model_; }
  int64_t max_len() const { return max_len_; }
  int64_t segments() const { return dims_.segments; }
  // train.precision / --precision: the matmuls of forward() in bf16 (the weights stay f32)
  void set_precision(Precision p) { precision_ = p; }
  Precision precision() const { return precision_; }

 private:
  std::string type_;
  ModelDims dims_;
  int64_t d_model_, max_len_;
  bool pre_norm_;
  Embeddings* embeddings_ = nullptr;
  std::vector<Layer*> layers_;
  LayerNorm* final_ln_ = nullptr;  // pre-LN stacks end with a LayerNorm
  TaskHead* head_ = nullptr;
  Precision precision_ = Precision::F32;
};

// Builds the model from the `model:` block and checks every key of that block was understood.
std::unique_ptr<EncoderModel> build_model(const Config& model, const ModelDims& dims);
// The same model of shapes only (ShapesOnly, framework/module.h): its parameter counts and layer stats, for a model of
// any size that check_model_countable passes, without allocating its weights. It cannot run.
std::unique_ptr<EncoderModel> build_model_shapes(const Config& model, const ModelDims& dims);

}  // namespace hr
