// Argument checks that every backend makes before its work, so that a bad call is the same clear hr::Error on every
// device (tests/test_cpu_backend.cpp tests them on the CPU). Host code: a backend whose operands live on a device
// finds the offending element there and passes it here (the CUDA backend's ids and labels).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/backend.h"
#include "kernels/base/error.h"

namespace hr {

inline void check_ndim(int ndim, const char* op) {
  HR_CHECK(ndim >= 0 && ndim <= kMaxDims,
           std::string(op) + ": ndim " + std::to_string(ndim) + " outside [0, " + std::to_string(kMaxDims) + "]");
}

inline void check_gemm(const GemmArgs& g) {
  const auto dims = [&] {
    return " (M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) + " K=" + std::to_string(g.K) +
           " lda=" + std::to_string(g.lda) + " ldb=" + std::to_string(g.ldb) + " ldc=" + std::to_string(g.ldc) + ")";
  };
  HR_CHECK(g.batch >= 0 && g.M >= 0 && g.N >= 0 && g.K >= 0, "gemm: negative size" + dims());
  HR_CHECK(g.lda >= (g.transA ? g.M : g.K), "gemm: lda too small for op(A)" + dims());
  HR_CHECK(g.ldb >= (g.transB ? g.K : g.N), "gemm: ldb too small for op(B)" + dims());
  HR_CHECK(g.ldc >= g.N, "gemm: ldc smaller than N" + dims());
  HR_CHECK(g.strideA >= 0 && g.strideB >= 0 && g.strideC >= 0, "gemm: negative batch stride");
  HR_CHECK(g.batch <= 1 || g.strideC != 0, "gemm: strideC must not be 0 when batch > 1");
  HR_CHECK(g.outer >= 0, "gemm: negative outer batch");
  HR_CHECK(g.outer <= 1 || (g.outerA > 0 && g.outerB > 0 && g.outerC > 0),
           "gemm: outer strides must be positive when outer > 1");
  HR_CHECK(!g.bias || g.beta == 0.f, "gemm: a bias needs beta == 0");
  HR_CHECK(!g.C != !g.C16, "gemm: exactly one of C (f32) and C16 (bf16) must be given");
  HR_CHECK(!g.C16 || (g.inputs == GemmInputs::BF16 && g.alpha == 1.f && g.beta == 0.f),
           "gemm: a bf16 result needs bf16 inputs, alpha == 1 and beta == 0");
  HR_CHECK(g.K == 0 || (g.A && g.B), "gemm: null operand");
}

// An embedding id (gather_rows, scatter_add_rows) at position `pos`; the table's size is not passed, so only its sign
// can be checked.
inline void check_id(int32_t id, int64_t pos, const char* op) {
  HR_CHECK(id >= 0, std::string(op) + ": negative id " + std::to_string(id) + " at position " + std::to_string(pos));
}

inline void check_label(int32_t label, int64_t row, int64_t C, int32_t ignore_index, const char* op) {
  HR_CHECK(label == ignore_index || (label >= 0 && label < C),
           std::string(op) + ": label " + std::to_string(label) + " of row " + std::to_string(row) +
               " is outside [0, " + std::to_string(C) + ") and is not the ignore_index " +
               std::to_string(ignore_index));
}

inline void check_dropout(float p, const char* op) {
  HR_CHECK(p >= 0.f && p < 1.f, std::string(op) + ": probability " + std::to_string(p) + " outside [0, 1)");
}

inline void check_softmax_dropout(const float* mask, int64_t rows_per_mask, float p) {
  HR_CHECK(!mask || rows_per_mask > 0, "softmax_dropout: rows_per_mask must be positive with a mask");
  check_dropout(p, "softmax_dropout");
}

inline void check_attention(const FusedAttentionArgs& a) {
  HR_CHECK(a.B >= 0 && a.H > 0 && a.Tq >= 0 && a.Tk > 0 && a.Dh > 0,
           "attention: sizes B=" + std::to_string(a.B) + " H=" + std::to_string(a.H) + " Tq=" + std::to_string(a.Tq) +
               " Tk=" + std::to_string(a.Tk) + " Dh=" + std::to_string(a.Dh) + " need H, Tk and Dh positive");
  HR_CHECK(a.B * a.Tq == 0 || (a.q && a.k && a.v), "attention: null operand");
  check_dropout(a.p_drop, "attention");
}

// Rows of length 0 have no mean or variance to save for the backward pass.
inline void check_layer_norm(int64_t rows, int64_t n) {
  HR_CHECK(rows >= 0 && n >= 0, "layer_norm: negative size");
  HR_CHECK(rows == 0 || n > 0, "layer_norm: " + std::to_string(rows) + " rows of length 0");
}

}  // namespace hr
