// Shape ops: reshape (a view), and permute / concat / split / slice / select / index_select0, which materialise
// through the backend's strided copy.
#include <numeric>

#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      HR_CHECK(infer < 0, "reshape: more than one -1 in " + shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    HR_CHECK(known > 0 && x.numel() % known == 0, "reshape: cannot infer -1 reshaping " + shape_str(x.shape()) +
                                                      " to " + shape_str(shape));
    s[static_cast<size_t>(infer)] = x.numel() / known;
  }
  HR_CHECK(shape_numel(s) == x.numel(), "reshape: " + shape_str(x.shape()) + " has " + std::to_string(x.numel()) +
                                            " elements, " + shape_str(shape) + " needs " + std::to_string(shape_numel(s)));
  Tensor y = detail::view_as(x, s);
  if (needs_grad({&x})) {
    detail::record("reshape", y,
                   [x = x.grad_ref()](const Tensor& g) { accumulate_grad(x, detail::view_as(g, x.shape())); });
  }
  return y;
}

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  const int n = x.ndim();
  HR_CHECK(static_cast<int>(perm.size()) == n, "permute: " + std::to_string(perm.size()) + " axes for a " +
                                                   std::to_string(n) + "-d tensor");
  HR_CHECK(n <= kMaxDims, "permute: more than 6 dimensions");
  std::vector<int> seen(static_cast<size_t>(n), 0), inverse(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    HR_CHECK(perm[i] >= 0 && perm[i] < n && !seen[perm[i]]++, "permute: not a permutation");
    inverse[static_cast<size_t>(perm[i])] = i;
  }
  const auto st = detail::strides_of(x.shape());
  Shape out_shape(static_cast<size_t>(n));
  std::vector<int64_t> src_strides(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    out_shape[i] = x.dim(perm[i]);
    src_strides[i] = st[static_cast<size_t>(perm[i])];
  }
  Tensor y = Tensor::empty(out_shape, x.device(), x.dtype());
  const auto dst = detail::strides_of(out_shape);
  if (y.numel()) be(x).copy_strided(n, out_shape.data(), x.data(), src_strides.data(), y.data(), dst.data(), false);
  if (needs_grad({&x})) {
    detail::record("permute", y,
                   [x = x.grad_ref(), inverse](const Tensor& g) { accumulate_grad(x, permute(g, inverse)); });
  }
  return y;
}

Tensor transpose(const Tensor& x, int d0, int d1) {
  std::vector<int> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(detail::normalize_dim(d0, x.ndim(), "transpose"))],
            perm[static_cast<size_t>(detail::normalize_dim(d1, x.ndim(), "transpose"))]);
  return permute(x, perm);
}

namespace {

// Views a tensor as (outer, dim, inner) around `dim` for block copies.
struct Around {
  int64_t outer = 1, dim = 1, inner = 1;
};
Around around(const Shape& s, int d) {
  Around a;
  for (int i = 0; i < d; ++i) a.outer *= s[static_cast<size_t>(i)];
  a.dim = s[static_cast<size_t>(d)];
  for (size_t i = static_cast<size_t>(d) + 1; i < s.size(); ++i) a.inner *= s[i];
  return a;
}

// dst[:, dst_start : dst_start + src.dim, :] (+)= src, both viewed as (outer, dim, inner).
void copy_block(Backend& bk, const float* src, Around s, int64_t src_start, float* dst, Around d, int64_t dst_start,
                int64_t len, bool accumulate) {
  const int64_t shape[3] = {s.outer, len, s.inner};
  const int64_t ss[3] = {s.dim * s.inner, s.inner, 1};
  const int64_t ds[3] = {d.dim * d.inner, d.inner, 1};
  if (s.outer * len * s.inner == 0) return;
  bk.copy_strided(3, shape, src + src_start * s.inner, ss, dst + dst_start * d.inner, ds, accumulate);
}

}  // namespace

Tensor slice(const Tensor& x, int dim, int64_t start, int64_t end) {
  detail::check_f32(x, "slice");
  const int d = detail::normalize_dim(dim, x.ndim(), "slice");
  HR_CHECK(0 <= start && start <= end && end <= x.dim(d),
           "slice: [" + std::to_string(start) + ", " + std::to_string(end) + ") out of range for dim " +
               std::to_string(dim) + " of " + shape_str(x.shape()));
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(d)] = end - start;
  Tensor y = Tensor::empty(out_shape, x.device());
  copy_block(be(x), x.data(), around(x.shape(), d), start, y.data(), around(out_shape, d), 0, end - start, false);
  if (needs_grad({&x})) {
    detail::record("slice", y, [x = x.grad_ref(), d, start, end](const Tensor& g) {
      Tensor gx = Tensor::zeros(x.shape(), x.device());
      copy_block(be(x), g.data(), around(g.shape(), d), 0, gx.data(), around(x.shape(), d), start, end - start, false);
      accumulate_grad(x, gx);
    });
  }
  return y;
}

Tensor select(const Tensor& x, int dim, int64_t index) {
  const int d = detail::normalize_dim(dim, x.ndim(), "select");
  Shape s = x.shape();
  s.erase(s.begin() + d);
  return reshape(slice(x, d, index, index + 1), s);
}

Tensor concat(const std::vector<Tensor>& xs, int dim) {
  HR_CHECK(!xs.empty(), "concat: no tensors");
  const int d = detail::normalize_dim(dim, xs[0].ndim(), "concat");
  Shape out_shape = xs[0].shape();
  int64_t total = 0;
  for (const Tensor& t : xs) {
    detail::check_f32(t, "concat");
    detail::check_same_device(t, xs[0], "concat");
    Shape a = t.shape(), b = xs[0].shape();
    HR_CHECK(a.size() == b.size(), "concat: tensors of different rank");
    a[static_cast<size_t>(d)] = b[static_cast<size_t>(d)] = 0;
    HR_CHECK(a == b, "concat: shapes " + shape_str(t.shape()) + " and " + shape_str(xs[0].shape()) +
                         " differ outside dim " + std::to_string(dim));
    total += t.dim(d);
  }
  out_shape[static_cast<size_t>(d)] = total;
  Tensor y = Tensor::empty(out_shape, xs[0].device());
  int64_t at = 0;
  for (const Tensor& t : xs) {
    copy_block(be(t), t.data(), around(t.shape(), d), 0, y.data(), around(out_shape, d), at, t.dim(d), false);
    at += t.dim(d);
  }
  bool any = false;
  for (const Tensor& t : xs) any = any || needs_grad({&t});
  if (any) {
    std::vector<Tensor> refs;
    for (const Tensor& t : xs) refs.push_back(t.grad_ref());
    detail::record("concat", y, [xs = std::move(refs), d](const Tensor& g) {
      int64_t at = 0;
      for (const Tensor& t : xs) {
        if (t.requires_grad()) accumulate_grad(t, slice(g, d, at, at + t.dim(d)));
        at += t.dim(d);
      }
    });
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int dim) {
  const int d = detail::normalize_dim(dim, x.ndim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  HR_CHECK(total == x.dim(d), "split: sizes add up to " + std::to_string(total) + ", dim " + std::to_string(dim) +
                                  " of " + shape_str(x.shape()) + " is " + std::to_string(x.dim(d)));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, d, at, at + s));
    at += s;
  }
  return out;
}

Tensor index_select0(const Tensor& x, const std::vector<int64_t>& index) {
  detail::check_f32(x, "index_select0");
  HR_CHECK(x.ndim() >= 1, "index_select0: scalar input");
  const int64_t n = x.dim(0), row = n ? x.numel() / n : 0;
  std::vector<int32_t> ids(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    HR_CHECK(index[i] >= 0 && index[i] < n, "index_select0: index " + std::to_string(index[i]) +
                                                " out of range for " + std::to_string(n) + " rows");
    ids[i] = static_cast<int32_t>(index[i]);
  }
  Shape out_shape = x.shape();
  out_shape[0] = static_cast<int64_t>(index.size());
  Tensor idt = Tensor::from_ids(ids, {static_cast<int64_t>(ids.size())}, x.device());
  Tensor y = Tensor::empty(out_shape, x.device());
  be(x).gather_rows(x.data(), idt.ids(), y.data(), idt.numel(), row);
  if (needs_grad({&x})) {
    detail::record("index_select0", y, [x = x.grad_ref(), idt, row](const Tensor& g) {
      Tensor gx = Tensor::zeros(x.shape(), x.device());
      be(x).scatter_add_rows(g.data(), idt.ids(), gx.data(), idt.numel(), row);
      accumulate_grad(x, gx);
    });
  }
  return y;
}

}  // namespace hr
