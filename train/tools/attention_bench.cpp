#include "train/tools/attention_bench.h"

#include <cmath>
#include <functional>

#include "framework/autocast.h"
#include "framework/autograd.h"
#include "framework/ops.h"
#include "framework/random.h"
#include "train/tools/bench.h"

namespace hr {

namespace {

// uniform in [-1, 1)
Tensor centred_uniform(const Shape& s, Device d) { return add_scalar(scale(rand_uniform(s, d), 2.f), -1.f); }

}  // namespace

double attention_forward_flops(int64_t B, int64_t T, int64_t H, int64_t Dh) {
  return 4.0 * static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(T) * static_cast<double>(T) *
         static_cast<double>(Dh);
}

std::vector<AttentionTiming> time_attention(Device d, int64_t B, int64_t T, int64_t H, int64_t Dh, float p, int runs) {
  Backend& be = backend(d);
  manual_seed(0);
  Tensor q = centred_uniform({B, T, H * Dh}, d).set_requires_grad();
  Tensor k = centred_uniform({B, T, H * Dh}, d).set_requires_grad();
  Tensor v = centred_uniform({B, T, H * Dh}, d).set_requires_grad();
  const Tensor gout = centred_uniform({B, T, H * Dh}, d);
  const float s = 1.f / std::sqrt(static_cast<float>(Dh));
  std::vector<Precision> precisions{Precision::F32};
  if (be.bf16_support(nullptr) != Backend::Bf16::None) precisions.push_back(Precision::BF16);

  std::vector<AttentionTiming> out;
  for (const Precision precision : precisions) {
    for (const bool fused : {true, false}) {
      const auto attend = [&] {
        const Tensor mask;  // none: every key counts
        return fused ? fused_attention(q, k, v, H, mask, s, p, true)
                     : head_context(attention_weights(head_scores(q, k, H), mask, s, p, true), v);
      };
      AttentionTiming t;
      t.path = fused ? "fused" : "unfused";
      t.precision = precision_name(precision);
      t.forward_ms = median_call_ms(be, runs, [&] {
        const NoGradGuard no_tape;
        const AutocastScope scope(precision, {});
        attend();
      });
      t.forward_backward_ms = median_call_ms(be, runs, [&] {
        const AutocastScope scope(precision, {});
        backward(attend(), gout);
      });
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace hr
