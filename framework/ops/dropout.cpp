// Random ops over the global counter-based stream: inverted dropout (y = x * mask, mask = 1/(1-p) with probability
// 1-p) and uniform noise.
#include "framework/ops/op_util.h"
#include "framework/random.h"

namespace hr {

using detail::be;

Tensor dropout(const Tensor& x, float p, bool training) {
  HR_CHECK(p >= 0.f && p < 1.f, "dropout: p must be in [0, 1), got " + std::to_string(p));
  if (!training || p == 0.f) return x;
  detail::check_f32(x, "dropout");
  Tensor mask = Tensor::empty(x.shape(), x.device());
  Generator& gen = global_generator();
  be(x).dropout_mask(mask.data(), mask.numel(), p, gen.seed, gen.take(mask.numel()));
  Tensor y = Tensor::empty(x.shape(), x.device());
  Broadcast same;
  same.ndim = 1;
  same.shape[0] = x.numel();
  same.sa[0] = same.sb[0] = 1;
  be(x).binary(Binary::Mul, same, x.data(), mask.data(), y.data(), 0.f);
  if (needs_grad({&x})) {
    detail::record("dropout", y, [x, mask, same](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      be(x).binary(Binary::Mul, same, g.data(), mask.data(), gx.data(), 0.f);
      accumulate_grad(x, gx);
    });
  }
  return y;
}

Tensor rand_uniform(const Shape& shape, Device d) {
  Tensor u = Tensor::empty(shape, d);
  Generator& gen = global_generator();
  backend(d).uniform(u.data(), u.numel(), gen.seed, gen.take(u.numel()));
  return u;
}

}  // namespace hr
