// L0 head gates: one hard-concrete gate per head (Louizos et al. 2018, as Voita et al. 2019 used them for heads).
// Training: u ~ U(0,1), s = sigmoid((log u - log(1-u) + log_alpha) / beta), z = clamp(s (zeta - gamma) + gamma, 0, 1).
// Evaluation: z = clamp(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1).
// Penalty: lambda * sum_h sigmoid(log_alpha_h - beta log(-gamma / zeta)), the expected number of open gates.
#pragma once

#include "framework/module.h"

namespace hr {

struct GateOptions {
  float lambda = 0.01f;
  float init_open = 0.9f;  // initial probability that a gate is open (sets log_alpha)
  float beta = 2.f / 3.f, gamma = -0.1f, zeta = 1.1f;
};

class HardConcreteGates : public Module {
 public:
  HardConcreteGates(int64_t heads, const GateOptions& opt);
  Tensor forward() const;                 // (H): sampled in training mode, deterministic in eval mode
  Tensor z_from_noise(const Tensor& u) const;  // (H) training gates for given uniform noise u (H)
  Tensor eval_z() const;                  // (H) deterministic gates
  Tensor open_probability() const;        // (H) P(z > 0)
  Tensor penalty() const;                 // lambda * sum(open_probability)
  const GateOptions& options() const { return opt_; }
  Tensor& log_alpha;                      // (H)

 private:
  GateOptions opt_;
};

}  // namespace hr
