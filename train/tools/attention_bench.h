// `headroom bench CONFIG --attention`: attention alone, on the shape of the config's first layer with heads at
// --batch x --seq-len, without the rest of the model: the fused op (fused_attention) and the unfused ops it replaces
// (head_scores, attention_weights, head_context), forward and forward + backward, in f32 and in bf16, so that the
// kernel can be weighed against the path it replaces and against PyTorch's scaled_dot_product_attention on the same
// shape (scripts/torch_attention.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace hr {

struct AttentionTiming {
  std::string path;       // "fused" or "unfused"
  std::string precision;  // "f32" or "bf16" (an autocast scope: bf16 operands, f32 sums and output)
  double forward_ms = 0, forward_backward_ms = 0;  // medians
};

// Times each path `runs` times after two warm-up calls on device d: q, k and v (B, T, H*Dh) uniform in [-1, 1), no key
// mask, dropout p on the weights, the output's gradient fixed; bf16 only where the device runs it.
std::vector<AttentionTiming> time_attention(Device d, int64_t B, int64_t T, int64_t H, int64_t Dh, float p, int runs);

// Model FLOPs of one forward pass of attention over (B, H, T, T) weights of heads of Dh: 4 B H T^2 Dh (two products);
// forward + backward counts 3.5 times that, as FlashAttention-2's paper does (the backward's five products).
double attention_forward_flops(int64_t B, int64_t T, int64_t H, int64_t Dh);

}  // namespace hr
