// Checkpoints in the safetensors format: weights under their parameter names, the optimizer's state under its own
// names ("<name>.adam_m", "<name>.sgd_momentum", ...) with the optimizer's name in the metadata, and the training position (step, epoch, batch, RNG stream, best metric) in the metadata. Written atomically: a kill
// while saving leaves the previous file intact.
#pragma once

#include <limits>
#include <string>

#include "framework/module.h"
#include "framework/optim.h"

namespace hr {

struct TrainState {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // current epoch (0-based)
  int64_t batch_in_epoch = 0;  // batches of this epoch already consumed
  uint64_t rng_seed = 0, rng_offset = 0;
  double best_metric = -std::numeric_limits<double>::infinity();
  int64_t best_step = -1;
  std::string note;  // from load_checkpoint: no checksums to verify, or optimizer state not restored (another one)
};

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer, const TrainState& state);
// Restores weights (every parameter must be present with its shape), optimizer state when `optimizer` is given (the
// checkpoint must come from the same optimizer), and returns the training position. A truncated or foreign file, a
// missing key or a wrong shape: hr::Error naming the file.
TrainState load_checkpoint(const std::string& path, Module& model, Optimizer* optimizer);

// Loads weights by parameter name (train.init_from). Parameters the file lacks keep their initialisation and are
// listed in the returned message (e.g. new gates on a trained model); a wrong shape is an error.
std::string load_weights(const std::string& path, Module& model);

}  // namespace hr
