#include "kernels/cpu/cpu_allocator.h"

#include <cstdlib>
#include <new>

namespace hr {

// size classes are multiples of the alignment, as aligned_alloc requires
void* HostBlocks::allocate(size_t bytes) { return std::aligned_alloc(kAlignment, bytes); }
void HostBlocks::free(void* p) { std::free(p); }
void HostBlocks::out_of_memory(size_t, size_t) { throw std::bad_alloc(); }

}  // namespace hr
