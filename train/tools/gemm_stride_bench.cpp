#include "train/tools/gemm_stride_bench.h"

#include <chrono>
#include <functional>

#include "framework/tensor.h"
#include "kernels/cpu/cpu_allocator.h"
#include "kernels/cpu/onednn_matmul.h"
#include "train/tools/bench.h"

namespace hr {

std::vector<GemmStrideTiming> time_gemm_strides(int64_t rows, int64_t wide, int runs) {
  CpuAllocator scratch;
  OneDnnMatmul plain(scratch, false), by_default(scratch);
  const int64_t padded_ld = wide + 16;  // 64 bytes more: no longer a multiple of 4 KB
  const int64_t narrow_max = 1024;
  // (K, wide) at leading dimension `wide` and at `padded_ld`; the narrow operand (K, narrow) contiguous; tensors, so
  // that the operands come from the allocator a model's do, aligned as theirs are
  Tensor w = Tensor::empty({rows * padded_ld}), n = Tensor::empty({rows * narrow_max});
  Tensor c = Tensor::zeros({wide * narrow_max});
  for (int64_t i = 0; i < rows * padded_ld; ++i) w.data()[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  for (int64_t i = 0; i < rows * narrow_max; ++i) n.data()[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;

  std::vector<GemmStrideTiming> out;
  for (const bool wide_is_a : {true, false})
    for (const int64_t narrow : {8, 16, 32, 64, 128, 256, 384, 512, 1024}) {
      // C (M, N) += op(A) op(B), both read along K (the token axis), as the weight gradients accumulate
      GemmArgs g;
      g.K = rows, g.transA = true, g.transB = false, g.beta = 1.f;
      if (wide_is_a) g.M = wide, g.N = narrow, g.A = w.data(), g.lda = wide, g.B = n.data(), g.ldb = narrow;
      else g.M = narrow, g.N = wide, g.A = n.data(), g.lda = narrow, g.B = w.data(), g.ldb = wide;
      g.C = c.data(), g.ldc = g.N;
      GemmArgs laid_out = g;
      (wide_is_a ? laid_out.lda : laid_out.ldb) = padded_ld;
      const std::function<void()> calls[] = {[&] { plain.run(g); }, [&] { plain.run(laid_out); },
                                             [&] { by_default.run(g); }};
      std::vector<double> ms[3];
      for (int r = -1; r < runs; ++r)  // round -1 warms up (and builds the primitives)
        for (int v = 0; v < 3; ++v) {
          const auto t = std::chrono::steady_clock::now();
          calls[v]();
          if (r >= 0) ms[v].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
        }
      out.push_back({wide_is_a ? "A^T" : "B", narrow, median(ms[0]), median(ms[1]), median(ms[2]),
                     by_default.padded_operands(g) != 0});
    }
  return out;
}

}  // namespace hr
