// Random ops over the global counter-based stream: inverted dropout (y = x * s, s = 1/(1-p) with probability 1-p, else
// 0) and uniform noise.
#include "framework/ops/op_util.h"
#include "framework/random.h"

namespace hr {

using detail::be;

detail::DropoutDraw detail::dropout_draw(const Tensor& x, float p, bool training, const char* op) {
  return dropout_draw(x.shape(), p, training, op);
}

detail::DropoutDraw detail::dropout_draw(const Shape& shape, float p, bool training, const char* op) {
  HR_CHECK(p >= 0.f && p < 1.f, std::string(op) + ": p must be in [0, 1), got " + std::to_string(p));
  if (!training || p == 0.f) return {};
  Generator& gen = global_generator();
  const BatchRows& r = batch_rows();
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (r.global == 0) return {p, gen.seed, gen.take(numel)};
  HR_CHECK(r.count > 0 && numel % r.count == 0,
           std::string(op) + ": a tensor of shape " + shape_str(shape) + " is not batch-major over the " +
               std::to_string(r.count) + " rows this process holds");
  const int64_t per_row = numel / r.count;
  return {p, gen.seed, gen.take(per_row * r.global) + static_cast<uint64_t>(r.first * per_row)};
}

Tensor dropout(const Tensor& x, float p, bool training) {
  const detail::DropoutDraw d = detail::dropout_draw(x, p, training, "dropout");
  if (d.p == 0.f) return x;
  detail::check_f32(x, "dropout");
  const uint64_t seed = d.seed, offset = d.offset;  // captured by the backward rule
  Tensor y = Tensor::empty(x.shape(), x.device());
  be(x).dropout(x.data(), y.data(), x.numel(), p, seed, offset);
  if (needs_grad({&x})) {
    // the same counters draw the same mask again: nothing is stored between the passes
    detail::record("dropout", y, [x = x.grad_ref(), p, seed, offset](const Tensor& g) {
      Tensor gx = Tensor::empty(x.shape(), x.device());
      be(x).dropout(g.data(), gx.data(), x.numel(), p, seed, offset);
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
