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

}  // namespace hr
