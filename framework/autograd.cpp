#include "framework/autograd.h"

#include "kernels/base/error.h"
#include "framework/ops.h"

namespace hr {

namespace {
thread_local bool t_grad_enabled = true;
thread_local BackwardObserver* t_observer = nullptr;
}

BackwardObserver* set_backward_observer(BackwardObserver* o) {
  BackwardObserver* previous = t_observer;
  t_observer = o;
  return previous;
}

Tape& Tape::current() {
  thread_local Tape tape;
  return tape;
}

void Tape::record(const char* op, Tensor& output, BackwardFn fn) {
  TensorImpl* impl = output.impl();
  impl->requires_grad = true;
  impl->is_leaf = false;
  impl->tape_generation = generation_;
  impl->tape_index = static_cast<int64_t>(nodes_.size());
  nodes_.push_back(TapeNode{op, output.impl_ptr(), std::move(fn)});
}

void Tape::clear() {
  // Destroy nodes back to front: later nodes hold references to earlier outputs, never the reverse.
  while (!nodes_.empty()) nodes_.pop_back();
  ++generation_;
}

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

Tensor grad_buffer(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (!impl->is_leaf) return impl->grad_owned ? impl->grad : Tensor();
  if (!impl->requires_grad) return Tensor();
  if (!impl->grad.defined()) impl->grad = Tensor::zeros(impl->shape, t.device());
  if (t_observer) t_observer->leaf_gradient_written(impl);
  return impl->grad;
}

void accumulate_grad(const Tensor& t, const Tensor& g, bool g_owned) {
  TensorImpl* impl = t.impl();
  HR_CHECK(g.shape() == impl->shape, "internal: gradient of shape " + shape_str(g.shape()) + " for a tensor of shape " +
                                         shape_str(impl->shape));
  NoGradGuard no_grad;
  if (Tensor own = grad_buffer(t); own.defined()) {
    add_(own, g);
  } else if (!impl->grad.defined()) {
    impl->grad = g.detach();  // an intermediate's gradient lives until its node runs: adopting g is safe
    impl->grad_owned = g_owned;
  } else {
    impl->grad = add(impl->grad, g);  // out of place: the adopted buffer may be another tensor's gradient too
    impl->grad_owned = true;
  }
}

void backward(const Tensor& root, const Tensor& seed) {
  HR_CHECK(root.defined(), "backward() called on an undefined tensor");
  HR_CHECK(root.requires_grad(),
           "backward() called on a tensor that does not require grad (no parameter or requires_grad input reached it, "
           "or it was computed under NoGradGuard)");
  Tape& tape = Tape::current();
  TensorImpl* r = root.impl();
  if (!r->is_leaf && r->tape_generation != tape.generation())
    throw Error("backward() called twice on the same graph (or after the tape was cleared): the tape is freed after "
                "backward; run the forward pass again");
  if (seed.defined()) {
    HR_CHECK(seed.shape() == root.shape(), "backward(): seed gradient of shape " + shape_str(seed.shape()) +
                                               " for a root of shape " + shape_str(root.shape()));
    accumulate_grad(root, seed);
  } else {
    HR_CHECK(root.numel() == 1, "backward() on a non-scalar tensor of shape " + shape_str(root.shape()) +
                                    " needs a seed gradient of the same shape");
    accumulate_grad(root, Tensor::full(root.shape(), 1.f, root.device()));
  }
  if (r->is_leaf) return;

  NoGradGuard no_grad;  // backward rules are not themselves recorded
  auto& nodes = tape.nodes();
  for (int64_t i = r->tape_index; i >= 0; --i) {
    TapeNode& node = nodes[static_cast<size_t>(i)];
    TensorImpl* out = node.output.get();
    if (!out->grad.defined()) continue;
    Tensor g = out->grad;
    out->grad = Tensor();  // an intermediate's gradient is not kept
    out->grad_owned = false;
    node.backward(g);
    if (t_observer) t_observer->node_done();
  }
  tape.clear();
}

}  // namespace hr
