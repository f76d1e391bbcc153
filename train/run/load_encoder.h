// A run's tokenizer and model without its task: for tools that only run the encoder on texts (embed, heads --roles),
// including an imported encoder whose classifier the training data will size (a classification run without
// labels.txt, hr::import_hf_bert).
#pragma once

#include <memory>
#include <string>

#include "models/encoder_model.h"
#include "train/run/run_config.h"
#include "train/tokenizer/tokenizer.h"

namespace hr {

struct LoadedEncoder {
  RunConfig config;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<EncoderModel> model;
};

// DIR's tokenizer and model with checkpoint-<which> loaded. A classification run without labels.txt is built with a
// one-label classifier that its checkpoint need not hold; every other parameter must be there.
LoadedEncoder load_encoder(const std::string& dir, const std::string& which);

}  // namespace hr
