// Task heads: the module on top of the encoder's hidden states (a sequence classifier, a span head, a tagger, ...),
// chosen by `model.type` from a registry, as layer types are. A head reads its own keys of the model: block (e.g.
// `pooling`), so an unknown key is reported like any other. A task (train/tasks/) names the model.type it trains.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/config.h"
#include "framework/module.h"
#include "models/encoder_input.h"

namespace hr {

// What the data decides about a model: set by the task, stored by the model (pruning and export rebuild from it).
struct ModelDims {
  int64_t vocab_size = 0;
  int64_t num_labels = 0;  // classifiers and taggers
  int64_t segments = 0;    // segment (token type) embeddings the task's inputs use; model.segments overrides
};

class TaskHead : public Module {
 public:
  // hidden (B, T, D) -> the head's output, e.g. (B, num_labels) or (B, T, 2)
  virtual Tensor forward(const Tensor& hidden, const EncoderInput& in) = 0;
  // The name its parameters live under in the model (checkpoint keys "<name>.weight", ...).
  virtual const char* name() const = 0;
};

struct HeadSettings {
  int64_t d_model = 0;
  float dropout = 0.f;
  ModelDims dims;
  float layer_norm_eps = 1e-5f;
  Tensor* token_embeddings = nullptr;  // (V, D): the model's token table, for a head tied to it (MLM's decoder)
};
using HeadFactory = std::function<std::unique_ptr<TaskHead>(const Config& model_block, const HeadSettings& settings)>;

void register_head(const std::string& model_type, HeadFactory factory);
bool head_registered(const std::string& model_type);
// The head for model.type; an unknown type is a ConfigError naming the key and the known types.
std::unique_ptr<TaskHead> build_head(const Config& model_block, const std::string& model_type,
                                     const HeadSettings& settings);

}  // namespace hr
