// Tensor: a handle to a TensorImpl (shape, dtype, device, autograd identity) and to the storage that holds its values.
// Always contiguous and row-major; `reshape` and slicing the first dimension are views of the same storage, everything
// else materialises (DESIGN.md: no stride bookkeeping). The storage is held by handles, not by the TensorImpl, so a
// backward rule that needs an input's gradient but not its values keeps `grad_ref()` and the values are freed with
// the last handle that holds them (DESIGN.md, "What the tape keeps").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace hr {

// BF16: matmul operands under autocast (framework/autocast.h), stored as their 16 bits; nothing else computes on them
enum class DType : uint8_t { F32, I32, BF16 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);

// Device memory from a backend's caching allocator, returned to it on destruction.
struct Storage {
  Storage(Device d, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data = nullptr;
  size_t bytes = 0;
  Device device;
};

struct TensorImpl;

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<TensorImpl> impl, std::shared_ptr<Storage> storage)
      : impl_(std::move(impl)), storage_(std::move(storage)) {}

  // ---- creation
  static Tensor empty(const Shape& shape, Device d = Device::CPU, DType t = DType::F32);
  static Tensor zeros(const Shape& shape, Device d = Device::CPU, DType t = DType::F32);
  static Tensor full(const Shape& shape, float value, Device d = Device::CPU);
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape, Device d = Device::CPU);
  static Tensor from_ids(const std::vector<int32_t>& ids, const Shape& shape, Device d = Device::CPU);
  static Tensor scalar(float v, Device d = Device::CPU) { return full({}, v, d); }

  // ---- inspection
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int ndim() const { return static_cast<int>(shape().size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t numel() const;
  Device device() const;
  DType dtype() const;
  float* data();
  const float* data() const;
  int32_t* ids();
  const int32_t* ids() const;
  uint16_t* bf16();
  const uint16_t* bf16() const;
  std::vector<float> to_vector() const;     // copies to the host
  std::vector<int32_t> to_ids() const;      // copies to the host
  float item() const;                       // a one-element tensor's value
  Tensor to(Device d) const;                // a copy on d (this tensor itself when already there); not differentiable
  Tensor clone() const;                     // a fresh copy, not differentiable
  Tensor detach() const;                    // same storage, cut from the tape
  Tensor rows(int64_t first, int64_t count) const;  // a view of rows [first, first+count) of dim 0; not recorded
  // The same tensor to autograd (gradient, tape position, shape, device) without its values, which it does not keep
  // alive; reading them through it throws. What a backward rule captures of an input whose values it does not need.
  Tensor grad_ref() const;
  bool has_values() const { return storage_ != nullptr; }
  void copy_from(const Tensor& src);        // same shape, any device; not recorded
  void fill_(float v);

  // ---- autograd
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on = true);  // leaves only
  bool is_leaf() const;
  Tensor grad() const;       // a leaf's own buffer (a parameter's always exists); else undefined until backward
  void zero_grad();          // fills the gradient buffer with zeros (the buffer stays)
  const std::string& name() const;
  Tensor& set_name(std::string n);

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  void* raw(DType t) const;  // the first element, checked to be of type t and present

  std::shared_ptr<TensorImpl> impl_;
  std::shared_ptr<Storage> storage_;  // null in a grad_ref()
};

struct TensorImpl {
  size_t offset = 0;  // elements into the storage (views of the first dimension)
  Shape shape;
  DType dtype = DType::F32;
  Device device = Device::CPU;
  bool requires_grad = false;
  bool is_leaf = true;
  Tensor grad;
  bool grad_owned = false;  // an intermediate's grad is a buffer no other tensor holds (autograd.h, accumulate_grad)
  std::string name;
  // Position of the op that produced this tensor on the tape (tape generation and node index), or -1 for none.
  int64_t tape_generation = -1;
  int64_t tape_index = -1;
};

}  // namespace hr
