// Device memory for the CUDA backend: cudaMalloc'd blocks kept on free lists by size class
// (kernels/base/size_class_cache.h). A freed block goes back to the free list of its size class and the next request
// of that class reuses it, so a training step whose allocation pattern repeats reaches cudaMalloc only during the
// first step. Reuse is safe without events because the backend runs every kernel and copy on one stream: work that
// reads a freed block is queued before any work on its next owner.
#pragma once

#include <cstddef>

#include "kernels/base/size_class_cache.h"

namespace hr::cuda {

// 512 B minimum, then four classes per power of two: blocks stay 128-byte aligned.
struct DeviceBlocks {
  static constexpr size_t kAlignment = 128, kMinBlock = 512;
  // Checked frees: a wrong size or a foreign pointer would hand device memory to two owners.
  static constexpr bool kChecksFrees = true;
  // The backend lives until the process exits (the CUDA runtime may be torn down first): no cudaFree at exit.
  static constexpr bool kFreesCachedOnDestruction = false;
  static void* allocate(size_t bytes);  // cudaMalloc; nullptr when the device is out of memory
  static void free(void* p);            // cudaFree waits for queued work that uses the block
  [[noreturn]] static void out_of_memory(size_t bytes, size_t in_use);
};

using CachingAllocator = SizeClassCache<DeviceBlocks>;

// Device memory for the duration of one backend call (the partial sums of a multi-pass reduction). It goes back to
// the cache when the call returns, before its kernels ran; that is safe for the same reason as above.
class ScratchBuffer {
 public:
  ScratchBuffer(CachingAllocator& allocator, size_t bytes)
      : allocator_(allocator), bytes_(bytes), p_(allocator.allocate(bytes)) {}
  ~ScratchBuffer() { allocator_.deallocate(p_, bytes_); }
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
