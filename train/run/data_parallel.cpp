#include "train/run/data_parallel.h"

#include "framework/ops.h"
#include "framework/random.h"
#include "kernels/base/error.h"

namespace hr {

Shard shard_of(int64_t rows, int rank, int size) {
  HR_CHECK(size >= 1 && rank >= 0 && rank < size && rows >= 0, "shard_of: bad arguments");
  const int64_t first = rows * rank / size, end = rows * (rank + 1) / size;
  return Shard{first, end - first};
}

Batch batch_rows(const Batch& b, Shard s) {
  auto part = [&](const Tensor& t) { return t.defined() ? t.rows(s.first, s.count) : Tensor(); };
  Batch out;
  out.input.ids = part(b.input.ids);
  out.input.segments = part(b.input.segments);
  out.input.token_mask = part(b.input.token_mask);
  out.input.key_mask = part(b.input.key_mask);
  out.labels = part(b.labels);
  out.start = part(b.start);
  out.end = part(b.end);
  out.span_mask = part(b.span_mask);
  for (float m : out.input.token_mask.to_vector()) out.tokens += m > 0.f;
  return out;
}

Tensor shard_loss(const Communicator& comm, const Task& task, const Batch& global, int64_t rows,
                  const std::function<Tensor(const Batch&)>& loss_of) {
  const Shard s = shard_of(rows, comm.rank(), comm.size());
  if (s.count == 0) return Tensor();
  BatchRowsScope scope(BatchRows{s.first, s.count, rows});
  const Batch shard = batch_rows(global, s);
  const auto whole = static_cast<float>(task.loss_weight(global));
  const float share = whole > 0 ? static_cast<float>(task.loss_weight(shard)) / whole
                                : static_cast<float>(s.count) / static_cast<float>(rows);
  return scale(loss_of(shard), share);
}

void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& params, int root) {
  if (comm.size() == 1) return;
  for (Tensor p : params) comm.broadcast(p.data(), p.numel(), root);
}

}  // namespace hr
