#include "train/run/data_parallel.h"

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

void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& params, int root) {
  if (comm.size() == 1) return;
  for (Tensor p : params) comm.broadcast(p.data(), p.numel(), root);
}

}  // namespace hr
