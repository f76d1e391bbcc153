// Deterministic broadcast reduction (Backend::sum_to) for the CPU backend: every output element is summed in an order
// fixed by the shapes alone, never by the thread count, and no two threads write the same element.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_allocator.h"

namespace hr::cpu {

// out (out_numel, contiguous) (+)= x (contiguous, shape p.shape) summed over the dims where p.sa is 0.
// Partial sums of long reductions live in blocks from `scratch`.
void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate, CpuAllocator& scratch);

}  // namespace hr::cpu
