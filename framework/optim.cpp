#include "framework/optim.h"

#include <cmath>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"

namespace hr {

std::vector<bool> matrix_decay_flags(const NamedTensors& params) {
  std::vector<bool> d;
  for (const auto& [name, t] : params) d.push_back(t.ndim() >= 2);
  return d;
}

AdamW::AdamW(NamedTensors params, std::vector<bool> decay, AdamWOptions opt, std::vector<float> lr_scale)
    : params_(std::move(params)), decay_(std::move(decay)), lr_scale_(std::move(lr_scale)), opt_(opt) {
  HR_CHECK(decay_.size() == params_.size(), "AdamW: one decay flag per parameter");
  if (lr_scale_.empty()) lr_scale_.assign(params_.size(), 1.f);
  HR_CHECK(lr_scale_.size() == params_.size(), "AdamW: one learning-rate scale per parameter");
  for (const auto& [name, p] : params_) {
    m_.push_back(Tensor::zeros(p.shape(), p.device()));
    v_.push_back(Tensor::zeros(p.shape(), p.device()));
  }
}

void AdamW::step(float lr) {
  ++step_;
  std::vector<AdamWSlot> slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    // one fused backend call serves every slot, so they must all live on that backend's device
    HR_CHECK(p.device() == params_[0].second.device() && g.device() == p.device(),
             "AdamW: parameter '" + params_[i].first + "' (or its gradient) is on " + device_name(p.device()) +
                 ", the first parameter on " + device_name(params_[0].second.device()) + ": move the whole model");
    slots.push_back({p.data(), g.data(), m_[i].data(), v_[i].data(), p.numel(), decay_[i] ? opt_.weight_decay : 0.f,
                     lr_scale_[i]});
  }
  if (slots.empty()) return;
  AdamWHyper h{lr, opt_.beta1, opt_.beta2, opt_.eps, step_};
  backend(params_[0].second.device()).adamw(slots.data(), static_cast<int>(slots.size()), h);
}

NamedTensors AdamW::state() const {
  NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back(params_[i].first + ".adam_m", m_[i]);
    out.emplace_back(params_[i].first + ".adam_v", v_[i]);
  }
  return out;
}

void AdamW::load_state(const NamedTensors& state, int64_t steps) {
  for (size_t i = 0; i < params_.size(); ++i) {
    for (int k = 0; k < 2; ++k) {
      const std::string key = params_[i].first + (k == 0 ? ".adam_m" : ".adam_v");
      Tensor& dst = k == 0 ? m_[i] : v_[i];
      bool found = false;
      for (const auto& [name, t] : state) {
        if (name != key) continue;
        HR_CHECK(t.shape() == dst.shape(), "optimizer state '" + key + "' has shape " + shape_str(t.shape()) +
                                               ", the parameter has " + shape_str(dst.shape()));
        dst.copy_from(t);
        found = true;
      }
      HR_CHECK(found, "optimizer state '" + key + "' missing from the checkpoint");
    }
  }
  step_ = steps;
}

SGD::SGD(std::vector<Tensor> params, float momentum, float weight_decay)
    : params_(std::move(params)), momentum_(momentum), weight_decay_(weight_decay) {
  for (const Tensor& p : params_) velocity_.push_back(Tensor::zeros(p.shape(), p.device()));
}

void SGD::step(float lr) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (weight_decay_ != 0.f) g = add(g, scale(p, weight_decay_));
    if (momentum_ != 0.f) {
      velocity_[i].copy_from(add(scale(velocity_[i], momentum_), g));
      g = velocity_[i];
    }
    p.copy_from(sub(p, scale(g, lr)));
  }
}

float grad_norm(const std::vector<Tensor>& params) {
  double total = 0;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (g.defined()) total += backend(g.device()).sum_squares(g.data(), g.numel());
  }
  return static_cast<float>(std::sqrt(total));
}

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
  const float norm = grad_norm(params);
  if (std::isfinite(norm) && norm > max_norm) {
    NoGradGuard no_grad;
    const float c = max_norm / (norm + 1e-6f);
    // out of place: a gradient buffer may be shared by two parameters (adopted from one upstream gradient)
    for (const Tensor& p : params)
      if (p.grad().defined()) const_cast<Tensor&>(p).set_grad(scale(p.grad(), c));
  }
  return norm;
}

float LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step < warmup) return peak * static_cast<float>(step + 1) / static_cast<float>(warmup);
  if (decay == Constant) return peak;
  const int64_t span = std::max<int64_t>(1, total - warmup);
  const float t = std::min(1.f, static_cast<float>(step - warmup) / static_cast<float>(span));
  if (decay == Linear) return peak * (1.f - t);
  return peak * 0.5f * (1.f + std::cos(3.14159265358979f * t));
}

}  // namespace hr
