// Mixed precision (train.precision: bf16) with the semantics of PyTorch's autocast and Megatron's bf16 training:
// while a bf16 AutocastScope is open, matmul and linear multiply bf16 copies of their operands (forward and backward)
// with f32 accumulation and an f32 result; everything else (softmax, layer norm, losses, reductions, gradient
// accumulation, the optimizer) stays in f32, and the f32 weights stay the master copy that the optimizer updates and
// checkpoints hold. A scope converts each weight it was given once, at its first use, and reuses that copy until it
// closes: evaluation opens one per pass. The training step opens one per optimizer step with WeightCopies that outlive
// it, which the optimizer rewrites as it updates the weights, so that no step rounds a weight again. Weights must not
// change while a scope that holds their copies is open.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/tensor.h"

namespace hr {

enum class Precision : uint8_t { F32, BF16 };
const char* precision_name(Precision p);

// bf16 copies of weights kept from one scope to the next (the training step's). A scope given them keeps there the
// copies it makes and, while `current`, uses the ones it finds; closing it makes them current. An optimizer that
// rewrites them from the weights it updates (AdamW's fused pass: Optimizer::step_and_round) keeps them current, so a
// weight is read and rounded once a step, by the pass that writes it. Whatever else changes the weights must set
// current = false (the next scope then rounds them afresh).
struct WeightCopies {
  std::unordered_map<const TensorImpl*, Tensor> of;  // weight -> its bf16 copy
  bool current = false;
};

class AutocastScope {
 public:
  // `weights`: the tensors whose bf16 copies may be kept for the scope's life (a model's parameters); `kept`: where
  // they are kept, and beyond it (else in the scope). A scope opened while another is open changes nothing: the outer
  // one's precision and copies stay in force.
  AutocastScope(Precision p, const std::vector<Tensor>& weights, WeightCopies* kept = nullptr);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool owner_ = false;
};

// Inside an open bf16 scope, ops run in f32 again for this guard's life (the scope's weight copies stay): for
// products whose rounding costs more precision than their speed is worth, such as attention's head mixing.
class AutocastOff {
 public:
  AutocastOff();
  ~AutocastOff();
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;

 private:
  Precision saved_ = Precision::F32;
};

namespace autocast {
bool bf16();  // a bf16 scope is open
// x (f32) rounded to bf16: the open scope's copy when x is one of its weights (made on first use), else a new tensor.
Tensor to_bf16(const Tensor& x);
int64_t weight_conversions();  // weight copies a scope made so far in this process (tests)
}  // namespace autocast

// Whether device d can run precision p. Throws ConfigError naming `where` when it cannot (bf16 on a GPU before
// Ampere); returns a warning for the user when it runs no faster than f32 (bf16 emulated on a CPU without bf16
// instructions), else "".
std::string check_precision(Device d, Precision p, const std::string& where);

}  // namespace hr
