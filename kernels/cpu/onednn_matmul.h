// GEMM through oneDNN matmul. Strides, transposes, leading dimensions and batch broadcasts are all expressed in the
// memory descriptors, so an operand is copied only where its leading dimension would slow oneDNN down (see
// padded_operands) or where a CPU without bf16 instructions multiplies bf16 operands (see widens_bf16); primitives are
// built once per distinct problem and cached.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_allocator.h"

namespace hr {

class OneDnnMatmul {
 public:
  // Scratchpads (user-managed, so concurrent calls never share one) come from `scratch`. pad_4k_strides: whether
  // padded_operands may copy; by default where oneDNN's gemm does not do it itself (CPUs without AVX-512).
  // widen_bf16: whether bf16 products run as f32 gemms on widened copies; by default where the CPU has no bf16
  // instructions.
  explicit OneDnnMatmul(CpuAllocator& scratch, std::optional<bool> pad_4k_strides = std::nullopt,
                        std::optional<bool> widen_bf16 = std::nullopt);

  // C = alpha op(A) op(B) + beta C (+ bias), as GemmArgs documents. Throws hr::Error on inconsistent arguments.
  void run(const GemmArgs& g);
  // oneDNN's name for the kernel that runs `g` (e.g. "brg:avx512_core", "gemm:jit"); tests use it to rule out "ref".
  std::string implementation(const GemmArgs& g);
  size_t cached_primitives() const;
  // Which f32 operands `run` first copies to a leading dimension that is no multiple of 4 KB (bit 0: A, bit 1: B):
  // one read along K (A transposed, B not) with such a leading dimension while the other side of the product is
  // narrow (32 to 383). oneDNN 2.6's gemm on AVX2 then reads it in place, every row in the same L1 cache sets, at
  // 0.5-0.6x its rate (an FFN's weight gradient, (d_ff, tokens) x (tokens, d_model) with d_ff = 1024, on an
  // AMD EPYC Zen 2: `headroom bench CONFIG --gemm-strides`, docs/performance.md); its AVX-512 kernels copy such
  // operands themselves.
  int padded_operands(const GemmArgs& g) const;
  // Whether `run` multiplies g's bf16 operands as f32: it widens them (exactly: a bf16 is the top half of an f32) into
  // dense f32 copies, runs oneDNN's f32 gemm, and rounds a bf16 result after the epilogue. The arithmetic of a native
  // bf16 gemm (products of bf16 values, exact in f32, summed in f32) in another summation order, at f32's speed plus
  // a pass over the operands: oneDNN's own bf16 matmul without bf16 instructions converts in its inner loop and runs
  // at a fifth of its f32 rate on AVX-512 (gemm:jit, docs/performance.md) and not at all on AVX2.
  bool widens_bf16(const GemmArgs& g) const { return widen_bf16_ && g.inputs == GemmInputs::BF16; }
  // How bf16 matmuls run at instruction set `isa` (dnnl::get_effective_cpu_isa(): the CPU's flags, lowered by
  // DNNL_MAX_CPU_ISA): natively with AMX or AVX512-BF16, emulated (widens_bf16) on anything else.
  static Backend::Bf16 bf16_support_for(dnnl::cpu_isa isa, std::string* why);

 private:
  // Everything that defines a primitive: batch sizes, shape, strides, alpha/beta bits, transposes, bias, input type,
  // the outer batch and its strides, the GELU epilogue.
  using Key = std::array<int64_t, 19>;
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    dnnl::matmul primitive;
    dnnl::memory::desc a, b, c, bias, scratch;
    std::string implementation;
  };

  // oneDNN 2.6 scales a bias input by the output scale (alpha), so with alpha != 1 the bias is added afterwards.
  static bool bias_in_primitive(const GemmArgs& g) { return g.bias && g.alpha == 1.f; }
  // GELU is a post-op of the primitive unless it must follow a bias added afterwards.
  static bool gelu_in_primitive(const GemmArgs& g) { return g.gelu && (!g.bias || bias_in_primitive(g)); }
  // A block of `scratch_` for the length of a call (null for 0 bytes)
  using ScratchBlock = std::unique_ptr<void, std::function<void(void*)>>;
  ScratchBlock scratch_block(size_t bytes);
  static Key key_of(const GemmArgs& g);
  const Entry& entry(const GemmArgs& g);
  // run(g) with the operands padded_operands(g) names (`padded`) copied to a padded leading dimension
  void run_padded(const GemmArgs& g, int padded);
  // run(g) as an f32 gemm on widened copies of its bf16 operands (widens_bf16)
  void run_widened(const GemmArgs& g);
  Entry create(const GemmArgs& g) const;

  CpuAllocator& scratch_;
  bool pad_4k_strides_;
  bool widen_bf16_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, Entry, KeyHash> cache_;  // entries are never erased, so references stay valid
};

}  // namespace hr
