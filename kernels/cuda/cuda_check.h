// Checks for every CUDA runtime and cuBLAS call: a failure throws hr::Error naming the call, file:line and the
// driver's explanation. Kernel launches are followed by HR_CUDA_CHECK_LAUNCH() (launch errors are only reported
// through cudaGetLastError).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/base/error.h"

namespace hr::cuda {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw Error(std::string("CUDA call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string("cuBLAS call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
              cublasGetStatusString(status));
}

}  // namespace hr::cuda

#define HR_CUDA_CHECK(call) ::hr::cuda::check((call), #call, __FILE__, __LINE__)
#define HR_CUDA_CHECK_LAUNCH() ::hr::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
