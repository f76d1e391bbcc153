#include "framework/module.h"

#include <cmath>

#include "kernels/base/error.h"
#include "framework/random.h"
#include "kernels/math/random.h"

namespace hr {

namespace {

thread_local bool shapes_only = false;

// A parameter of a model built under ShapesOnly: its shape, no storage.
Tensor shape_only_tensor(const Shape& shape, Device d) {
  shape_numel(shape);  // throws for a shape whose elements int64 cannot count
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->device = d;
  return Tensor(std::move(impl), nullptr);
}

}  // namespace

ShapesOnly::ShapesOnly() : outer_(shapes_only) { shapes_only = true; }
ShapesOnly::~ShapesOnly() { shapes_only = outer_; }

std::vector<float> draw_init(const Init& init, const Shape& shape) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  Generator& gen = global_generator();
  switch (init.kind) {
    case Init::Zeros: break;
    case Init::Ones: std::fill(v.begin(), v.end(), 1.f); break;
    case Init::Constant: std::fill(v.begin(), v.end(), init.a); break;
    case Init::Identity:
      HR_CHECK(shape.size() == 2 && shape[0] == shape[1], "Init::identity: " + shape_str(shape) + " is not square");
      for (int64_t i = 0; i < shape[0]; ++i) v[static_cast<size_t>(i * shape[0] + i)] = 1.f;
      break;
    case Init::Normal: {  // Box-Muller on two uniforms per element
      const uint64_t o = gen.take(2 * n);
      for (int64_t i = 0; i < n; ++i) {
        const float u1 = math::uniform01(gen.seed, o + 2 * static_cast<uint64_t>(i));
        const float u2 = math::uniform01(gen.seed, o + 2 * static_cast<uint64_t>(i) + 1);
        const float z = std::sqrt(-2.f * std::log(u1)) * std::cos(6.28318530717958648f * u2);
        v[static_cast<size_t>(i)] = init.a + init.b * z;
      }
      break;
    }
  }
  return v;
}

Tensor& Module::register_parameter(const std::string& name, const Shape& shape, const Init& init) {
  for (const auto& p : params_) HR_CHECK(p.first != name, "parameter '" + name + "' registered twice");
  auto t = std::make_unique<Tensor>(shapes_only ? shape_only_tensor(shape, device_)
                                                : Tensor::from_vector(draw_init(init, shape), shape, device_));
  t->set_requires_grad(true);
  t->set_name(name);
  // always present: a parameter the loss never reaches has zeros
  if (!shapes_only) t->impl()->grad = Tensor::zeros(shape, device_);
  params_.emplace_back(name, std::move(t));
  return *params_.back().second;
}

void Module::add_child(const std::string& name, std::unique_ptr<Module> child) {
  for (const auto& c : children_) HR_CHECK(c.first != name, "module '" + name + "' registered twice");
  child->train(training_);
  children_.emplace_back(name, std::move(child));
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : params_) out.emplace_back(prefix + name, *t);
  for (const auto& [name, c] : children_) c->collect(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters()) n += t.numel();
  return n;
}

Module* Module::child(const std::string& name) const {
  for (const auto& [n, c] : children_)
    if (n == name) return c.get();
  return nullptr;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, c] : children_) c->train(on);
}

void Module::zero_grad() {
  for (auto& [name, t] : params_) t->zero_grad();
  for (auto& [name, c] : children_) c->zero_grad();
}

void Module::to(Device d) {
  device_ = d;
  for (auto& [name, t] : params_) {
    if (t->device() == d) continue;
    Tensor moved = t->to(d);
    moved.set_requires_grad(true);
    moved.set_name(name);
    moved.impl()->grad = Tensor::zeros(moved.shape(), d);
    *t = moved;
  }
  for (auto& [name, c] : children_) c->to(d);
}

}  // namespace hr
