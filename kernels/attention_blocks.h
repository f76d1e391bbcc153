// The block structure the fused attention kernels share across devices (kernels/cpu/cpu_attention.cpp,
// kernels/cuda/attention_kernels.cuh). Plain constants, for the host and the device.
#pragma once

namespace hr {

// Keys a fused forward pass walks at a time, on every device. The online softmax rescales once a block, and under
// bf16 a block's weights are rounded to bf16 against the running maximum of the blocks so far, so the devices give the
// same bf16 weights (and outputs to the bf16 step) only when their blocks of keys are the same.
constexpr int kFusedAttentionKeyBlock = 128;

}  // namespace hr
