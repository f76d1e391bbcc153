// Data parallelism of a run (`mpirun -np N headroom train ...`), with PyTorch DDP's semantics: every rank reads and
// tokenises the data and builds the same model, rank 0's weights are broadcast, each global batch of
// train.batch_size rows is cut into N contiguous shards (one per rank), each rank's loss is weighted by its share of
// the rows, the gradients are summed (GradientReducer), and every rank applies the same optimizer step. The global
// batch is padded once, to its own longest row, before it is cut, and dropout draws the counters of the whole global
// batch (BatchRows, framework/random.h): an example sees the same shapes and the same masks on any number of ranks.
#pragma once

#include <cstdint>
#include <functional>

#include "framework/distributed/communicator.h"
#include "framework/module.h"
#include "train/tasks/task.h"

namespace hr {

struct Shard {
  int64_t first = 0, count = 0;  // rows [first, first + count) of the global batch
};
// Rank `rank`'s contiguous part of `rows` rows: sizes differ by at most one; a rank may get none of a tiny batch.
Shard shard_of(int64_t rows, int rank, int size);

// Rows [s.first, s.first + s.count) of a batch (views; every tensor of a Batch is batch-major). `tokens` becomes the
// shard's real tokens.
Batch batch_rows(const Batch& b, Shard s);

// This rank's part of a global batch's loss (`rows` rows): the loss of its shard, with dropout drawing the global
// batch's counters, weighted by the shard's share of what the loss is a mean over (rows; MLM: masked tokens), so that
// the ranks' gradients sum to the global batch's. Undefined when the rank's shard is empty.
Tensor shard_loss(const Communicator& comm, const Task& task, const Batch& global, int64_t rows,
                  const std::function<Tensor(const Batch&)>& loss_of);

// Every rank's parameters become rank `root`'s.
void broadcast_parameters(Communicator& comm, const std::vector<Tensor>& params, int root = 0);

}  // namespace hr
