// Small helpers shared by the op implementations (not part of the public API).
#pragma once

#include "framework/autocast.h"
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

// ---- the operands of products (matmul.cpp, attention.cpp)
inline void check_operand(const Tensor& t, const char* op) {
  HR_CHECK(t.defined(), std::string(op) + ": undefined input tensor");
  HR_CHECK(t.dtype() != DType::I32, std::string(op) + ": expected an f32 or bf16 tensor, got i32");
}
// Products run in bf16 when a bf16 scope is open or an operand already is bf16.
inline bool low_precision(std::initializer_list<const Tensor*> operands) {
  bool low = autocast::bf16();
  for (const Tensor* t : operands) low = low || t->dtype() == DType::BF16;
  return low;
}
// An operand in the precision of the product: its bf16 copy under `low`. The product's backward rule keeps this copy
// and only grad_target() of t, so t's f32 values are freed as soon as nothing else needs them.
inline Tensor operand(const Tensor& t, bool low) { return low && t.dtype() == DType::F32 ? autocast::to_bf16(t) : t; }
// Where a product's backward rule sends the gradient of operand t, which it multiplied as `in`: `in` when it is on the
// tape itself (autocast_operand's copy), else t.
inline Tensor grad_target(const Tensor& t, const Tensor& in) { return (in.requires_grad() ? in : t).grad_ref(); }
inline const void* raw(const Tensor& t) {
  return t.dtype() == DType::BF16 ? static_cast<const void*>(t.bf16()) : static_cast<const void*>(t.data());
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
// The same for a tensor of `shape` that is never made (fused attention's weights)
DropoutDraw dropout_draw(const Shape& shape, float p, bool training, const char* op);

}  // namespace hr::detail
