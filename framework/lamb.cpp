#include "framework/lamb.h"

#include <cmath>

#include "framework/autograd.h"
#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

namespace {

// Algorithm 2 of the paper, per parameter tensor w with gradient g, at step t:
//   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2                     (Adam's moments, slots lamb_m and lamb_v)
//   u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd w          (wd only where the decay flag is set)
//   w = w - lr * (||w|| / ||u||) * u                                      (trust ratio 1 when either norm is 0)
class Lamb : public Optimizer {
 public:
  Lamb(OptimizerParams p, const OptimizerSettings& s)
      : Optimizer(std::move(p.params), {"lamb_m", "lamb_v"}), decay_(std::move(p.decay)),
        lr_scale_(std::move(p.lr_scale)), s_(s) {
    HR_CHECK(decay_.size() == params_.size() && lr_scale_.size() == params_.size(),
             "LAMB: one decay flag and one learning-rate scale per parameter");
  }
  const char* name() const override { return "lamb"; }

  void step(float lr) override {
    NoGradGuard no_grad;
    ++steps_;
    const auto t = static_cast<float>(steps_);
    const float c1 = 1.f - std::pow(s_.beta1, t), c2 = 1.f - std::pow(s_.beta2, t);  // bias corrections
    for (size_t i = 0; i < params_.size(); ++i) {
      Tensor w = params_[i].second;
      const Tensor g = w.grad();
      HR_CHECK(g.defined(), "LAMB: parameter '" + params_[i].first + "' has no gradient buffer");
      Tensor& m = slot(0, i);
      Tensor& v = slot(1, i);
      m.copy_from(add(scale(m, s_.beta1), scale(g, 1.f - s_.beta1)));
      v.copy_from(add(scale(v, s_.beta2), scale(square(g), 1.f - s_.beta2)));
      Tensor u = div(scale(m, 1.f / c1), add_scalar(sqrt(scale(v, 1.f / c2)), s_.eps));
      if (decay_[i] && s_.weight_decay != 0.f) u = add(u, scale(w, s_.weight_decay));
      const double w_norm = norm(w), u_norm = norm(u);
      // a tensor still at zero (a fresh bias) has no scale of its own to keep: it takes Adam's step as it is
      const float trust = w_norm > 0 && u_norm > 0 ? static_cast<float>(w_norm / u_norm) : 1.f;
      w.copy_from(sub(w, scale(u, lr * lr_scale_[i] * trust)));
    }
  }

 private:
  static double norm(const Tensor& t) { return std::sqrt(backend(t.device()).sum_squares(t.data(), t.numel())); }
  std::vector<bool> decay_;
  std::vector<float> lr_scale_;
  OptimizerSettings s_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(OptimizerParams params, const OptimizerSettings& settings) {
  return std::make_unique<Lamb>(std::move(params), settings);
}

}  // namespace hr
