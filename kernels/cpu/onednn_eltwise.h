// Elementwise functions and softmax through oneDNN's JIT primitives (vectorised exp/erf/tanh), cached by size. The
// CPU backend uses them for large buffers of exp, tanh and sigmoid; GELU has its own loop (cpu_gelu.h), everything
// else stays on the shared functors.
#pragma once

#include <map>
#include <mutex>
#include <tuple>

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
  // In-place softmax over the rows of y (rows, n).
  void softmax_inplace(float* y, int64_t rows, int64_t n);

 private:
  using Key = std::tuple<int, int64_t, int64_t>;  // (op or -1 for softmax, rows, n)
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
  std::map<Key, dnnl::softmax_forward> softmax_;
};

}  // namespace hr
