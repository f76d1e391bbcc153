#include "models/head_gates.h"

#include <cmath>

#include "kernels/base/error.h"
#include "framework/autograd.h"
#include "framework/ops.h"

namespace hr {

namespace {
float logit(float p) { return std::log(p / (1.f - p)); }
}  // namespace

HardConcreteGates::HardConcreteGates(int64_t heads, const GateOptions& opt)
    : log_alpha(register_parameter("log_alpha", {heads},
                                   Init::constant(logit(opt.init_open) +
                                                  opt.beta * std::log(-opt.gamma / opt.zeta)))),
      opt_(opt) {
  HR_CHECK(opt.init_open > 0.f && opt.init_open < 1.f, "gates.init_open must be in (0, 1)");
  HR_CHECK(opt.gamma < 0.f && opt.zeta > 1.f && opt.beta > 0.f, "gates: need gamma < 0 < 1 < zeta and beta > 0");
}

Tensor HardConcreteGates::z_from_noise(const Tensor& u) const {
  Tensor noise;
  {
    NoGradGuard ng;
    noise = sub(log(u), log(add_scalar(neg(u), 1.f)));  // log u - log(1 - u)
  }
  Tensor s = sigmoid(scale(add(log_alpha, noise), 1.f / opt_.beta));
  return clamp(add_scalar(scale(s, opt_.zeta - opt_.gamma), opt_.gamma), 0.f, 1.f);
}

Tensor HardConcreteGates::eval_z() const {
  return clamp(add_scalar(scale(sigmoid(log_alpha), opt_.zeta - opt_.gamma), opt_.gamma), 0.f, 1.f);
}

Tensor HardConcreteGates::forward() const {
  if (!training()) return eval_z();
  return z_from_noise(rand_uniform(log_alpha.shape(), log_alpha.device()));
}

Tensor HardConcreteGates::open_probability() const {
  return sigmoid(add_scalar(log_alpha, -opt_.beta * std::log(-opt_.gamma / opt_.zeta)));
}

Tensor HardConcreteGates::penalty() const { return scale(sum(open_probability()), opt_.lambda); }

}  // namespace hr
