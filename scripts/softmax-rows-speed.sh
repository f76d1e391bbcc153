#!/usr/bin/env bash
# The CPU backend's softmax_dropout and softmax_dropout_backward (the shared rows of kernels/math/rows.h) against the
# CPU-only loops they replaced (cpu_softmax.h and cpu_exp.h at commit 10b6f3d), alternating (old first in every other
# round), on one thread: the median of the rounds per case, the ratio new/old, and whether every output is bit for
# bit the old one. Attention-like shapes (B x 12 heads x T rows of T keys, the last eighth of the keys masked) as
# training calls them: probabilities kept, dropout 0 and 0.1, output f32 and bf16. Builds a small program against
# build/libheadroom.a (build it first; the program is compiled with -march=native, as the release build is).
# Usage: scripts/softmax-rows-speed.sh [ROUNDS (15)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-15} ref=10b6f3d
dir=$(mktemp -d /tmp/softmax-rows-speed.XXXXXX)
trap 'rm -r "$dir"' EXIT
# the old loops, in a namespace of their own
{
  git show "$ref:kernels/cpu/cpu_exp.h" | grep -v 'pragma once'
  git show "$ref:kernels/cpu/cpu_softmax.h" | grep -v 'pragma once\|cpu_exp\.h'
} | sed 's/^namespace hr::cpu {/namespace hr::cpu::old {/' > "$dir/old_softmax.h"
cat > "$dir/bench.cpp" <<'CPP'
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_parallel.h"
#include "old_softmax.h"

using namespace hr;

// the CPU backend's two methods before the change, as they were
void old_forward(const float* x, const float* mask, float* y, void* out, bool out_bf16, int64_t rows, int64_t n,
                 float scale, int64_t rows_per_mask, float p_drop, uint64_t seed, uint64_t offset) {
  const math::DropoutFactors drop(p_drop, seed, offset);
  cpu::parallel_for(rows, 8 * n, [&](int64_t r0, int64_t r1) {
    std::vector<float> scratch(y && !drop.threshold ? 0 : static_cast<size_t>(2 * n));
    cpu::old::softmax_dropout_rows(x, mask, y, out_bf16 ? nullptr : static_cast<float*>(out),
                                   out_bf16 ? static_cast<uint16_t*>(out) : nullptr, r0, r1, n, scale, rows_per_mask,
                                   drop, scratch.data());
  });
}
void old_backward(const float* y, const void* out, bool out_bf16, const float* gout, float* gx, int64_t rows,
                  int64_t n, float scale, float p_drop, bool accumulate) {
  const float keep = 1.f / (1.f - p_drop);
  cpu::parallel_for(rows, 2 * n, [&](int64_t r0, int64_t r1) {
    std::vector<float> scratch(static_cast<size_t>(n));
    cpu::old::softmax_dropout_backward_rows(y, out, out_bf16, gout, gx, r0, r1, n, scale, keep, accumulate,
                                            scratch.data());
  });
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] * 1e3;
}

int main(int argc, char** argv) {
  const int rounds = std::atoi(argv[1]);
  Backend& be = cpu_backend();
  std::printf("| rows x n | p | out | pass | old ms | new ms | new/old | bits |\n");
  std::printf("|---|---:|---|---|---:|---:|---:|---|\n");
  for (const int64_t B : {8, 2}) {
    const int64_t H = 12, T = B == 8 ? 128 : 512, n = T, rows = B * H * T, N = rows * n, rpm = H * T;
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.f, 3.f);
    std::vector<float> x(N), mask(B * n, 0.f), gout(N);
    for (float& v : x) v = normal(rng);
    for (float& v : gout) v = normal(rng);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = n - n / 8; j < n; ++j) mask[b * n + j] = -1e9f;
    const float scale = 0.125f;
    for (const float p : {0.f, 0.1f}) {
      for (const bool bf16 : {false, true}) {
        // attention_weights in training: f32 without dropout writes the probabilities only, as its output. Both
        // write the same buffers, so that where the pages lie does not favour one.
        const bool same = !bf16 && p == 0.f;
        std::vector<float> y(N), o(bf16 ? 0 : N), gx(N);
        std::vector<uint16_t> b16(bf16 ? N : 0);
        void* out = same ? nullptr : bf16 ? static_cast<void*>(b16.data()) : o.data();
        const void* kept = p > 0.f ? out : nullptr;
        auto run = [&](bool old, std::vector<double>& tf, std::vector<double>& tb) {
          double t = now();
          if (old) old_forward(x.data(), mask.data(), y.data(), out, bf16, rows, n, scale, rpm, p, 7, 1000);
          else be.softmax_dropout(x.data(), mask.data(), y.data(), out, bf16, rows, n, scale, rpm, p, 7, 1000);
          tf.push_back(now() - t);
          t = now();
          if (old) old_backward(y.data(), kept, bf16, gout.data(), gx.data(), rows, n, scale, p, false);
          else be.softmax_dropout_backward(y.data(), kept, bf16, gout.data(), gx.data(), rows, n, scale, p, false);
          tb.push_back(now() - t);
        };
        std::vector<double> fo, fn, bo, bn;
        run(true, fo, bo);
        const auto y0 = y, o0 = o, gx0 = gx;
        const auto b0 = b16;
        run(false, fn, bn);
        const bool fwd_same = same_bits(y, y0) && same_bits(o, o0) && same_bits(b16, b0), bwd_same = same_bits(gx, gx0);
        fo.clear(), fn.clear(), bo.clear(), bn.clear();
        for (int r = 0; r < 2 * rounds; ++r) {  // old then new, new then old, ...
          const bool old = (r % 2 == 0) == (r / 2 % 2 == 0);
          run(old, old ? fo : fn, old ? bo : bn);
        }
        const char* kind = same ? "(y only)" : bf16 ? "bf16" : "f32";
        for (const bool fwd : {true, false}) {
          const double t_old = median_ms(fwd ? fo : bo), t_new = median_ms(fwd ? fn : bn);
          std::printf("| %ld x %ld | %.1f | %s | %s | %.3f | %.3f | %.3f | %s |\n", rows, n, p, kind,
                      fwd ? "forward" : "backward", t_old, t_new, t_new / t_old,
                      (fwd ? fwd_same : bwd_same) ? "same" : "DIFFER");
        }
      }
    }
  }
}
CPP
cuda=()
if [ -f build/kernels/cuda/libheadroom_cuda.a ]; then  # a build with the CUDA backend links cudart and cuBLAS
  cuda=(build/kernels/cuda/libheadroom_cuda.a -L/usr/local/cuda/lib64 -lcudart -lcublas)
fi
g++ -std=c++20 -O3 -march=native -fno-math-errno -fopenmp -DNDEBUG -I. -I"$dir" "$dir/bench.cpp" -o "$dir/bench" \
  build/libheadroom.a "${cuda[@]}" -ldnnl -lyaml-cpp -lutf8proc $(pkg-config --libs cairo glib-2.0 zlib) \
  -lpthread
lscpu | sed -n 's/^Model name: *//p' | head -1
OMP_NUM_THREADS=1 "$dir/bench" "$rounds"
