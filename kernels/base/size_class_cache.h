// A caching allocator over any source of memory blocks (the CPU's aligned_alloc, cudaMalloc): a freed block goes on
// the free list of its size class and the next request of that class reuses it, so a training step that repeats the
// previous step's allocations never reaches the system. Size classes: multiples of Blocks::kAlignment up to four of
// them, then four classes per power of two (at most 25% slack), never below Blocks::kMinBlock.
//
// Blocks provides: kAlignment and kMinBlock (bytes); kChecksFrees (deallocate checks that the pointer was handed out
// with that size: a map lookup per call); kFreesCachedOnDestruction; allocate(bytes) -> nullptr when the system is
// out of memory; free(p); out_of_memory(bytes, bytes_in_use), which throws.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/base/error.h"

namespace hr {

template <class Blocks>
class SizeClassCache {
 public:
  SizeClassCache() = default;
  ~SizeClassCache() {
    if constexpr (Blocks::kFreesCachedOnDestruction) release_cached();
  }
  SizeClassCache(const SizeClassCache&) = delete;
  SizeClassCache& operator=(const SizeClassCache&) = delete;

  static size_t size_class(size_t bytes) {
    constexpr size_t a = Blocks::kAlignment;
    size_t cls = (bytes + a - 1) / a * a;
    if (bytes > 4 * a) {
      const size_t step = std::bit_floor(bytes - 1) / 4;  // a quarter of the largest power of two below bytes
      cls = (bytes + step - 1) / step * step;
    }
    return std::max(cls, Blocks::kMinBlock);
  }

  // A block of at least `bytes`; nullptr for 0 bytes. When the system is out of memory the cached blocks are handed
  // back and the request tried once more before Blocks::out_of_memory throws.
  void* allocate(size_t bytes) {
    if (bytes == 0) return nullptr;
    const size_t cls = size_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    void* p = nullptr;
    if (auto it = free_.find(cls); it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      cached_ -= cls;
    } else {
      p = Blocks::allocate(cls);
      if (!p) {
        release_cached_locked();
        p = Blocks::allocate(cls);
      }
      if (!p) Blocks::out_of_memory(cls, in_use_);
      ++system_allocations_;
    }
    if constexpr (Blocks::kChecksFrees) live_[p] = bytes;
    in_use_ += cls;
    peak_ = std::max(peak_, in_use_);
    return p;
  }

  // Returns a block from allocate(bytes), with the same `bytes`, to its free list; nullptr is ignored.
  void deallocate(void* p, size_t bytes) {
    if (!p) return;
    const size_t cls = size_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if constexpr (Blocks::kChecksFrees) {
      const auto it = live_.find(p);
      if (it == live_.end() || it->second != bytes)
        throw Error("deallocate of " + std::to_string(bytes) +
                    " bytes at a pointer this allocator did not hand out with that size");
      live_.erase(it);
    }
    free_[cls].push_back(p);
    in_use_ -= cls;
    cached_ += cls;
  }

  // Hands every cached free block back to the system.
  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_locked();
  }

  size_t system_allocations() const { return locked(system_allocations_); }
  size_t bytes_in_use() const { return locked(in_use_); }  // of the blocks handed out (size classes, not requests)
  size_t peak_bytes_in_use() const { return locked(peak_); }
  size_t bytes_cached() const { return locked(cached_); }  // on the free lists

 private:
  void release_cached_locked() {
    for (auto& [cls, blocks] : free_)
      for (void* b : blocks) Blocks::free(b);
    free_.clear();
    cached_ = 0;
  }
  size_t locked(const size_t& v) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return v;
  }

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> free blocks
  std::unordered_map<void*, size_t> live_;               // with kChecksFrees: handed-out block -> requested bytes
  size_t system_allocations_ = 0, in_use_ = 0, peak_ = 0, cached_ = 0;
};

}  // namespace hr
