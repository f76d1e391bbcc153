#include "framework/optim.h"

#include <cmath>

#include "framework/autograd.h"
#include "framework/ops.h"
#include "kernels/base/error.h"

namespace hr {

std::vector<bool> matrix_decay_flags(const NamedTensors& params) {
  std::vector<bool> d;
  for (const auto& [name, t] : params) d.push_back(t.ndim() >= 2);
  return d;
}

Optimizer::Optimizer(NamedTensors params, std::vector<std::string> slots)
    : params_(std::move(params)), slot_names_(std::move(slots)), state_(slot_names_.size()) {
  for (auto& per_param : state_)
    for (const auto& [name, p] : params_) per_param.push_back(Tensor::zeros(p.shape(), p.device()));
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  for (size_t i = 0; i < params_.size(); ++i)
    for (size_t s = 0; s < slot_names_.size(); ++s) out.emplace_back(params_[i].first + "." + slot_names_[s], state_[s][i]);
  return out;
}

void Optimizer::load_state(const NamedTensors& tensors, int64_t steps) {
  for (size_t i = 0; i < params_.size(); ++i) {
    for (size_t s = 0; s < slot_names_.size(); ++s) {
      const std::string key = params_[i].first + "." + slot_names_[s];
      Tensor& dst = state_[s][i];
      bool found = false;
      for (const auto& [name, t] : tensors) {
        if (name != key) continue;
        HR_CHECK(t.shape() == dst.shape(), "optimizer state '" + key + "' has shape " + shape_str(t.shape()) +
                                               ", the parameter has " + shape_str(dst.shape()));
        dst.copy_from(t);
        found = true;
      }
      HR_CHECK(found, "optimizer state '" + key + "' missing from the checkpoint");
    }
  }
  steps_ = steps;
}

AdamW::AdamW(NamedTensors params, std::vector<bool> decay, AdamWOptions opt, std::vector<float> lr_scale)
    : Optimizer(std::move(params), {"adam_m", "adam_v"}), decay_(std::move(decay)), lr_scale_(std::move(lr_scale)),
      opt_(opt) {
  HR_CHECK(decay_.size() == params_.size(), "AdamW: one decay flag per parameter");
  if (lr_scale_.empty()) lr_scale_.assign(params_.size(), 1.f);
  HR_CHECK(lr_scale_.size() == params_.size(), "AdamW: one learning-rate scale per parameter");
}

void AdamW::update(float lr, WeightCopies* copies) {
  ++steps_;
  std::vector<AdamWSlot> slots;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i].second;
    Tensor g = p.grad();
    HR_CHECK(g.defined(), "AdamW: parameter '" + params_[i].first + "' has no gradient buffer");
    // one fused backend call serves every slot, so they must all live on that backend's device
    HR_CHECK(p.device() == params_[0].second.device() && g.device() == p.device(),
             "AdamW: parameter '" + params_[i].first + "' (or its gradient) is on " + device_name(p.device()) +
                 ", the first parameter on " + device_name(params_[0].second.device()) + ": move the whole model");
    slots.push_back({p.data(), g.data(), slot(0, i).data(), slot(1, i).data(), p.numel(),
                     decay_[i] ? opt_.weight_decay : 0.f, lr_scale_[i]});
    if (copies)
      if (auto c = copies->of.find(p.impl()); c != copies->of.end()) slots.back().param_bf16 = c->second.bf16();
  }
  if (slots.empty()) return;
  AdamWHyper h{lr, opt_.beta1, opt_.beta2, opt_.eps, steps_};
  backend(params_[0].second.device()).adamw(slots.data(), static_cast<int>(slots.size()), h);
}

SGD::SGD(NamedTensors params, std::vector<bool> decay, float momentum, float weight_decay, bool nesterov,
         std::vector<float> lr_scale)
    : Optimizer(std::move(params), {"sgd_momentum"}), decay_(std::move(decay)), momentum_(momentum),
      weight_decay_(weight_decay), nesterov_(nesterov), lr_scale_(std::move(lr_scale)) {
  HR_CHECK(decay_.size() == params_.size(), "SGD: one decay flag per parameter");
  if (lr_scale_.empty()) lr_scale_.assign(params_.size(), 1.f);
  HR_CHECK(lr_scale_.size() == params_.size(), "SGD: one learning-rate scale per parameter");
}

void SGD::step(float lr) {
  NoGradGuard no_grad;
  ++steps_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor p = params_[i].second;
    Tensor g = p.grad();
    HR_CHECK(g.defined(), "SGD: parameter '" + params_[i].first + "' has no gradient buffer");
    if (decay_[i] && weight_decay_ != 0.f) g = add(g, scale(p, weight_decay_));
    if (momentum_ != 0.f) {
      Tensor& v = slot(0, i);
      v.copy_from(add(scale(v, momentum_), g));  // v = momentum * v + g
      g = nesterov_ ? add(g, scale(v, momentum_)) : v;  // Nesterov (PyTorch's form): g + momentum * v
    }
    p.copy_from(sub(p, scale(g, lr * lr_scale_[i])));  // lr * 1 is lr exactly: the plain step is unchanged
  }
}

float clip_factor(float norm, float max_norm) {
  return std::isfinite(norm) && norm > max_norm ? max_norm / (norm + 1e-6f) : 1.f;
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
