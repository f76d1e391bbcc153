// A caching host allocator: 64-byte aligned blocks (one cache line, one AVX-512 vector) kept on free lists by size
// class, so that a training step that repeats the previous step's allocations never reaches the system allocator.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace hr {

class CpuAllocator {
 public:
  static constexpr size_t kAlignment = 64;

  CpuAllocator() = default;
  ~CpuAllocator();
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;

  // A block of at least `bytes`, 64-byte aligned; nullptr for 0 bytes. Throws std::bad_alloc when the system is out.
  void* allocate(size_t bytes);
  // Returns a block from allocate(bytes) (same `bytes`) to its free list; nullptr is ignored.
  void deallocate(void* p, size_t bytes);
  // Hands every cached free block back to the system.
  void release_cached();

  size_t system_allocations() const;
  size_t bytes_in_use() const;       // bytes of the blocks handed out (size classes, not requested sizes)
  size_t peak_bytes_in_use() const;
  size_t bytes_cached() const;       // bytes on the free lists

  // The size class of a request: multiples of 64 bytes up to 256, then 4 classes per power of two (<= 25% waste).
  static size_t size_class(size_t bytes);

 private:
  void free_cached_locked();  // caller holds mutex_

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;  // size class -> free blocks
  size_t system_allocations_ = 0, in_use_ = 0, peak_ = 0, cached_ = 0;
};

}  // namespace hr
