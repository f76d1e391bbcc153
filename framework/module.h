// Module: a node in the model tree owning parameters and child modules. Hierarchical names
// ("encoder.layers.3.attn.qkv.weight") are the checkpoint keys. Modules are non-copyable; parameters have stable
// addresses, so a layer may keep a `Tensor&` to its own parameters.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/tensor.h"

namespace hr {

// How a parameter is initialised, drawn on the host from the global counter-based stream (so the same seed gives the
// same model on every device).
struct Init {
  enum Kind { Zeros, Ones, Constant, Normal, Identity } kind = Zeros;
  float a = 0.f, b = 0.f;  // Constant: value a; Normal: mean a, std b
  static Init zeros() { return {Zeros}; }
  static Init ones() { return {Ones}; }
  static Init constant(float v) { return {Constant, v}; }
  static Init normal(float stddev, float mean = 0.f) { return {Normal, mean, stddev}; }
  static Init identity() { return {Identity}; }  // a square matrix
};
std::vector<float> draw_init(const Init& init, const Shape& shape);

// While one is alive, register_parameter gives each new parameter its shape but no values and no gradient: a model
// built to be described (its parameters, its layers' shapes and FLOPs: `headroom info`) costs no memory for its
// weights, whatever their size. Such a model cannot run: reading a parameter's values throws.
class ShapesOnly {
 public:
  ShapesOnly();
  ~ShapesOnly();
  ShapesOnly(const ShapesOnly&) = delete;
  ShapesOnly& operator=(const ShapesOnly&) = delete;

 private:
  bool outer_;  // the state it restores
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Registers a trainable parameter (requires_grad) on the module's current device.
  Tensor& register_parameter(const std::string& name, const Shape& shape, const Init& init);
  template <class M>
  M& register_module(const std::string& name, std::unique_ptr<M> child) {
    M& ref = *child;
    child->to(device_);
    add_child(name, std::move(child));
    return ref;
  }

  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  int64_t num_parameters() const;
  Module* child(const std::string& name) const;  // direct child, or null

  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }
  void zero_grad();
  void to(Device d);  // moves every parameter (and child) to d
  Device device() const { return device_; }

 private:
  void add_child(const std::string& name, std::unique_ptr<Module> child);
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;

  std::vector<std::pair<std::string, std::unique_ptr<Tensor>>> params_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
  bool training_ = true;
  Device device_ = Device::CPU;
};

}  // namespace hr
