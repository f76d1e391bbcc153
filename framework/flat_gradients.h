// The gradients of a list of parameters in one contiguous f32 buffer, in parameter order (as Megatron's grad buffer
// and PyTorch DDP's buckets): each parameter's grad() becomes a view of its own range, so zeroing, the global norm,
// clipping and an all-reduce are one pass over one buffer, and two parameters never share memory.
#pragma once

#include <vector>

#include "framework/tensor.h"

namespace hr {

class FlatGradients {
 public:
  // All parameters on one device. Their current gradients are copied in. Calling Module::to() afterwards gives the
  // parameters new buffers: build this after the model has reached its device.
  explicit FlatGradients(const std::vector<Tensor>& params);
  Tensor& flat() { return flat_; }  // (total elements)
  int64_t numel() const { return flat_.numel(); }
  void zero();
  float norm() const;  // global L2 norm (NaN/inf if any element is)
  void scale(float s);

 private:
  std::vector<Tensor> params_;
  Tensor flat_;
};

}  // namespace hr
