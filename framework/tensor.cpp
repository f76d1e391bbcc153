#include "framework/tensor.h"

#include <cstring>
#include <sstream>

#include "framework/autograd.h"
#include "kernels/base/error.h"

namespace hr {

size_t dtype_size(DType t) { return t == DType::BF16 ? 2 : 4; }
const char* dtype_name(DType t) { return t == DType::F32 ? "f32" : t == DType::I32 ? "i32" : "bf16"; }

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)  // a model of shapes (ShapesOnly) may be as large as a config says
    if (__builtin_mul_overflow(n, d, &n)) throw Error("shape " + shape_str(s) + " has more elements than int64 counts");
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ')';
  return os.str();
}

Storage::Storage(Device d, size_t n) : bytes(n), device(d) { data = n ? backend(d).alloc(n) : nullptr; }
Storage::~Storage() {
  if (data) backend(device).dealloc(data, bytes);
}

Tensor Tensor::empty(const Shape& shape, Device d, DType t) {
  for (int64_t x : shape) HR_CHECK(x >= 0, "negative dimension in shape " + shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = t;
  impl->device = d;
  return Tensor(std::move(impl), std::make_shared<Storage>(d, static_cast<size_t>(shape_numel(shape)) * dtype_size(t)));
}

Tensor Tensor::zeros(const Shape& shape, Device d, DType t) {
  Tensor x = empty(shape, d, t);
  if (t == DType::F32) backend(d).fill(x.data(), x.numel(), 0.f);
  else if (t == DType::I32) backend(d).fill_i32(x.ids(), x.numel(), 0);
  else backend(d).from_host(x.bf16(), std::vector<uint16_t>(static_cast<size_t>(x.numel())).data(), x.numel() * 2);
  return x;
}

Tensor Tensor::full(const Shape& shape, float value, Device d) {
  Tensor x = empty(shape, d);
  backend(d).fill(x.data(), x.numel(), value);
  return x;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, Device d) {
  HR_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
           "from_vector: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  Tensor x = empty(shape, d);
  backend(d).from_host(x.data(), values.data(), values.size() * sizeof(float));
  return x;
}

Tensor Tensor::from_ids(const std::vector<int32_t>& ids, const Shape& shape, Device d) {
  HR_CHECK(static_cast<int64_t>(ids.size()) == shape_numel(shape),
           "from_ids: " + std::to_string(ids.size()) + " ids for shape " + shape_str(shape));
  Tensor x = empty(shape, d, DType::I32);
  backend(d).from_host(x.ids(), ids.data(), ids.size() * sizeof(int32_t));
  return x;
}

const Shape& Tensor::shape() const { return impl_->shape; }
int64_t Tensor::dim(int i) const {
  const int n = ndim();
  const int j = i < 0 ? i + n : i;
  HR_CHECK(j >= 0 && j < n, "dimension " + std::to_string(i) + " out of range for shape " + shape_str(shape()));
  return impl_->shape[static_cast<size_t>(j)];
}
int64_t Tensor::numel() const { return shape_numel(impl_->shape); }
Device Tensor::device() const { return impl_->device; }
DType Tensor::dtype() const { return impl_->dtype; }

void* Tensor::raw(DType t) const {
  HR_CHECK(impl_->dtype == t, std::string("tensor holds ") + dtype_name(impl_->dtype) + ", not " + dtype_name(t));
  HR_CHECK(storage_, "internal: reading the values of a grad_ref() of a " + shape_str(impl_->shape) +
                         " tensor (a backward rule that needs them must capture the tensor itself)");
  return static_cast<char*>(storage_->data) + impl_->offset * dtype_size(t);
}
float* Tensor::data() { return static_cast<float*>(raw(DType::F32)); }
const float* Tensor::data() const { return static_cast<const float*>(raw(DType::F32)); }
int32_t* Tensor::ids() { return static_cast<int32_t*>(raw(DType::I32)); }
const int32_t* Tensor::ids() const { return static_cast<const int32_t*>(raw(DType::I32)); }
uint16_t* Tensor::bf16() { return static_cast<uint16_t*>(raw(DType::BF16)); }
const uint16_t* Tensor::bf16() const { return static_cast<const uint16_t*>(raw(DType::BF16)); }

std::vector<float> Tensor::to_vector() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  backend(device()).to_host(v.data(), data(), v.size() * sizeof(float));
  return v;
}

std::vector<int32_t> Tensor::to_ids() const {
  std::vector<int32_t> v(static_cast<size_t>(numel()));
  backend(device()).to_host(v.data(), ids(), v.size() * sizeof(int32_t));
  return v;
}

float Tensor::item() const {
  HR_CHECK(numel() == 1, "item() on a tensor of shape " + shape_str(shape()));
  float v;
  backend(device()).to_host(&v, data(), sizeof(float));
  return v;
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor out = empty(shape(), d, dtype());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), device(), dtype());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->offset = impl_->offset;
  impl->shape = impl_->shape;
  impl->dtype = impl_->dtype;
  impl->device = impl_->device;
  return Tensor(std::move(impl), storage_);
}

Tensor Tensor::grad_ref() const { return Tensor(impl_, nullptr); }

Tensor Tensor::rows(int64_t first, int64_t count) const {
  HR_CHECK(ndim() >= 1 && first >= 0 && count >= 0 && first + count <= dim(0),
           "rows [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of a tensor of shape " +
               shape_str(shape()));
  Tensor v = detach();
  v.impl()->offset += static_cast<size_t>(first * (numel() / std::max<int64_t>(1, dim(0))));
  v.impl()->shape[0] = count;
  return v;
}

void Tensor::copy_from(const Tensor& src) {
  HR_CHECK(src.shape() == shape() && src.dtype() == dtype(),
           "copy_from: shape " + shape_str(src.shape()) + " into " + shape_str(shape()));
  const size_t bytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  if (bytes == 0) return;
  void* dst = raw(dtype());
  const void* s = src.raw(dtype());
  if (src.device() == device()) backend(device()).copy(dst, s, bytes);
  else if (src.device() == Device::CPU) backend(device()).from_host(dst, s, bytes);
  else if (device() == Device::CPU) backend(src.device()).to_host(dst, s, bytes);
  else throw Error("copy_from: no direct copy between two non-CPU devices");
}

void Tensor::fill_(float v) { backend(device()).fill(data(), numel(), v); }

bool Tensor::requires_grad() const { return impl_->requires_grad; }
Tensor& Tensor::set_requires_grad(bool on) {
  HR_CHECK(impl_->is_leaf, "set_requires_grad on a non-leaf tensor (an op's output); detach() it first");
  HR_CHECK(!on || impl_->dtype == DType::F32, "integer tensors (ids, labels) cannot require grad");
  impl_->requires_grad = on;
  return *this;
}
bool Tensor::is_leaf() const { return impl_->is_leaf; }
Tensor Tensor::grad() const { return impl_->grad; }
void Tensor::zero_grad() {
  if (impl_->grad.defined()) impl_->grad.fill_(0.f);
}
const std::string& Tensor::name() const { return impl_->name; }
Tensor& Tensor::set_name(std::string n) {
  impl_->name = std::move(n);
  return *this;
}

}  // namespace hr
