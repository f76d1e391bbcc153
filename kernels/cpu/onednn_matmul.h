// GEMM through oneDNN matmul. Strides, transposes, leading dimensions and batch broadcasts are all expressed in the
// memory descriptors, so no operand is ever copied; primitives are built once per distinct problem and cached.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_allocator.h"

namespace hr {

class OneDnnMatmul {
 public:
  // Scratchpads (user-managed, so concurrent calls never share one) come from `scratch`.
  explicit OneDnnMatmul(CpuAllocator& scratch);

  // C = alpha op(A) op(B) + beta C (+ bias), as GemmArgs documents. Throws hr::Error on inconsistent arguments.
  void run(const GemmArgs& g);
  // oneDNN's name for the kernel that runs `g` (e.g. "brg:avx512_core", "gemm:jit"); tests use it to rule out "ref".
  std::string implementation(const GemmArgs& g);
  size_t cached_primitives() const;
  // How oneDNN runs bf16 matmuls at instruction set `isa` (dnnl::get_effective_cpu_isa(): the CPU's flags, lowered by
  // DNNL_MAX_CPU_ISA): AMX or AVX512-BF16 natively, plain AVX-512 emulated, anything older not at all.
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
  static Key key_of(const GemmArgs& g);
  const Entry& entry(const GemmArgs& g);
  Entry create(const GemmArgs& g) const;

  CpuAllocator& scratch_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  mutable std::mutex mutex_;
  std::unordered_map<Key, Entry, KeyHash> cache_;  // entries are never erased, so references stay valid
};

}  // namespace hr
