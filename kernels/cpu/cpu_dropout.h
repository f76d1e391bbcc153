// Dropout's draws for the CPU backend's loops (Backend::dropout, attention's weights): the hash of
// kernels/math/random.h is keyed by the counter's high word, so a range is walked in runs that share it, one key per
// run, and each run is a loop over the low word that vectorises 16 lanes wide.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/math/random.h"

namespace hr::cpu {

// fn(j, run, key, low) for the runs that cover elements [i0, i0 + n) of `drop`'s stream: elements i0 + j ..
// i0 + j + run - 1 have hash key `key` and low counter words low, low + 1, ...
template <class Fn>
void for_each_key_run(const math::DropoutFactors& drop, uint64_t i0, int64_t n, Fn&& fn) {
  for (int64_t j = 0; j < n;) {
    const uint64_t c = drop.offset + i0 + static_cast<uint64_t>(j);
    const int64_t run = std::min<int64_t>(n - j, static_cast<int64_t>((uint64_t{1} << 32) - (c & 0xFFFFFFFFu)));
    fn(j, run, math::dropout_key(drop.seed, c >> 32), static_cast<uint32_t>(c));
    j += run;
  }
}

// f[k] = the dropout factor (keep or 0) of low counter word low + k, k in [0, n)
inline void dropout_factor_run(float* __restrict f, int64_t n, uint32_t key, uint32_t low, uint32_t threshold,
                               float keep) {
#pragma omp simd
  for (int64_t k = 0; k < n; ++k)
    f[k] = math::dropout_bits(key, low + static_cast<uint32_t>(k)) >= threshold ? keep : 0.f;
}

// f[j] = the dropout factor of element i0 + j of `drop`'s stream, j in [0, n)
inline void dropout_factors(const math::DropoutFactors& drop, uint64_t i0, int64_t n, float* f) {
  for_each_key_run(drop, i0, n, [&](int64_t j, int64_t run, uint32_t key, uint32_t low) {
    dropout_factor_run(f + j, run, key, low, drop.threshold, drop.keep);
  });
}

// math::softmax_dropout_row's dropout for a row that one lane owns: the factors of elements i0 .. i0 + n - 1 of
// `drop`'s stream drawn into f in one vectorised loop, rather than a hash key an element (math::DrawnDropout).
struct RowDropout {
  const math::DropoutFactors& drop;
  uint64_t i0;
  float* f;
  void draw_row(int64_t n) const { dropout_factors(drop, i0, n, f); }
  float operator()(int64_t j) const { return f[j]; }
};

}  // namespace hr::cpu
