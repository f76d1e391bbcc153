// HR_HD marks functions that run on the host and on a CUDA device: the CPU backend calls them in OpenMP loops and the
// CUDA backend calls the very same code in its kernels, so the math is tested on machines without a GPU.
#pragma once

#ifdef __CUDACC__
#define HR_HD __host__ __device__ inline
#else
#define HR_HD inline
#endif

#include <cmath>
#include <cstdint>
