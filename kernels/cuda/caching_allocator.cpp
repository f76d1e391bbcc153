#include "kernels/cuda/caching_allocator.h"

#include <bit>
#include <string>

#include "kernels/cuda/cuda_check.h"

namespace hr::cuda {

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes <= 512) return 512;
  const size_t below = std::bit_floor(bytes - 1);  // 2^k < bytes <= 2^(k+1)
  const size_t step = below / 4;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* p = nullptr;
  auto& bucket = free_[cls];
  if (!bucket.empty()) {
    p = bucket.back();
    bucket.pop_back();
  } else {
    cudaError_t status = cudaMalloc(&p, cls);
    if (status == cudaErrorMemoryAllocation) {
      // Cached blocks of other sizes may be what stands in the way: hand them back and try once more.
      (void)cudaGetLastError();
      release_cached_locked();
      status = cudaMalloc(&p, cls);
    }
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error("CUDA out of memory: cudaMalloc of " + std::to_string(cls) + " bytes failed (" +
                  cudaGetErrorString(status) + ") with " + std::to_string(in_use_) + " bytes in use by headroom");
    }
    ++system_allocations_;
  }
  live_[p] = Live{cls, bytes};
  in_use_ += cls;
  if (in_use_ > peak_) peak_ = in_use_;
  return p;
}

void CachingAllocator::dealloc(void* p, size_t bytes) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = live_.find(p);
  if (it == live_.end() || it->second.requested != bytes)
    throw Error("CUDA dealloc of " + std::to_string(bytes) + " bytes at a pointer this allocator did not hand out " +
                "with that size");
  free_[it->second.size_class].push_back(p);
  in_use_ -= it->second.size_class;
  live_.erase(it);
}

void CachingAllocator::release_cached_locked() {
  for (auto& [size, blocks] : free_)
    for (void* b : blocks) HR_CUDA_CHECK(cudaFree(b));  // cudaFree waits for queued work that uses the block
  free_.clear();
}

size_t CachingAllocator::system_allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return system_allocations_;
}
size_t CachingAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}
size_t CachingAllocator::peak_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

}  // namespace hr::cuda
