#include "kernels/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/backend_checks.h"
#include "kernels/base/error.h"
#include "kernels/cpu/cpu_allocator.h"
#include "kernels/cpu/cpu_attention.h"
#include "kernels/cpu/cpu_parallel.h"
#include "kernels/cpu/cpu_dropout.h"
#include "kernels/cpu/cpu_gelu.h"
#include "kernels/cpu/cpu_sum_to.h"
#include "kernels/cpu/onednn_eltwise.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/cpu/strided_runs.h"
#include "kernels/math/bf16.h"
#include "kernels/math/random.h"
#include "kernels/math/rows.h"
#include "kernels/math/unary.h"

namespace hr {

namespace {

using cpu::parallel_for;

template <Unary op>
using UnaryOp = std::integral_constant<Unary, op>;
template <Binary op>
using BinaryOp = std::integral_constant<Binary, op>;

// Calls fn with the op as a compile-time constant, so that each elementwise loop is compiled (and vectorised) for one
// op instead of switching per element.
template <class Fn>
void with_unary(Unary op, Fn&& fn) {
  switch (op) {
    case Unary::Copy: return fn(UnaryOp<Unary::Copy>{});
    case Unary::Neg: return fn(UnaryOp<Unary::Neg>{});
    case Unary::Exp: return fn(UnaryOp<Unary::Exp>{});
    case Unary::Log: return fn(UnaryOp<Unary::Log>{});
    case Unary::Sigmoid: return fn(UnaryOp<Unary::Sigmoid>{});
    case Unary::Tanh: return fn(UnaryOp<Unary::Tanh>{});
    case Unary::Relu: return fn(UnaryOp<Unary::Relu>{});
    case Unary::Gelu: return fn(UnaryOp<Unary::Gelu>{});
    case Unary::Sqrt: return fn(UnaryOp<Unary::Sqrt>{});
    case Unary::Square: return fn(UnaryOp<Unary::Square>{});
    case Unary::Scale: return fn(UnaryOp<Unary::Scale>{});
    case Unary::AddScalar: return fn(UnaryOp<Unary::AddScalar>{});
    case Unary::Clamp: return fn(UnaryOp<Unary::Clamp>{});
    case Unary::Pow: return fn(UnaryOp<Unary::Pow>{});
  }
  throw Error("unary: unknown op " + std::to_string(static_cast<int>(op)));
}

template <class Fn>
void with_binary(Binary op, Fn&& fn) {
  switch (op) {
    case Binary::Add: return fn(BinaryOp<Binary::Add>{});
    case Binary::Sub: return fn(BinaryOp<Binary::Sub>{});
    case Binary::Mul: return fn(BinaryOp<Binary::Mul>{});
    case Binary::Div: return fn(BinaryOp<Binary::Div>{});
    case Binary::MaskFill: return fn(BinaryOp<Binary::MaskFill>{});
  }
  throw Error("binary: unknown op " + std::to_string(static_cast<int>(op)));
}

// Relative cost of one element of a unary op, for the decision to go parallel.
int64_t unary_cost(Unary op) {
  switch (op) {
    case Unary::Exp: case Unary::Log: case Unary::Sigmoid: case Unary::Tanh: case Unary::Gelu: case Unary::Pow:
      return 16;
    default:
      return 1;
  }
}

// The shared row routines run each row on one lane here; rows are spread over threads.
constexpr math::SerialLanes kRow;

// Below this many elements the shared functors beat a oneDNN primitive call.
constexpr int64_t kOneDnnEltwiseMin = 4096;

// Column blocks for reductions over rows: each block belongs to one thread, so sums are race-free and ordered.
constexpr int64_t kColumnBlock = 64;

// Loops with everything in arguments: inside an OpenMP region, a loop that reads its constants through a lambda's
// captures is not vectorised (they might alias the output), and these are several times faster vectorised.
void dropout_run(const float* x, float* y, int64_t n, uint32_t key, uint32_t low, uint32_t threshold, float keep) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = x[j] * (math::dropout_bits(key, low + static_cast<uint32_t>(j)) >= threshold ? keep : 0.f);
}

// Rows [r0, r1) of Backend::softmax_dropout through the shared row routine, each row's exps kept in y or else in
// scratch, its dropout factors drawn into scratch + n (cpu::RowDropout); scratch holds 2n floats. Flattened: with the
// row routine a call of its own, rows of 128 with dropout took 3% longer.
[[gnu::flatten]] void softmax_dropout_rows(const float* x, const float* mask, float* y, float* out, uint16_t* out_bf16,
                                           int64_t r0, int64_t r1, int64_t n, float scale, int64_t rows_per_mask,
                                           const math::DropoutFactors& drop, float* scratch) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * n;
    const float* mr = mask ? mask + r / rows_per_mask * n : nullptr;
    float* yr = y ? y + r * n : nullptr;
    float* outr = out ? out + r * n : nullptr;
    uint16_t* br = out_bf16 ? out_bf16 + r * n : nullptr;
    float* exps = yr ? yr : scratch;
    if (drop.threshold) {
      const cpu::RowDropout row_drop{drop, static_cast<uint64_t>(r * n), scratch + n};
      math::softmax_dropout_row(kRow, xr, mr, yr, outr, br, n, scale, row_drop, exps);
    } else {
      math::softmax_dropout_row(kRow, xr, mr, yr, outr, br, n, scale, math::NoDropout{}, exps);
    }
  }
}

double sum_squares_run(const float* x, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// Elements [i0, i1) of one slot; `Round`: also writes the updated weights' bf16 copy.
template <bool Round>
void adamw_run(const AdamWSlot& s, int64_t i0, int64_t i1, const AdamWHyper& h, float bc1, float bc2) {
  float* p = s.param + i0;
  const float* g = s.grad + i0;
  float *m = s.m + i0, *v = s.v + i0;
  uint16_t* p16 = Round ? s.param_bf16 + i0 : nullptr;  // no offset on a null pointer (UBSan)
  const float lr = h.lr * s.lr_scale, beta1 = h.beta1, beta2 = h.beta2, eps = h.eps, wd = s.weight_decay;
  for (int64_t i = 0; i < i1 - i0; ++i) {
    math::adamw_update(p[i], g[i], m[i], v[i], lr, beta1, beta2, eps, wd, bc1, bc2);
    if constexpr (Round) p16[i] = math::to_bf16(p[i]);
  }
}

// Flat elements [b, e) over all slots, slot `begin[k]` starting at flat index begin[k].
void adamw_flat(const AdamWSlot* slots, const int64_t* begin, int count, int64_t b, int64_t e, const AdamWHyper& h,
                float bc1, float bc2) {
  for (int k = static_cast<int>(std::upper_bound(begin, begin + count, b) - begin) - 1; k < count && begin[k] < e; ++k) {
    const int64_t i0 = std::max(b, begin[k]) - begin[k], i1 = std::min(e, begin[k] + slots[k].n) - begin[k];
    if (i0 >= i1) continue;
    if (slots[k].param_bf16) adamw_run<true>(slots[k], i0, i1, h, bc1, bc2);
    else adamw_run<false>(slots[k], i0, i1, h, bc1, bc2);
  }
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() : matmul_(allocator_) {}

  Device device() const override { return Device::CPU; }

  // ---- memory
  void* alloc(size_t bytes) override { return allocator_.allocate(bytes); }
  void dealloc(void* p, size_t bytes) override { allocator_.deallocate(p, bytes); }
  size_t system_allocations() const override { return allocator_.system_allocations(); }
  size_t bytes_in_use() const override { return allocator_.bytes_in_use(); }
  size_t peak_bytes_in_use() const override { return allocator_.peak_bytes_in_use(); }
  void to_host(void* dst_host, const void* src, size_t bytes) override { copy(dst_host, src, bytes); }
  void from_host(void* dst, const void* src_host, size_t bytes) override { copy(dst, src_host, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void synchronize() override {}  // every CPU op has finished when it returns

  // ---- fills and random numbers
  void fill(float* x, int64_t n, float value) override {
    parallel_for(n, 1, [&](int64_t b, int64_t e) { std::fill(x + b, x + e, value); });
  }
  void fill_i32(int32_t* x, int64_t n, int32_t value) override {
    parallel_for(n, 1, [&](int64_t b, int64_t e) { std::fill(x + b, x + e, value); });
  }
  void uniform(float* x, int64_t n, uint64_t seed, uint64_t offset) override {
    parallel_for(n, 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) x[i] = math::uniform01(seed, offset + static_cast<uint64_t>(i));
    });
  }
  void dropout(const float* x, float* y, int64_t n, float p, uint64_t seed, uint64_t offset) override {
    check_dropout(p, "dropout");
    const math::DropoutFactors drop(p, seed, offset);
    parallel_for(n, 2, [&](int64_t b, int64_t e) {
      cpu::for_each_key_run(drop, static_cast<uint64_t>(b), e - b, [&](int64_t j, int64_t run, uint32_t key,
                                                                        uint32_t low) {
        dropout_run(x + b + j, y + b + j, run, key, low, drop.threshold, drop.keep);
      });
    });
  }

  // ---- matmul
  void gemm(const GemmArgs& args) override { matmul_.run(args); }
  std::string gemm_implementation(const GemmArgs& args) override { return matmul_.implementation(args); }
  Bf16 bf16_support(std::string* why) override {
    return OneDnnMatmul::bf16_support_for(dnnl::get_effective_cpu_isa(), why);
  }
  void to_bf16(const float* x, uint16_t* y, int64_t n) override {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = math::to_bf16(x[i]);
    });
  }

  // ---- elementwise
  void unary(Unary op, const float* x, float* y, int64_t n, float a, float b) override {
    if (op == Unary::Gelu) {
      return parallel_for(n, unary_cost(op), [&](int64_t i0, int64_t i1) { cpu::gelu_run(x + i0, y + i0, i1 - i0); });
    }
    if (n >= kOneDnnEltwiseMin && OneDnnEltwise::supports(op)) return eltwise_.forward(op, x, y, n);
    with_unary(op, [&](auto opc) {
      parallel_for(n, unary_cost(op), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) y[i] = math::unary_forward(opc, x[i], a, b);
      });
    });
  }

  void unary_backward(Unary op, const float* x, const float* y, const float* gy, float* gx, int64_t n, float a,
                      float b, bool accumulate) override {
    if (op == Unary::Gelu) {
      return parallel_for(n, unary_cost(op), [&](int64_t i0, int64_t i1) {
        cpu::gelu_backward_run(x + i0, gy + i0, gx + i0, i1 - i0, accumulate);
      });
    }
    if (!accumulate && n >= kOneDnnEltwiseMin && OneDnnEltwise::supports(op))
      return eltwise_.backward(op, y, gy, gx, n);
    with_unary(op, [&](auto opc) {
      parallel_for(n, unary_cost(op), [&](int64_t i0, int64_t i1) {
        if (accumulate) {
          for (int64_t i = i0; i < i1; ++i) gx[i] += gy[i] * math::unary_derivative(opc, x[i], y[i], a, b);
        } else {
          for (int64_t i = i0; i < i1; ++i) gx[i] = gy[i] * math::unary_derivative(opc, x[i], y[i], a, b);
        }
      });
    });
  }

  void binary(Binary op, const Broadcast& p, const float* a, const float* b, float* out, float scalar) override {
    check_ndim(p.ndim, "binary");
    cpu::StridedShape<3> full;  // operands: out, a, b
    full.ndim = p.ndim;
    std::copy(p.shape, p.shape + p.ndim, full.shape);
    cpu::contiguous_strides(p.ndim, p.shape, full.stride[0]);
    std::copy(p.sa, p.sa + p.ndim, full.stride[1]);
    std::copy(p.sb, p.sb + p.ndim, full.stride[2]);
    const cpu::StridedShape<3> s = cpu::coalesce(full);
    const int64_t sa = s.stride[1][s.ndim - 1], sb = s.stride[2][s.ndim - 1];  // out steps by 1 along a run
    with_binary(op, [&](auto opc) {
      const auto f = [&](float u, float v) { return math::binary_forward(opc, u, v, scalar); };
      parallel_for(s.numel(), 1, [&](int64_t i0, int64_t i1) {
        cpu::for_each_run(s, i0, i1, [&](const int64_t* off, int64_t len) {
          float* o = out + off[0];
          const float* x = a + off[1];
          const float* y = b + off[2];
          if (sa == 1 && sb == 1) {  // same shape, or b broadcast along rows like a bias
            for (int64_t j = 0; j < len; ++j) o[j] = f(x[j], y[j]);
          } else if (sa == 1 && sb == 0) {  // b constant along the run (scalar or column broadcast)
            const float v = y[0];
            for (int64_t j = 0; j < len; ++j) o[j] = f(x[j], v);
          } else if (sa == 0 && sb == 1) {
            const float u = x[0];
            for (int64_t j = 0; j < len; ++j) o[j] = f(u, y[j]);
          } else {
            for (int64_t j = 0; j < len; ++j) o[j] = f(x[j * sa], y[j * sb]);
          }
        });
      });
    });
  }

  void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate) override {
    cpu::sum_to(p, x, out, out_numel, accumulate, allocator_);
  }

  void copy_strided(int ndim, const int64_t* shape, const float* src, const int64_t* src_strides, float* dst,
                    const int64_t* dst_strides, bool accumulate) override {
    check_ndim(ndim, "copy_strided");
    cpu::StridedShape<2> full;  // operands: src, dst
    full.ndim = ndim;
    std::copy(shape, shape + ndim, full.shape);
    std::copy(src_strides, src_strides + ndim, full.stride[0]);
    std::copy(dst_strides, dst_strides + ndim, full.stride[1]);
    const cpu::StridedShape<2> s = cpu::coalesce(full);
    const int64_t ss = s.stride[0][s.ndim - 1], ds = s.stride[1][s.ndim - 1];
    // a dst that repeats elements (a zero stride) is written in order by one thread, so the result is defined
    bool dst_repeats = false;
    for (int d = 0; d < s.ndim; ++d) dst_repeats = dst_repeats || (s.stride[1][d] == 0 && s.shape[d] > 1);
    const auto runs = [&](int64_t i0, int64_t i1) {
      cpu::for_each_run(s, i0, i1, [&](const int64_t* off, int64_t len) {
        const float* x = src + off[0];
        float* y = dst + off[1];
        if (ss == 1 && ds == 1) {
          if (accumulate) {
            for (int64_t j = 0; j < len; ++j) y[j] += x[j];
          } else {
            std::memcpy(y, x, static_cast<size_t>(len) * sizeof(float));
          }
        } else if (accumulate) {
          for (int64_t j = 0; j < len; ++j) y[j * ds] += x[j * ss];
        } else {
          for (int64_t j = 0; j < len; ++j) y[j * ds] = x[j * ss];
        }
      });
    };
    if (dst_repeats) {
      runs(0, s.numel());
    } else {
      parallel_for(s.numel(), 1, runs);
    }
  }

  double sum_squares(const float* x, int64_t n) override {
    // fixed chunks whose partial sums are added in order: the same result for any thread count
    constexpr int64_t kChunk = 1 << 16;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    if (chunks == 0) return 0.0;
    const size_t bytes = static_cast<size_t>(chunks) * sizeof(double);
    double* partial = static_cast<double*>(allocator_.allocate(bytes));
    parallel_for(chunks, kChunk, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) partial[c] = sum_squares_run(x + c * kChunk, std::min(kChunk, n - c * kChunk));
    });
    double total = 0.0;
    for (int64_t c = 0; c < chunks; ++c) total += partial[c];
    allocator_.deallocate(partial, bytes);
    return total;
  }

  // ---- softmax
  void softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n, float scale,
               int64_t rows_per_mask) override {
    softmax_dropout(x, mask, y, nullptr, false, rows, n, scale, rows_per_mask, 0.f, 0, 0);
  }
  void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n, float scale,
                        bool accumulate) override {
    parallel_for(rows, 2 * n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        math::softmax_backward_row(kRow, y + r * n, gy + r * n, gx + r * n, n, scale, accumulate);
    });
  }
  void softmax_dropout(const float* x, const float* mask, float* y, void* out, bool out_bf16, int64_t rows, int64_t n,
                       float scale, int64_t rows_per_mask, float p_drop, uint64_t seed, uint64_t offset) override {
    check_softmax_dropout(mask, rows_per_mask, p_drop);
    const math::DropoutFactors drop(p_drop, seed, offset);
    parallel_for(rows, 8 * n, [&](int64_t r0, int64_t r1) {
      std::vector<float> scratch(y && !drop.threshold ? 0 : static_cast<size_t>(2 * n));
      softmax_dropout_rows(x, mask, y, out_bf16 ? nullptr : static_cast<float*>(out),
                           out_bf16 ? static_cast<uint16_t*>(out) : nullptr, r0, r1, n, scale, rows_per_mask, drop,
                           scratch.data());
    });
  }
  void softmax_dropout_backward(const float* y, const void* out, bool out_bf16, const float* gout, float* gx,
                                int64_t rows, int64_t n, float scale, float p_drop, bool accumulate) override {
    const float keep = 1.f / (1.f - p_drop);
    const float* out_f32 = out_bf16 ? nullptr : static_cast<const float*>(out);
    const uint16_t* out_b = out_bf16 ? static_cast<const uint16_t*>(out) : nullptr;
    parallel_for(rows, 2 * n, [&](int64_t r0, int64_t r1) {
      std::vector<float> d(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r)
        math::softmax_dropout_backward_row(kRow, y + r * n, out_f32 ? out_f32 + r * n : nullptr,
                                           out_b ? out_b + r * n : nullptr, gout + r * n, gx + r * n, n, scale, keep,
                                           accumulate, d.data());
    });
  }
  void attention(const FusedAttentionArgs& a, void* out, bool out_bf16, float* stats) override {
    cpu::attention_forward(a, out, out_bf16, stats);
  }
  void attention_backward(const FusedAttentionArgs& a, const void* out, bool out_bf16, const float* stats,
                          const float* gout, float* gq, float* gk, float* gv) override {
    cpu::attention_backward(a, out, out_bf16, stats, gout, gq, gk, gv);
  }
  void log_softmax(const float* x, const float* mask, float* y, int64_t rows, int64_t n,
                   int64_t rows_per_mask) override {
    HR_CHECK(!mask || rows_per_mask > 0, "log_softmax: rows_per_mask must be positive with a mask");
    parallel_for(rows, 8 * n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        math::log_softmax_row(kRow, x + r * n, mask ? mask + r / rows_per_mask * n : nullptr, y + r * n, n);
    });
  }
  void log_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t n,
                            bool accumulate) override {
    parallel_for(rows, 8 * n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        math::log_softmax_backward_row(kRow, y + r * n, gy + r * n, gx + r * n, n, accumulate);
    });
  }

  // ---- layer norm
  void layer_norm(const float* x, const float* gamma, const float* beta, float* y, float* mean, float* rstd,
                  int64_t rows, int64_t n, float eps) override {
    check_layer_norm(rows, n);
    parallel_for(rows, 4 * n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        math::layer_norm_row(kRow, x + r * n, gamma, beta, y + r * n, mean + r, rstd + r, n, eps);
    });
  }
  void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* gy,
                           float* gx, float* ggamma, float* gbeta, int64_t rows, int64_t n, bool accumulate) override {
    parallel_for(rows, 4 * n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        math::layer_norm_backward_row(kRow, x + r * n, gamma, mean[r], rstd[r], gy + r * n, gx + r * n, n, accumulate);
    });
    // ggamma += sum_r gy * xhat, gbeta += sum_r gy: one thread per block of columns, rows in order
    const int64_t blocks = (n + kColumnBlock - 1) / kColumnBlock;
    parallel_for(blocks, 3 * rows * kColumnBlock, [&](int64_t b0, int64_t b1) {
      float sg[kColumnBlock], sb[kColumnBlock];
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t c0 = blk * kColumnBlock, width = std::min(kColumnBlock, n - c0);
        std::fill(sg, sg + width, 0.f);
        std::fill(sb, sb + width, 0.f);
        for (int64_t r = 0; r < rows; ++r) {
          const float* xr = x + r * n + c0;
          const float* gr = gy + r * n + c0;
          const float m = mean[r], s = rstd[r];
#pragma omp simd
          for (int64_t j = 0; j < width; ++j) {
            sg[j] += gr[j] * (xr[j] - m) * s;
            sb[j] += gr[j];
          }
        }
        for (int64_t j = 0; j < width; ++j) {
          ggamma[c0 + j] += sg[j];
          gbeta[c0 + j] += sb[j];
        }
      }
    });
  }

  // ---- embeddings
  void gather_rows(const float* table, const int32_t* ids, float* out, int64_t n_ids, int64_t dim) override {
    for (int64_t i = 0; i < n_ids; ++i) check_id(ids[i], i, "gather_rows");
    parallel_for(n_ids, dim, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        std::memcpy(out + i * dim, table + static_cast<int64_t>(ids[i]) * dim, static_cast<size_t>(dim) * sizeof(float));
    });
  }
  void scatter_add_rows(const float* g, const int32_t* ids, float* gtable, int64_t n_ids, int64_t dim) override {
    for (int64_t i = 0; i < n_ids; ++i) check_id(ids[i], i, "scatter_add_rows");
    // threads own column blocks and walk the ids in order: repeated ids never race and always add in the same order
    const int64_t blocks = (dim + kColumnBlock - 1) / kColumnBlock;
    parallel_for(blocks, n_ids * kColumnBlock, [&](int64_t b0, int64_t b1) {
      const int64_t c0 = b0 * kColumnBlock, c1 = std::min(dim, b1 * kColumnBlock);
      for (int64_t i = 0; i < n_ids; ++i) {
        float* dst = gtable + static_cast<int64_t>(ids[i]) * dim;
        const float* src = g + i * dim;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    });
  }

  // ---- cross-entropy
  int64_t cross_entropy(const float* logits, const int32_t* labels, float* logp, float* row_loss, int64_t rows,
                        int64_t C, int32_t ignore_index, float smoothing) override {
    int64_t counted = 0;
    for (int64_t r = 0; r < rows; ++r) {
      check_label(labels[r], r, C, ignore_index, "cross_entropy");
      counted += labels[r] != ignore_index;
    }
    parallel_for(rows, 8 * C, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (labels[r] == ignore_index) {
          math::log_softmax_row(kRow, logits + r * C, nullptr, logp + r * C, C);  // logp stays defined for every row
          row_loss[r] = 0.f;
        } else {
          row_loss[r] = math::cross_entropy_row(kRow, logits + r * C, labels[r], logp + r * C, C, smoothing);
        }
      }
    });
    return counted;
  }
  void cross_entropy_backward(const float* logp, const int32_t* labels, float* glogits, int64_t rows, int64_t C,
                              int32_t ignore_index, float smoothing, float gscale, bool accumulate) override {
    for (int64_t r = 0; r < rows; ++r) check_label(labels[r], r, C, ignore_index, "cross_entropy_backward");
    parallel_for(rows, 8 * C, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* g = glogits + r * C;
        if (labels[r] != ignore_index) {
          math::cross_entropy_backward_row(kRow, logp + r * C, labels[r], g, C, smoothing, gscale, accumulate);
        } else if (!accumulate) {
          std::fill(g, g + C, 0.f);
        }
      }
    });
  }

  // ---- optimizer
  void adamw(const AdamWSlot* slots, int count, const AdamWHyper& h) override {
    HR_CHECK(h.step >= 1, "adamw: step " + std::to_string(h.step) + " must be >= 1");
    const auto bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(h.step)));
    const auto bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(h.step)));
    // one parallel region over the slots' elements end to end: a region a slot cost a thread wake-up each
    std::vector<int64_t> begin(static_cast<size_t>(count) + 1, 0);
    for (int k = 0; k < count; ++k) begin[k + 1] = begin[k] + slots[k].n;
    parallel_for(begin[count], 8, [&, b = begin.data()](int64_t i0, int64_t i1) {
      adamw_flat(slots, b, count, i0, i1, h, bc1, bc2);
    });
  }

 private:
  CpuAllocator allocator_;
  OneDnnEltwise eltwise_;
  OneDnnMatmul matmul_;
};

}  // namespace

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace hr
