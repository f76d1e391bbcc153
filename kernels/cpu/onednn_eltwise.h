// Elementwise functions through oneDNN's JIT primitives (vectorised exp/tanh/logistic), cached by size. The CPU
// backend uses them for large buffers of exp, tanh and sigmoid; GELU and softmax have their own loops (cpu_gelu.h,
// kernels/math/rows.h), everything else stays on the shared functors.
#pragma once

#include <map>
#include <mutex>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/backend.h"

namespace hr {

class OneDnnEltwise {
 public:
  OneDnnEltwise();
  // True when `op` has a oneDNN algorithm here (exp, tanh, logistic).
  static bool supports(Unary op);
  void forward(Unary op, const float* x, float* y, int64_t n);
  // gx = gy * f'(.) from the output y (as the framework saves it for these ops).
  void backward(Unary op, const float* y, const float* gy, float* gx, int64_t n);

 private:
  using Key = std::pair<int, int64_t>;  // (op, n)
  struct Fwd {
    dnnl::eltwise_forward::primitive_desc pd;
    dnnl::eltwise_forward prim;
    dnnl::eltwise_backward bwd;
  };
  Fwd& eltwise(Unary op, int64_t n);

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::mutex mutex_;
  std::map<Key, Fwd> eltwise_;
};

}  // namespace hr
