// Device memory for the CUDA backend: size-bucketed free lists over cudaMalloc. A freed block goes back to the free
// list of its size class and the next request of that class reuses it, so a training step whose allocation pattern
// repeats reaches cudaMalloc only during the first step. Reuse is safe without events because the backend runs every
// kernel and copy on one stream: work that reads a freed block is queued before any work on its next owner.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace hr::cuda {

class CachingAllocator {
 public:
  CachingAllocator() = default;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  // The backend lives until the process exits (the CUDA runtime may be torn down first), so the destructor does not
  // free device memory.

  void* alloc(size_t bytes);      // nullptr for 0 bytes
  void dealloc(void* p, size_t bytes);

  size_t system_allocations() const;
  size_t bytes_in_use() const;       // bytes of the blocks handed out (size classes, not requested sizes)
  size_t peak_bytes_in_use() const;

  // The bucket a request of `bytes` is served from: 512 B minimum, then four classes per power of two (<= 25% slack).
  static size_t size_class(size_t bytes);

 private:
  struct Live {
    size_t size_class, requested;
  };
  // Returns every cached (free) block to the driver; the caller holds the mutex.
  void release_cached_locked();

  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> free blocks
  std::unordered_map<void*, Live> live_;
  size_t system_allocations_ = 0, in_use_ = 0, peak_ = 0;
};

// Device memory for the duration of one backend call (the partial sums of a multi-pass reduction). It goes back to
// the cache when the call returns, before its kernels ran; that is safe for the same reason as above.
class ScratchBuffer {
 public:
  ScratchBuffer(CachingAllocator& allocator, size_t bytes)
      : allocator_(allocator), bytes_(bytes), p_(allocator.alloc(bytes)) {}
  ~ScratchBuffer() { allocator_.dealloc(p_, bytes_); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  template <typename T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  CachingAllocator& allocator_;
  size_t bytes_;
  void* p_;
};

}  // namespace hr::cuda
