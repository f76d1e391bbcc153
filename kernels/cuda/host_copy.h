// Copies between pageable host memory and the device, ordered on the backend's stream, that return only when the
// host side may be used: cudaMemcpyAsync from pageable memory may return before the driver has read the source (the
// CUDA documentation leaves staging to the driver), and a copy to the host has landed only after a synchronization.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/cuda_check.h"

namespace hr::cuda {

inline void copy_from_host(void* dst, const void* src_host, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  HR_CUDA_CHECK(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, stream));
  HR_CUDA_CHECK(cudaStreamSynchronize(stream));
}

inline void copy_to_host(void* dst_host, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  HR_CUDA_CHECK(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, stream));
  HR_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace hr::cuda
