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

HR_HD float dropout_keep(uint64_t seed, uint64_t counter, float p) {
  return uniform01(seed, counter) >= p ? 1.f / (1.f - p) : 0.f;
}

}  // namespace hr::math
