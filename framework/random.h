// The global random stream: a seed and a counter. Every draw (dropout masks, gate noise, initialisation) takes the next
// `n` counters, so a run is a pure function of the seed, identical on every backend, and resumable from (seed, offset).
#pragma once

#include <cstdint>

namespace hr {

struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;
  uint64_t take(int64_t n) {  // returns the first counter of n fresh ones
    const uint64_t o = offset;
    offset += static_cast<uint64_t>(n);
    return o;
  }
};

Generator& global_generator();
inline void manual_seed(uint64_t seed) { global_generator() = Generator{seed, 0}; }

// The rows of a global batch that this process holds (data parallel). A random op over a batch-major tensor then
// takes the counters of the whole global batch and draws its own rows' part, so that example i gets the same dropout
// mask however the batch is split across processes. `global == 0`: the tensor is the whole batch.
struct BatchRows {
  int64_t first = 0, count = 0, global = 0;
};
BatchRows& batch_rows();  // set per micro-batch by the trainer (BatchRowsScope)

class BatchRowsScope {
 public:
  explicit BatchRowsScope(BatchRows r) : previous_(batch_rows()) { batch_rows() = r; }
  ~BatchRowsScope() { batch_rows() = previous_; }
  BatchRowsScope(const BatchRowsScope&) = delete;
  BatchRowsScope& operator=(const BatchRowsScope&) = delete;

 private:
  BatchRows previous_;
};

}  // namespace hr
