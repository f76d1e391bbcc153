// One gemm test case and the operand layout it is run on, shared by the CPU backend's tests (against a naive loop) and
// the CUDA backend's (against the CPU): padded leading dimensions, gaps between matrices, broadcast operands, and an
// outer batch whose matrices lie side by side in rows, as attention's heads lie in a (B, T, H*Dh) tensor.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace hr::testing {

struct GemmCase {
  int64_t batch, M, N, K;
  bool transA, transB;
  int64_t pad;          // extra leading-dimension elements on every operand
  bool bcastA, bcastB;  // batch stride 0
  float alpha, beta;
  bool bias;
  bool bf16 = false;    // A and B rounded to bf16 (GemmInputs::BF16)
  int64_t outer = 1;    // > 1: an outer batch, each outer index's `batch` matrices side by side in its rows
  bool gelu = false;    // the GELU epilogue
};

// The case's GemmArgs (without operand pointers) and how many elements each operand buffer needs.
struct GemmLayout {
  GemmArgs g;
  int64_t size_a, size_b, size_c;
};

inline GemmLayout gemm_layout(const GemmCase& c) {
  const int64_t a_rows = c.transA ? c.K : c.M, a_cols = c.transA ? c.M : c.K;
  const int64_t b_rows = c.transB ? c.N : c.K, b_cols = c.transB ? c.K : c.N;
  GemmLayout l;
  GemmArgs& g = l.g;
  g.batch = c.batch; g.M = c.M; g.N = c.N; g.K = c.K; g.transA = c.transA; g.transB = c.transB;
  g.alpha = c.alpha; g.beta = c.beta; g.gelu = c.gelu;
  if (c.outer > 1) {  // (outer, rows, batch * cols + pad) with a gap between outer indices
    g.outer = c.outer;
    g.lda = c.batch * a_cols + c.pad; g.ldb = c.batch * b_cols + c.pad; g.ldc = c.batch * c.N + c.pad;
    g.strideA = c.bcastA ? 0 : a_cols; g.strideB = c.bcastB ? 0 : b_cols; g.strideC = c.N;
    g.outerA = a_rows * g.lda + 5; g.outerB = b_rows * g.ldb + 3; g.outerC = c.M * g.ldc + 2;
    l.size_a = c.outer * g.outerA; l.size_b = c.outer * g.outerB; l.size_c = c.outer * g.outerC;
    return l;
  }
  g.lda = a_cols + c.pad; g.ldb = b_cols + c.pad; g.ldc = c.N + c.pad;
  g.strideA = c.bcastA ? 0 : a_rows * g.lda + 5;  // gaps between the matrices, too
  g.strideB = c.bcastB ? 0 : b_rows * g.ldb + 3;
  g.strideC = c.M * g.ldc + 2;
  l.size_a = (c.bcastA ? 1 : c.batch) * (a_rows * g.lda + 5);
  l.size_b = (c.bcastB ? 1 : c.batch) * (b_rows * g.ldb + 3);
  l.size_c = c.batch * g.strideC;
  return l;
}

// Which elements of the case's C buffer (l.size_c) belong to its matrices rather than to padding or gaps.
inline std::vector<bool> gemm_c_inside(const GemmCase& c, const GemmLayout& l) {
  std::vector<bool> inside(static_cast<size_t>(l.size_c), false);
  for (int64_t o = 0; o < c.outer; ++o)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t i = 0; i < c.M; ++i)
        for (int64_t j = 0; j < c.N; ++j)
          inside[static_cast<size_t>(o * l.g.outerC + b * l.g.strideC + i * l.g.ldc + j)] = true;
  return inside;
}

}  // namespace hr::testing
