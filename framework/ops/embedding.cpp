// Embedding lookup: gather rows of the table; the backward scatter-adds into the table's gradient.
#include "framework/ops/op_util.h"

namespace hr {

using detail::be;

Tensor embedding(const Tensor& table, const Tensor& ids) {
  detail::check_f32(table, "embedding");
  HR_CHECK(ids.defined() && ids.dtype() == DType::I32, "embedding: ids must be an i32 tensor");
  detail::check_same_device(table, ids, "embedding");
  HR_CHECK(table.ndim() == 2, "embedding: table must be (V, D), got " + shape_str(table.shape()));
  const int64_t V = table.dim(0), D = table.dim(1);
  for (int32_t id : ids.to_ids())
    HR_CHECK(id >= 0 && id < V, "embedding: id " + std::to_string(id) + " out of range for a table of " +
                                    std::to_string(V) + " rows");
  Shape out_shape = ids.shape();
  out_shape.push_back(D);
  Tensor y = Tensor::empty(out_shape, table.device());
  be(table).gather_rows(table.data(), ids.ids(), y.data(), ids.numel(), D);
  if (needs_grad({&table})) {
    detail::record("embedding", y, [table, ids, D](const Tensor& g) {
      Tensor own = grad_buffer(table);  // scatter-add straight into the table's buffer: no (V, D) temporary
      Tensor gt = own.defined() ? own : Tensor::zeros(table.shape(), table.device());
      be(table).scatter_add_rows(g.data(), ids.ids(), gt.data(), ids.numel(), D);
      if (!own.defined()) accumulate_grad(table, gt);
    });
  }
  return y;
}

}  // namespace hr
