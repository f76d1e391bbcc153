// Checkpoints in the safetensors format: weights under their parameter names, the optimizer's state under its own
// names ("<name>.adam_m", "<name>.sgd_momentum", ...) with the optimizer's name in the metadata, and the training position (step, epoch, batch, RNG stream, best metric) in the metadata. Written atomically: a kill
// while saving leaves the previous file intact.
#pragma once

#include <limits>
#include <set>
#include <string>

#include "framework/module.h"
#include "framework/optim.h"
#include "train/run/model_record.h"

namespace hr {

class EncoderModel;

struct TrainState {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // current epoch (0-based)
  int64_t batch_in_epoch = 0;  // batches of this epoch already consumed
  uint64_t rng_seed = 0, rng_offset = 0;
  double best_metric = -std::numeric_limits<double>::infinity();
  int64_t best_step = -1;
  std::string note;  // from load_checkpoint: no checksums to verify, or optimizer state not restored (another one)
};

// `record`, when given, goes into the metadata (train/run/model_record.h).
void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer, const TrainState& state,
                     const ModelRecord* record = nullptr);
// Restores weights (every parameter must be present with its shape), optimizer state when `optimizer` is given (the
// checkpoint must come from the same optimizer), and returns the training position. A truncated or foreign file, a
// missing key, a wrong shape or a training position out of range: hr::Error naming the file. With `expected`, first
// the model the checkpoint records is compared with it (a ConfigError naming what differs).
TrainState load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer,
                           const ModelRecord* expected = nullptr);

// The weights of `model` less the parameters named in `leave_out`, as a checkpoint without optimizer state: a
// starting point for train.init_from whose missing parameters the new run initialises (an imported BERT classifier
// whose labels the training data will give).
void save_weights(const std::string& path, const Module& model, const std::set<std::string>& leave_out);

// Loads weights by parameter name (train.init_from). Parameters the file lacks keep their initialisation (e.g. new
// gates on a trained model); tensors of a task head this model does not have (a span QA checkpoint fine-tuned into a
// classifier) are skipped; the returned message names both. Optimizer state in the file is ignored. Any other tensor
// the model has no place for (an encoder layer it lacks), and a wrong shape, are errors naming the tensor and the file.
std::string load_weights(const std::string& path, EncoderModel& model);

}  // namespace hr
