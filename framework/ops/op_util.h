// Small helpers shared by the op implementations (not part of the public API).
#pragma once

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "framework/random.h"

namespace hr::detail {

inline Backend& be(const Tensor& t) { return backend(t.device()); }

inline void check_f32(const Tensor& t, const char* op) {
  HR_CHECK(t.defined(), std::string(op) + ": undefined input tensor");
  HR_CHECK(t.dtype() == DType::F32, std::string(op) + ": expected an f32 tensor, got " + dtype_name(t.dtype()));
}

inline void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  HR_CHECK(a.device() == b.device(), std::string(op) + ": inputs on different devices (" + device_name(a.device()) +
                                         " and " + device_name(b.device()) + ")");
}

inline int normalize_dim(int dim, int ndim, const char* op) {
  const int d = dim < 0 ? dim + ndim : dim;
  HR_CHECK(d >= 0 && d < ndim, std::string(op) + ": dim " + std::to_string(dim) + " out of range for " +
                                   std::to_string(ndim) + "-d tensor");
  return d;
}

// Row-major strides of a shape.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// The same storage under another shape, not recorded on the tape (for ops that reshape internally).
inline Tensor view_as(const Tensor& t, Shape shape) {
  Tensor v = t.detach();
  v.impl()->shape = std::move(shape);
  return v;
}

inline void record(const char* op, Tensor& out, BackwardFn fn) { Tape::current().record(op, out, std::move(fn)); }

// A dropout over x as ops draw it (ops/dropout.cpp): p (0 outside training), the generator's seed and the first of
// x.numel() fresh counters, or, for this process's rows of a data-parallel global batch, its rows' part of the
// counters of the whole batch (row r of the global batch starts at r * numel/count), so that every process count draws
// the same masks. Checks p, naming `op`.
struct DropoutDraw {
  float p = 0.f;
  uint64_t seed = 0, offset = 0;
};
DropoutDraw dropout_draw(const Tensor& x, float p, bool training, const char* op);

}  // namespace hr::detail
