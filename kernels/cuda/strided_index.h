// Offsets of N-d strided operands from a flat element index, for the broadcast and strided-copy kernels.
// Size-1 dimensions are dropped and neighbouring dimensions merged where every operand is contiguous across them, so
// the common cases (contiguous, scalar broadcast, bias broadcast, permutes with a contiguous inner block) need few or
// no divisions per element.
#pragma once

#include <cstdint>

#include "kernels/backend.h"
#include "kernels/math/hd.h"

namespace hr::cuda {

// A row-major iteration over `shape` with two strided operands.
struct StridedPair {
  int ndim = 1;
  int64_t shape[kMaxDims] = {1};
  int64_t s0[kMaxDims] = {0};
  int64_t s1[kMaxDims] = {0};

  // Offsets of flat element i (0 <= i < numel) in operand 0 and operand 1. The index type I may be uint32_t where
  // numel < 2^31: a GPU divides 32-bit integers several times faster than 64-bit ones.
  template <class I>
  HR_HD void offsets(I i, int64_t& o0, int64_t& o1) const {
    o0 = 0;
    o1 = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const I extent = static_cast<I>(shape[d]);
      const auto idx = static_cast<int64_t>(i % extent);
      i /= extent;
      o0 += idx * s0[d];
      o1 += idx * s1[d];
    }
    o0 += static_cast<int64_t>(i) * s0[0];  // the outermost index is what remains
    o1 += static_cast<int64_t>(i) * s1[0];
  }

  // Whether operand 1 visits an element more than once (a zero stride over an extent above 1).
  bool repeats1() const {
    for (int d = 0; d < ndim; ++d)
      if (s1[d] == 0 && shape[d] > 1) return true;
    return false;
  }
};

// Offset of flat index i (row-major over shape) under strides.
HR_HD int64_t strided_offset(int64_t i, int ndim, const int64_t* shape, const int64_t* stride) {
  int64_t o = 0;
  for (int d = ndim - 1; d > 0; --d) {
    o += (i % shape[d]) * stride[d];
    i /= shape[d];
  }
  return ndim > 0 ? o + i * stride[0] : 0;
}

// Drops size-1 dimensions and merges dimension d into d+1 when both operands step across them as one.
inline StridedPair collapse(int ndim, const int64_t* shape, const int64_t* s0, const int64_t* s1) {
  StridedPair p;
  p.ndim = 0;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    const int last = p.ndim - 1;
    if (last >= 0 && p.s0[last] == s0[d] * shape[d] && p.s1[last] == s1[d] * shape[d]) {
      p.shape[last] *= shape[d];
      p.s0[last] = s0[d];
      p.s1[last] = s1[d];
      continue;
    }
    p.shape[p.ndim] = shape[d];
    p.s0[p.ndim] = s0[d];
    p.s1[p.ndim] = s1[d];
    ++p.ndim;
  }
  if (p.ndim == 0) {  // a single element
    p.ndim = 1;
    p.shape[0] = 1;
    p.s0[0] = p.s1[0] = 0;
  }
  return p;
}

}  // namespace hr::cuda
