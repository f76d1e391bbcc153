// One batch of token sequences as the encoder takes it, padded to a common length T.
#pragma once

#include <vector>

#include "framework/tensor.h"

namespace hr {

struct EncoderInput {
  Tensor ids;         // (B, T) i32
  Tensor segments;    // (B, T) i32 segment ids (sentence pairs, QA), or undefined
  Tensor token_mask;  // (B, T) f32: 1 for a token, 0 for padding
  Tensor key_mask;    // (B, T) f32 additive: 0 for a token, -1e9 for padding
};
// Builds the tensors of an EncoderInput from host rows (each row's length <= T; shorter rows are padded with pad_id).
EncoderInput make_encoder_input(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id, Device d,
                                const std::vector<std::vector<int32_t>>* segments = nullptr);

}  // namespace hr
