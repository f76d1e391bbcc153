// The fused AdamW step: one launch updates every parameter tensor. The slots are uploaded as a device array of
// descriptors with the flat offset where each begins; a thread finds its slot by binary search over those offsets and
// applies math::adamw_update, the CPU backend's functor, and writes the bf16 copy of the weight where the slot asks.
#include <cmath>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/host_copy.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/math/bf16.h"
#include "kernels/math/rows.h"

namespace hr::cuda {
namespace {

struct SlotRange {
  AdamWSlot slot;
  int64_t begin;  // flat index of the slot's first element over all slots
};

__global__ void adamw_kernel(const SlotRange* slots, int count, int64_t total, float lr, float beta1, float beta2,
                             float eps, float bc1, float bc2) {
  HR_GRID_STRIDE(e, total) {
    int lo = 0, hi = count - 1;  // the last slot with begin <= e
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (slots[mid].begin <= e) lo = mid; else hi = mid - 1;
    }
    const AdamWSlot& s = slots[lo].slot;
    const int64_t i = e - slots[lo].begin;
    math::adamw_update(s.param[i], s.grad[i], s.m[i], s.v[i], lr * s.lr_scale, beta1, beta2, eps, s.weight_decay, bc1,
                       bc2);
    if (s.param_bf16) s.param_bf16[i] = math::to_bf16(s.param[i]);
  }
}

}  // namespace

void adamw(const AdamWSlot* slots, int count, const AdamWHyper& h, CachingAllocator& allocator, cudaStream_t stream) {
  std::vector<SlotRange> ranges;
  int64_t total = 0;
  for (int k = 0; k < count; ++k) {
    if (slots[k].n <= 0) continue;  // empty slots would tie with their successor in the search
    ranges.push_back(SlotRange{slots[k], total});
    total += slots[k].n;
  }
  if (total == 0) return;
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step)));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step)));
  const size_t bytes = ranges.size() * sizeof(SlotRange);
  ScratchBuffer device_ranges(allocator, bytes);
  copy_from_host(device_ranges.as<SlotRange>(), ranges.data(), bytes, stream);
  adamw_kernel<<<grid_for(total), kThreads, 0, stream>>>(device_ranges.as<SlotRange>(), static_cast<int>(ranges.size()),
                                                         total, h.lr, h.beta1, h.beta2, h.eps, bc1, bc2);
  HR_CUDA_CHECK_LAUNCH();
}

}  // namespace hr::cuda
