#include "kernels/cpu/cpu_allocator.h"

#include <bit>
#include <cstdlib>
#include <new>

namespace hr {

CpuAllocator::~CpuAllocator() { release_cached(); }

size_t CpuAllocator::size_class(size_t bytes) {
  if (bytes <= 4 * kAlignment) return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // granularity: a quarter of the largest power of two not above bytes - 1
  const size_t step = (std::bit_floor(bytes - 1)) / 4;
  return (bytes + step - 1) / step * step;
}

void* CpuAllocator::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  void* p = nullptr;
  auto it = free_lists_.find(cls);
  if (it != free_lists_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_ -= cls;
  } else {
    p = std::aligned_alloc(kAlignment, cls);  // cls is a multiple of the alignment, as aligned_alloc requires
    if (!p) {
      // memory pressure: give the cached blocks back and try once more before failing
      free_cached_locked();
      p = std::aligned_alloc(kAlignment, cls);
      if (!p) throw std::bad_alloc();
    }
    ++system_allocations_;
  }
  in_use_ += cls;
  if (in_use_ > peak_) peak_ = in_use_;
  return p;
}

void CpuAllocator::deallocate(void* p, size_t bytes) {
  if (!p) return;
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  free_lists_[cls].push_back(p);
  in_use_ -= cls;
  cached_ += cls;
}

void CpuAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_cached_locked();
}

void CpuAllocator::free_cached_locked() {
  for (auto& [size, blocks] : free_lists_)
    for (void* b : blocks) std::free(b);
  free_lists_.clear();
  cached_ = 0;
}

size_t CpuAllocator::system_allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return system_allocations_;
}
size_t CpuAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}
size_t CpuAllocator::peak_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}
size_t CpuAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

}  // namespace hr
