// Reductions, all expressed through sum_to (whose backward is the broadcast).
#include "framework/ops/op_util.h"

namespace hr {

Tensor sum(const Tensor& x) { return sum_to(x, {}); }

Tensor mean(const Tensor& x) {
  HR_CHECK(x.numel() > 0, "mean of an empty tensor");
  return scale(sum(x), 1.f / static_cast<float>(x.numel()));
}

Tensor sum(const Tensor& x, int dim, bool keepdim) {
  const int d = detail::normalize_dim(dim, x.ndim(), "sum");
  Shape kept = x.shape();
  kept[static_cast<size_t>(d)] = 1;
  Tensor s = sum_to(x, kept);
  if (keepdim) return s;
  Shape dropped = x.shape();
  dropped.erase(dropped.begin() + d);
  return reshape(s, dropped);
}

Tensor mean(const Tensor& x, int dim, bool keepdim) {
  const int64_t n = x.dim(dim);
  HR_CHECK(n > 0, "mean over an empty dimension");
  return scale(sum(x, dim, keepdim), 1.f / static_cast<float>(n));
}

}  // namespace hr
