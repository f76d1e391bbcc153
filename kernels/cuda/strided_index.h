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

  // offsets of flat element i (0 <= i < numel) in operand 0 and operand 1
  HR_HD void offsets(int64_t i, int64_t& o0, int64_t& o1) const {
    o0 = 0;
    o1 = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const int64_t idx = i % shape[d];
      i /= shape[d];
      o0 += idx * s0[d];
      o1 += idx * s1[d];
    }
    o0 += i * s0[0];  // the outermost index is what remains
    o1 += i * s1[0];
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
