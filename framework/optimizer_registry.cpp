#include "framework/optimizer_registry.h"

#include "framework/lamb.h"
#include "framework/registry.h"
#include "kernels/base/error.h"

namespace hr {

namespace {

std::unique_ptr<Optimizer> make_adamw(OptimizerParams p, const OptimizerSettings& s) {
  return std::make_unique<AdamW>(std::move(p.params), std::move(p.decay),
                                 AdamWOptions{s.beta1, s.beta2, s.eps, s.weight_decay}, std::move(p.lr_scale));
}

std::unique_ptr<Optimizer> make_sgd(OptimizerParams p, const OptimizerSettings& s) {
  return std::make_unique<SGD>(std::move(p.params), std::move(p.decay), s.momentum, s.weight_decay, s.nesterov,
                               std::move(p.lr_scale));
}

// The built-in optimizers: one line each.
Registry<OptimizerFactory>& optimizers() {
  static Registry<OptimizerFactory> r([](Registry<OptimizerFactory>& r) {
    r.add("adamw", make_adamw);
    r.add("sgd", make_sgd);
    r.add("lamb", make_lamb);
  });
  return r;
}

}  // namespace

void register_optimizer(const std::string& name, OptimizerFactory factory) {
  optimizers().add(name, std::move(factory));
}
std::vector<std::string> registered_optimizers() { return optimizers().names(); }

std::unique_ptr<Optimizer> build_optimizer(const std::string& name, OptimizerParams p, const OptimizerSettings& s) {
  const OptimizerFactory* f = optimizers().find(name);
  HR_CHECK(f, "unknown optimizer '" + name + "' (registered: " + optimizers().known() + ")");
  if (p.decay.empty()) p.decay = matrix_decay_flags(p.params);
  if (p.lr_scale.empty()) p.lr_scale.assign(p.params.size(), 1.f);
  return (*f)(std::move(p), s);
}

}  // namespace hr
