#include "kernels/cuda/caching_allocator.h"

#include <string>

#include "kernels/cuda/cuda_check.h"

namespace hr::cuda {

void* DeviceBlocks::allocate(size_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaSuccess) return p;
  (void)cudaGetLastError();  // clear the sticky error state of a failed allocation
  if (status == cudaErrorMemoryAllocation) return nullptr;
  throw Error("cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(status));
}

void DeviceBlocks::free(void* p) { HR_CUDA_CHECK(cudaFree(p)); }

void DeviceBlocks::out_of_memory(size_t bytes, size_t in_use) {
  throw Error("CUDA out of memory: cudaMalloc of " + std::to_string(bytes) + " bytes failed with " +
              std::to_string(in_use) + " bytes in use by headroom");
}

}  // namespace hr::cuda
