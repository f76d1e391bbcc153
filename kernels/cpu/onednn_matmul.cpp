#include "kernels/cpu/onednn_matmul.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <memory>
#include <string>

#include "kernels/backend_checks.h"
#include "kernels/base/error.h"
#include "kernels/cpu/cpu_parallel.h"
#include "kernels/math/bf16.h"
#include "kernels/math/random.h"
#include "kernels/math/unary.h"

namespace hr {

namespace {

using dnnl::memory;
using Dims = memory::dims;

// The batch size an operand really has: a stride of 0 broadcasts it, which oneDNN spells as a batch dim of 1.
int64_t operand_batch(const GemmArgs& g, int64_t stride) { return g.batch > 1 && stride != 0 ? g.batch : 1; }

// (batch, rows, cols) view of a row-major operand stored with leading dimension ld, optionally transposed; with an
// outer batch, (outer, batch, rows, cols).
memory::desc operand_desc(int64_t outer, int64_t outer_stride, int64_t batch, int64_t rows, int64_t cols, bool trans,
                          int64_t ld, int64_t stride, memory::data_type type) {
  const int64_t stored_rows = trans ? cols : rows;
  // a batch dim of 1 gets the dense stride, so that an ordinary matrix matches oneDNN's plain formats
  const int64_t batch_stride = batch > 1 ? stride : stored_rows * ld;
  const Dims strides = trans ? Dims{batch_stride, 1, ld} : Dims{batch_stride, ld, 1};
  if (outer > 1)
    return memory::desc(Dims{outer, batch, rows, cols}, type, Dims{outer_stride, strides[0], strides[1], strides[2]});
  return memory::desc(Dims{batch, rows, cols}, type, strides);
}

// C[o, b] for the loops below
float* matrix_c(const GemmArgs& g, int64_t o, int64_t b) { return g.C + o * g.outerC + b * g.strideC; }

// op(A) op(B) over an empty K: C = beta C (+ bias), then GELU; oneDNN has no use for zero-sized reductions.
void gemm_empty_k(const GemmArgs& g) {
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t i = 0; i < g.M; ++i) {
        const int64_t row = o * g.outerC + b * g.strideC + i * g.ldc;
        for (int64_t j = 0; j < g.N; ++j) {
          const float v = (g.beta == 0.f ? 0.f : g.beta * g.C[row + j]) + (g.bias ? g.bias[j] : 0.f);
          const float y = g.gelu ? math::gelu(v) : v;
          if (g.C16) g.C16[row + j] = math::to_bf16(y);
          else g.C[row + j] = y;
        }
      }
}

// C[o, b, i, :] = gelu(C + bias) (either part optional), for an epilogue that the primitive could not run
void epilogue_after(const GemmArgs& g) {
  cpu::parallel_for(g.outer * g.batch * g.M, g.N * (g.gelu ? 16 : 1), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t m = r / g.M;  // which matrix
      float* c = matrix_c(g, m / g.batch, m % g.batch) + r % g.M * g.ldc;
      if (g.bias)
        for (int64_t j = 0; j < g.N; ++j) c[j] += g.bias[j];
      if (g.gelu)
        for (int64_t j = 0; j < g.N; ++j) c[j] = math::gelu(c[j]);
    }
  });
}

// Whether oneDNN runs f32 gemms at `isa` with its AVX2-or-older kernels, which have no rule for leading dimensions that
// are multiples of 4 KB (its AVX-512 gemm copies operands with such a leading dimension)
bool lacks_bad_ld_rule(dnnl::cpu_isa isa) {
  using dnnl::cpu_isa;
  return isa == cpu_isa::avx2 || isa == cpu_isa::avx2_vnni || isa == cpu_isa::avx || isa == cpu_isa::sse41;
}

bool multiple_of_4k(int64_t ld) { return ld * static_cast<int64_t>(sizeof(float)) % 4096 == 0; }

// A leading dimension for rows of `cols` floats: whole 64-byte lines, one line of slack, never a multiple of 4 KB
int64_t padded_ld(int64_t cols) {
  int64_t ld = (cols + 15) / 16 * 16 + 16;
  if (multiple_of_4k(ld)) ld += 16;
  return ld;
}

// One operand of a gemm as its rows: `outer` x `batch` matrices of (rows, cols) stored at ld, stride, outer_stride
struct OperandRows {
  int64_t outer, outer_stride, batch, stride, rows, cols, ld;
};

// A's or B's rows as g reads them (stored transposed with `trans`); operands broadcast across a batch are read once
OperandRows operand_rows(const GemmArgs& g, int64_t outer_stride, int64_t stride, int64_t rows, int64_t cols, bool trans,
                         int64_t ld) {
  return {g.outer > 1 && outer_stride != 0 ? g.outer : 1, outer_stride, operand_batch(g, stride), stride,
          trans ? cols : rows, trans ? rows : cols, ld};
}
OperandRows rows_of_a(const GemmArgs& g) { return operand_rows(g, g.outerA, g.strideA, g.M, g.K, g.transA, g.lda); }
OperandRows rows_of_b(const GemmArgs& g) { return operand_rows(g, g.outerB, g.strideB, g.K, g.N, g.transB, g.ldb); }

// The leading dimension of a dense f32 copy of rows of `cols`: one line more where a multiple of 4 KB would put every
// row in the same cache sets
int64_t dense_ld(int64_t cols) { return multiple_of_4k(cols) ? cols + 16 : cols; }

// The leading dimension, batch and outer strides of operand `r` as a dense f32 copy
void dense_layout(const OperandRows& r, int64_t& ld, int64_t& stride, int64_t& outer_stride) {
  ld = dense_ld(r.cols);
  const int64_t matrix = r.rows * ld;
  stride = r.batch > 1 ? matrix : 0;
  outer_stride = r.outer > 1 ? r.batch * matrix : 0;
}

// The bf16 rows `r` at `src` widened into dense f32 rows at `dst` (leading dimension ld_out; the slack past a row's
// columns zeroed)
void widen_rows(const OperandRows& r, const uint16_t* src, float* dst, int64_t ld_out) {
  cpu::parallel_for(r.outer * r.batch * r.rows, r.cols, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t m = row / r.rows;  // which matrix
      const uint16_t* s = src + m / r.batch * r.outer_stride + m % r.batch * r.stride + row % r.rows * r.ld;
      float* d = dst + row * ld_out;
      for (int64_t j = 0; j < r.cols; ++j) d[j] = math::from_bf16(s[j]);
      std::fill(d + r.cols, d + ld_out, 0.f);
    }
  });
}

// g as an f32 gemm on dense copies of its operands, with a dense f32 result in place of a bf16 one (pointers to fill)
GemmArgs widened_layout(const GemmArgs& g) {
  GemmArgs p = g;
  p.inputs = GemmInputs::F32;
  dense_layout(rows_of_a(g), p.lda, p.strideA, p.outerA);
  dense_layout(rows_of_b(g), p.ldb, p.strideB, p.outerB);
  if (g.C16) {
    p.C16 = nullptr;
    p.ldc = dense_ld(g.N);
    p.strideC = g.M * p.ldc;
    p.outerC = g.batch * p.strideC;
  }
  return p;
}

}  // namespace

OneDnnMatmul::OneDnnMatmul(CpuAllocator& scratch, std::optional<bool> pad_4k_strides, std::optional<bool> widen_bf16)
    : scratch_(scratch),
      pad_4k_strides_(pad_4k_strides.value_or(lacks_bad_ld_rule(dnnl::get_effective_cpu_isa()))),
      widen_bf16_(widen_bf16.value_or(bf16_support_for(dnnl::get_effective_cpu_isa(), nullptr) !=
                                      Backend::Bf16::Native)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {}

int OneDnnMatmul::padded_operands(const GemmArgs& g) const {
  if (!pad_4k_strides_ || g.inputs != GemmInputs::F32 || g.batch != 1 || g.outer != 1) return 0;
  // below 32 the copy (one pass over the operand) costs more than it saves; from 384 oneDNN packs (or gains ~1.1x)
  const auto narrow = [](int64_t n) { return n >= 32 && n < 384; };
  return (g.transA && multiple_of_4k(g.lda) && narrow(g.N) ? 1 : 0) |
         (!g.transB && multiple_of_4k(g.ldb) && narrow(g.M) ? 2 : 0);
}

size_t OneDnnMatmul::KeyHash::operator()(const Key& k) const {
  uint64_t h = 0;
  for (int64_t v : k) h = math::mix64(h, static_cast<uint64_t>(v));
  return static_cast<size_t>(h);
}

OneDnnMatmul::Key OneDnnMatmul::key_of(const GemmArgs& g) {
  // batch strides only matter for operands that really have a batch
  const int64_t sa = operand_batch(g, g.strideA) > 1 ? g.strideA : 0;
  const int64_t sb = operand_batch(g, g.strideB) > 1 ? g.strideB : 0;
  const int64_t sc = g.batch > 1 ? g.strideC : 0;
  const bool outer = g.outer > 1;
  const int64_t flags = (g.transA ? 1 : 0) | (g.transB ? 2 : 0) | (bias_in_primitive(g) ? 4 : 0) |
                        (g.inputs == GemmInputs::BF16 ? 8 : 0) | (gelu_in_primitive(g) ? 16 : 0) | (g.C16 ? 32 : 0);
  return Key{g.batch, g.M, g.N, g.K, g.lda, g.ldb, g.ldc, sa, sb, sc, operand_batch(g, g.strideA),
             operand_batch(g, g.strideB), std::bit_cast<int32_t>(g.alpha), std::bit_cast<int32_t>(g.beta), flags,
             outer ? g.outer : 1, outer ? g.outerA : 0, outer ? g.outerB : 0, outer ? g.outerC : 0};
}

OneDnnMatmul::Entry OneDnnMatmul::create(const GemmArgs& g) const {
  Entry e;
  const memory::data_type in = g.inputs == GemmInputs::BF16 ? memory::data_type::bf16 : memory::data_type::f32;
  e.a = operand_desc(g.outer, g.outerA, operand_batch(g, g.strideA), g.M, g.K, g.transA, g.lda, g.strideA, in);
  e.b = operand_desc(g.outer, g.outerB, operand_batch(g, g.strideB), g.K, g.N, g.transB, g.ldb, g.strideB, in);
  e.c = operand_desc(g.outer, g.outerC, g.batch, g.M, g.N, false, g.ldc, g.strideC,
                     g.C16 ? memory::data_type::bf16 : memory::data_type::f32);  // bf16: rounded after the post-ops
  e.bias = g.outer > 1 ? memory::desc(Dims{1, 1, 1, g.N}, memory::data_type::f32, Dims{g.N, g.N, g.N, 1})
                       : memory::desc(Dims{1, 1, g.N}, memory::data_type::f32, Dims{g.N, g.N, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.f) attr.set_output_scales(0, {g.alpha});
  dnnl::post_ops ops;
  if (g.beta != 0.f) ops.append_sum(g.beta);  // dst = beta * dst + alpha * A B
  if (gelu_in_primitive(g)) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);  // after the bias
  if (ops.len() > 0) attr.set_post_ops(ops);
  const dnnl::matmul::desc desc = bias_in_primitive(g) ? dnnl::matmul::desc(e.a, e.b, e.bias, e.c)
                                                       : dnnl::matmul::desc(e.a, e.b, e.c);
  const dnnl::matmul::primitive_desc pd(desc, attr, engine_);
  e.primitive = dnnl::matmul(pd);
  e.scratch = pd.scratchpad_desc();
  e.implementation = pd.impl_info_str();
  return e;
}

const OneDnnMatmul::Entry& OneDnnMatmul::entry(const GemmArgs& g) {
  const Key key = key_of(g);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    try {
      it = cache_.emplace(key, create(g)).first;
    } catch (const dnnl::error& e) {
      throw Error(std::string("gemm: oneDNN matmul rejected ") + (g.inputs == GemmInputs::BF16 ? "bf16 " : "") + "M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) +
                  " K=" + std::to_string(g.K) + " batch=" + std::to_string(g.batch) + ": " + e.what());
    }
  }
  return it->second;
}

void OneDnnMatmul::run(const GemmArgs& g) {
  check_gemm(g);
  if (g.outer == 0 || g.batch == 0 || g.M == 0 || g.N == 0) return;
  if (g.K == 0) return gemm_empty_k(g);
  if (widens_bf16(g)) return run_widened(g);
  if (const int padded = padded_operands(g)) return run_padded(g, padded);
  const Entry& e = entry(g);

  // oneDNN takes non-const handles; sources are only read
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(e.a, engine_, const_cast<void*>(g.A))},
                                       {DNNL_ARG_WEIGHTS, memory(e.b, engine_, const_cast<void*>(g.B))},
                                       {DNNL_ARG_DST, memory(e.c, engine_, g.C16 ? static_cast<void*>(g.C16) : g.C)}};
  if (bias_in_primitive(g)) args.emplace(DNNL_ARG_BIAS, memory(e.bias, engine_, const_cast<float*>(g.bias)));
  const ScratchBlock scratch = scratch_block(e.scratch.get_size());
  if (scratch) args.emplace(DNNL_ARG_SCRATCHPAD, memory(e.scratch, engine_, scratch.get()));
  e.primitive.execute(stream_, args);
  stream_.wait();
  if ((g.bias && !bias_in_primitive(g)) || (g.gelu && !gelu_in_primitive(g))) epilogue_after(g);
}

OneDnnMatmul::ScratchBlock OneDnnMatmul::scratch_block(size_t bytes) {
  return ScratchBlock(scratch_.allocate(bytes), [this, bytes](void* p) { scratch_.deallocate(p, bytes); });
}

void OneDnnMatmul::run_padded(const GemmArgs& g, int padded) {
  // (K, cols) rows at `src` with leading dimension ld, copied to `ld_out` = padded_ld(cols)
  const auto copy = [&](const void* src, int64_t ld, int64_t cols, int64_t& ld_out) {
    ld_out = padded_ld(cols);
    ScratchBlock block = scratch_block(static_cast<size_t>(g.K * ld_out) * sizeof(float));
    const float* from = static_cast<const float*>(src);
    float* to = static_cast<float*>(block.get());
    cpu::parallel_for(g.K, cols, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) std::copy_n(from + r * ld, cols, to + r * ld_out);
    });
    return block;
  };
  GemmArgs p = g;
  ScratchBlock a, b;
  if (padded & 1) {
    a = copy(g.A, g.lda, g.M, p.lda);
    p.A = a.get();
  }
  if (padded & 2) {
    b = copy(g.B, g.ldb, g.N, p.ldb);
    p.B = b.get();
  }
  run(p);
}

void OneDnnMatmul::run_widened(const GemmArgs& g) {
  GemmArgs p = widened_layout(g);
  const auto widen = [&](const void* src, const OperandRows& r, int64_t ld_out) {
    ScratchBlock block = scratch_block(static_cast<size_t>(r.outer * r.batch * r.rows * ld_out) * sizeof(float));
    widen_rows(r, static_cast<const uint16_t*>(src), static_cast<float*>(block.get()), ld_out);
    return block;
  };
  const ScratchBlock a = widen(g.A, rows_of_a(g), p.lda);
  const ScratchBlock b = widen(g.B, rows_of_b(g), p.ldb);
  p.A = a.get();
  p.B = b.get();
  ScratchBlock c;
  if (g.C16) {
    c = scratch_block(static_cast<size_t>(g.outer * p.outerC) * sizeof(float));
    p.C = static_cast<float*>(c.get());
  }
  run(p);
  if (!g.C16) return;
  cpu::parallel_for(g.outer * g.batch * g.M, g.N, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t m = r / g.M;  // which matrix
      const float* s = p.C + r * p.ldc;
      uint16_t* d = g.C16 + m / g.batch * g.outerC + m % g.batch * g.strideC + r % g.M * g.ldc;
      for (int64_t j = 0; j < g.N; ++j) d[j] = math::to_bf16(s[j]);
    }
  });
}

std::string OneDnnMatmul::implementation(const GemmArgs& g) {
  check_gemm(g);
  if (g.outer == 0 || g.batch == 0 || g.M == 0 || g.N == 0 || g.K == 0) return "none";
  if (widens_bf16(g)) return entry(widened_layout(g)).implementation + " (bf16 widened to f32)";
  return entry(g).implementation;
}

Backend::Bf16 OneDnnMatmul::bf16_support_for(dnnl::cpu_isa isa, std::string* why) {
  using dnnl::cpu_isa;
  const char* name = "one this build does not name";
  Backend::Bf16 support = Backend::Bf16::Emulated;  // without bf16 instructions: widens_bf16
  switch (isa) {
    case cpu_isa::avx512_core_amx: name = "avx512_core_amx"; support = Backend::Bf16::Native; break;
    case cpu_isa::avx512_core_bf16: name = "avx512_core_bf16"; support = Backend::Bf16::Native; break;
    case cpu_isa::avx512_core_vnni: name = "avx512_core_vnni"; break;
    case cpu_isa::avx512_core: name = "avx512_core"; break;
    case cpu_isa::avx2_vnni: name = "avx2_vnni"; break;
    case cpu_isa::avx2: name = "avx2"; break;
    case cpu_isa::avx: name = "avx"; break;
    case cpu_isa::sse41: name = "sse41"; break;
    default: break;
  }
  if (why) *why = std::string("oneDNN's instruction set on this CPU is ") + name;
  return support;
}

size_t OneDnnMatmul::cached_primitives() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

}  // namespace hr
