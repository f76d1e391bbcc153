// `headroom bench CONFIG --gemm-strides`: the measurement behind OneDnnMatmul::padded_operands. An FFN's weight
// gradients read the (tokens, d_ff) activations along the token axis with leading dimension d_ff; where d_ff floats are
// a multiple of 4 KB and the other side of the product is narrow, oneDNN's AVX2 gemm reads them in place at a fraction
// of its rate. This times, for narrow sides from 8 to 1024, the product as it comes (the 4 KB leading dimension), the
// same product on an operand already laid out at a padded leading dimension (what the layout alone is worth), and
// what OneDnnMatmul does by default (copy, then multiply, where padded_operands says so), alternating the three.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hr {

struct GemmStrideTiming {
  std::string operand;  // "A^T" (M = wide, N = narrow) or "B" (M = narrow, N = wide); the wide operand is (K, wide)
  int64_t narrow = 0;
  double in_place_ms = 0, padded_layout_ms = 0, default_ms = 0;  // medians
  bool default_copies = false;  // padded_operands chose to copy this product
};

// K = rows (tokens), wide = the operand's width (its leading dimension as it comes), each product `runs` times after
// a warm-up call. CPU only.
std::vector<GemmStrideTiming> time_gemm_strides(int64_t rows, int64_t wide, int runs);

}  // namespace hr
