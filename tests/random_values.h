// Reproducible random test inputs for the backend tests (CPU, CUDA, and the CUDA kernels emulated on host threads).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace hr::testing {

// n values uniform in [lo, hi), the same for the same seed on every machine this project builds on (mt19937 is
// specified; the distribution is libstdc++'s)
inline std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace hr::testing
