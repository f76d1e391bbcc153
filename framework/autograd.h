// Reverse-mode autodiff on an explicit tape (as DyNet and Marian do). Every op called while grad mode is on and some
// input requires grad appends one node {name, output, backward closure}. backward(loss) walks the tape in reverse with
// no recursion, skips nodes whose output got no gradient, accumulates input gradients, then clears the tape (which
// frees the saved activations). Leaves own their gradient buffers, which persist (zeroed by zero_grad()), so
// accumulation over micro-batches is free and an all-reduce or optimizer sees one buffer per parameter.
#pragma once

#include <functional>
#include <vector>

#include "framework/tensor.h"

namespace hr {

using BackwardFn = std::function<void(const Tensor& grad_out)>;

struct TapeNode {
  const char* op;
  std::shared_ptr<TensorImpl> output;
  BackwardFn backward;
};

class Tape {
 public:
  static Tape& current();  // one tape per thread
  void record(const char* op, Tensor& output, BackwardFn fn);
  void clear();            // drops every node (and what they saved); tensors recorded so far can no longer backward
  size_t size() const { return nodes_.size(); }
  int64_t generation() const { return generation_; }
  std::vector<TapeNode>& nodes() { return nodes_; }

 private:
  std::vector<TapeNode> nodes_;
  int64_t generation_ = 0;
};

// Disables recording for its scope (evaluation, optimizer updates). Thread-local, nests.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when an op over these inputs must be recorded.
bool needs_grad(std::initializer_list<const Tensor*> inputs);

// Backpropagates from root. A non-scalar root needs a seed gradient of its shape.
void backward(const Tensor& root, const Tensor& seed = Tensor());

// t.grad += g. A leaf (a parameter, or any tensor that requires grad and no op made) owns its gradient buffer and g is
// added into it in place. An intermediate adopts its first g (it is dropped once its node has run); g may be another
// tensor's gradient too (an add passes one g to both inputs), so the next one is added out of place, into a buffer the
// intermediate then owns. `g_owned`: the caller made g and holds it nowhere else, so the intermediate owns it at once.
// Never writes into g.
void accumulate_grad(const Tensor& t, const Tensor& g, bool g_owned = false);

// A buffer holding t's gradient so far that a backward rule may add into directly (a gemm with beta 1) instead of
// allocating a gradient and adding it: a leaf's own buffer (made, zero, on first use; a parameter's exists from
// registration), or an intermediate's gradient that only it holds. Undefined for an intermediate without one.
Tensor grad_buffer(const Tensor& t);

// Watches a backward pass of this thread (the data-parallel gradient reducer starts all-reducing a bucket as soon as
// its gradients are complete): leaf_gradient_written() when a backward rule takes a leaf's gradient buffer to write
// into it, node_done() after each node has run.
class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  virtual void leaf_gradient_written(const TensorImpl* leaf) = 0;
  virtual void node_done() = 0;
};
// Installs `o` (nullptr: none) for this thread; returns the previous one.
BackwardObserver* set_backward_observer(BackwardObserver* o);

}  // namespace hr
