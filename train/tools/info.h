// `headroom info CONFIG`: per layer heads, head_dim, parameters and forward FLOPs per token; totals.
#pragma once

#include <ostream>

#include "models/encoder_model.h"

namespace hr {

void print_model_info(std::ostream& os, const EncoderModel& model, int64_t seq_len);

}  // namespace hr
