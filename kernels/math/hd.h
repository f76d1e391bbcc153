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

// HR_SIMD_SUM(a, b): the next loop is a sum reduction over a and b that may be vectorised (OpenMP simd: partial sums
// per lane, a fixed order for a given build). Without it GCC keeps float sums sequential and the loop scalar.
// HR_SIMD_MAX(m): the same for a maximum; HR_SIMD: a loop without reduction whose iterations are independent (it may
// write an element it read, never another iteration's). On the GPU they are nothing: a lane's loop is a plain loop.
#define HR_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP) && !defined(__CUDA_ARCH__)
#define HR_SIMD_SUM(...) HR_PRAGMA(omp simd reduction(+ : __VA_ARGS__))
#define HR_SIMD_MAX(...) HR_PRAGMA(omp simd reduction(max : __VA_ARGS__))
#define HR_SIMD HR_PRAGMA(omp simd)
#else
#define HR_SIMD_SUM(...)
#define HR_SIMD_MAX(...)
#define HR_SIMD
#endif
