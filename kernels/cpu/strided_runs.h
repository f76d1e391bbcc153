// N-d strided iteration for the CPU backend: operands with arbitrary (also 0, broadcasting) strides over one shape are
// simplified, then walked as runs along the innermost dim, where the inner loops vectorise.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/backend.h"

namespace hr::cpu {

// `Ops` operands with their element strides over a common row-major shape.
template <int Ops>
struct StridedShape {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t stride[Ops][kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
};

// Contiguous row-major strides of shape.
inline void contiguous_strides(int ndim, const int64_t* shape, int64_t* strides) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

// The same iteration with as few dims as possible: size-1 dims dropped, and dim d merged into d+1 wherever every
// operand steps over d exactly as over a whole row of d+1. A shape without elements is left as it is.
template <int Ops>
StridedShape<Ops> coalesce(const StridedShape<Ops>& in) {
  StridedShape<Ops> out;
  for (int d = 0; d < in.ndim; ++d)
    if (in.shape[d] == 0) return in;
  for (int d = 0; d < in.ndim; ++d) {
    if (in.shape[d] == 1) continue;
    bool merge = out.ndim > 0;
    for (int k = 0; k < Ops && merge; ++k) merge = out.stride[k][out.ndim - 1] == in.stride[k][d] * in.shape[d];
    if (merge) {
      const int m = out.ndim - 1;
      out.shape[m] *= in.shape[d];
      for (int k = 0; k < Ops; ++k) out.stride[k][m] = in.stride[k][d];
    } else {
      out.shape[out.ndim] = in.shape[d];
      for (int k = 0; k < Ops; ++k) out.stride[k][out.ndim] = in.stride[k][d];
      ++out.ndim;
    }
  }
  if (out.ndim == 0) {  // a single element
    out.ndim = 1;
    out.shape[0] = 1;
  }
  return out;
}

// Calls fn(offsets, len) for every run along the innermost dim that the row-major flat indices [begin, end) cover:
// offsets[k] is operand k's element offset at the run's start; the run steps by s.stride[k][s.ndim - 1].
template <int Ops, class Fn>
void for_each_run(const StridedShape<Ops>& s, int64_t begin, int64_t end, Fn&& fn) {
  const int last = s.ndim - 1;
  int64_t idx[kMaxDims] = {};
  int64_t off[Ops] = {};
  for (int64_t rest = begin, d = last; d >= 0; --d) {
    idx[d] = rest % s.shape[d];
    rest /= s.shape[d];
    for (int k = 0; k < Ops; ++k) off[k] += idx[d] * s.stride[k][d];
  }
  for (int64_t pos = begin; pos < end;) {
    const int64_t len = std::min(s.shape[last] - idx[last], end - pos);
    fn(static_cast<const int64_t*>(off), len);
    pos += len;
    idx[last] += len;
    for (int k = 0; k < Ops; ++k) off[k] += len * s.stride[k][last];
    for (int d = last; d > 0 && idx[d] == s.shape[d]; --d) {  // carry into the outer dims
      idx[d] = 0;
      ++idx[d - 1];
      for (int k = 0; k < Ops; ++k) off[k] += s.stride[k][d - 1] - s.shape[d] * s.stride[k][d];
    }
  }
}

}  // namespace hr::cpu
