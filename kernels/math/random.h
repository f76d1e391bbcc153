// Counter-based random numbers: element i of stream (seed, offset) is a pure function of (seed, offset + i), so the
// CPU and CUDA backends draw the same dropout masks and gate noise, in any thread order, and a run is reproducible.
#pragma once

#include "kernels/math/hd.h"

namespace hr::math {

// SplitMix64 finaliser over (seed, counter): a strong 64-bit mix, cheap enough for every element.
HR_HD uint64_t mix64(uint64_t seed, uint64_t counter) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + counter + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  // second round so that neighbouring counters of neighbouring seeds decorrelate
  z = (z + 0x9E3779B97F4A7C15ull) * 0xD6E8FEB86659FD93ull;
  return z ^ (z >> 32);
}

// uniform in the open interval (0, 1): 24 random bits, centred in their cell
HR_HD float uniform01(uint64_t seed, uint64_t counter) {
  const uint32_t bits = static_cast<uint32_t>(mix64(seed, counter) >> 40);  // 24 bits
  return (static_cast<float>(bits) + 0.5f) * (1.0f / 16777216.0f);
}

// Dropout draws more numbers than anything else (every attention weight, every step), so it uses a cheaper 32-bit
// counter hash that vectorises 16 lanes wide: murmur3's fmix32, two rounds, over the counter's low word, keyed by a
// 64-bit mix of the seed and the counter's high word (constant over 2^32 elements, so computed once per run of them).
HR_HD uint32_t dropout_key(uint64_t seed, uint64_t counter_high) {
  return static_cast<uint32_t>(mix64(seed ^ 0xD1B54A32D192ED03ull, counter_high) >> 32);
}

HR_HD uint32_t fmix32(uint32_t z) {
  z = (z ^ (z >> 16)) * 0x85EBCA6Bu;
  z = (z ^ (z >> 13)) * 0xC2B2AE35u;
  return z ^ (z >> 16);
}

// Element (key, low word) of an inverted dropout is kept, and scaled by 1/(1-p), iff its 24 hash bits reach
// dropout_threshold(p): probability 1 - ceil(p 2^24) / 2^24. Integer compares keep the loop vectorised and exact.
HR_HD uint32_t dropout_threshold(float p) { return static_cast<uint32_t>(ceilf(p * 16777216.0f)); }

HR_HD uint32_t dropout_bits(uint32_t key, uint32_t counter_low) {
  return fmix32(fmix32(counter_low ^ key) + key) >> 8;  // 24 bits
}

// The inverted-dropout factors of one stream: element i (counter offset + i) is scaled by keep = 1/(1-p) or by 0.
struct DropoutFactors {
  uint64_t seed = 0, offset = 0;
  uint32_t threshold = 0;  // dropout_threshold(p); 0 keeps every element
  float keep = 1.f;
  HR_HD DropoutFactors(float p, uint64_t seed_, uint64_t offset_)
      : seed(seed_), offset(offset_), threshold(dropout_threshold(p)), keep(1.f / (1.f - p)) {}
  HR_HD float operator()(uint64_t i) const {  // one element (a key each: for kernels that draw them one at a time)
    if (threshold == 0) return 1.f;
    const uint64_t c = offset + i;
    return dropout_bits(dropout_key(seed, c >> 32), static_cast<uint32_t>(c)) >= threshold ? keep : 0.f;
  }
};

}  // namespace hr::math
