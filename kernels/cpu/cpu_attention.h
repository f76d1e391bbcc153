// Fused attention for the CPU backend (Backend::attention): FlashAttention-2's algorithm as PyTorch's CPU flash kernel
// runs it (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp). The forward pass is parallel over (sequence, head,
// block of queries) and walks blocks of keys with an online softmax, keeping only the output and each row's statistics;
// the backward pass is parallel over (sequence, head), each task owning its head's columns of dq, dk and dv, and
// recomputes the weights block by block from those statistics. The block products are oneDNN sgemm calls on f32
// blocks (bf16 operands widened exactly; f32 operands read in place), so every CPU runs them, with or without bf16
// instructions.
#pragma once

#include "kernels/backend.h"

namespace hr::cpu {

void attention_forward(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats);
void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                        const float* gout, float* gq, float* gk, float* gv);

}  // namespace hr::cpu
