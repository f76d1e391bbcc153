// The CPU backend's caching allocator: 64-byte aligned host blocks (one cache line, one AVX-512 vector) kept on free
// lists by size class (kernels/base/size_class_cache.h), so that a training step that repeats the previous step's
// allocations never reaches the system allocator.
#pragma once

#include <cstddef>

#include "kernels/base/size_class_cache.h"

namespace hr {

struct HostBlocks {
  static constexpr size_t kAlignment = 64, kMinBlock = 64;
  static constexpr bool kChecksFrees = false, kFreesCachedOnDestruction = true;
  static void* allocate(size_t bytes);  // aligned_alloc; nullptr when the system is out of memory
  static void free(void* p);
  [[noreturn]] static void out_of_memory(size_t bytes, size_t in_use);  // std::bad_alloc
};

using CpuAllocator = SizeClassCache<HostBlocks>;

}  // namespace hr
