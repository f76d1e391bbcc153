#include "kernels/cpu/cpu_sum_to.h"

#include <algorithm>
#include <string>

#include "kernels/base/error.h"
#include "kernels/cpu/cpu_parallel.h"
#include "kernels/cpu/strided_runs.h"

namespace hr::cpu {

namespace {

constexpr int64_t kColumnBlock = 256;      // columns summed together in registers/L1 by one task
constexpr int64_t kSegmentElems = 1 << 16;  // elements of x per partial sum: fixes the summation order by shape
constexpr int64_t kManyOutputs = 64;       // with this many outputs, one thread per output block is parallel enough

// The outer dims (all but the innermost) of a coalesced (x, out) iteration, split into those that survive in out
// (kept) and those summed away (reduced). A flat index over either list maps to element offsets.
struct OuterDims {
  struct List {
    int n = 0;
    int64_t shape[kMaxDims] = {}, x_stride[kMaxDims] = {}, out_stride[kMaxDims] = {};
    int64_t count = 1;
    int64_t x_offset(int64_t flat) const {
      int64_t off = 0;
      for (int d = n - 1; d >= 0; --d) {
        off += flat % shape[d] * x_stride[d];
        flat /= shape[d];
      }
      return off;
    }
    int64_t out_offset(int64_t flat) const {
      int64_t off = 0;
      for (int d = n - 1; d >= 0; --d) {
        off += flat % shape[d] * out_stride[d];
        flat /= shape[d];
      }
      return off;
    }
  };
  List kept, reduced;

  explicit OuterDims(const StridedShape<2>& s) {
    for (int d = 0; d + 1 < s.ndim; ++d) {
      List& l = s.stride[1][d] == 0 ? reduced : kept;
      l.shape[l.n] = s.shape[d];
      l.x_stride[l.n] = s.stride[0][d];
      l.out_stride[l.n] = s.stride[1][d];
      l.count *= s.shape[d];
      ++l.n;
    }
  }
};

// A float buffer from the caching allocator for the lifetime of a call.
class ScratchFloats {
 public:
  ScratchFloats(CpuAllocator& a, int64_t n) : a_(a), bytes_(static_cast<size_t>(n) * sizeof(float)) {
    p_ = static_cast<float*>(a_.allocate(bytes_));
  }
  ~ScratchFloats() { a_.deallocate(p_, bytes_); }
  ScratchFloats(const ScratchFloats&) = delete;
  ScratchFloats& operator=(const ScratchFloats&) = delete;
  float* data() const { return p_; }

 private:
  CpuAllocator& a_;
  size_t bytes_;
  float* p_;
};

float sum_run(const float* x, int64_t len) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < len; ++j) s += x[j];
  return s;
}

// The innermost dim survives: sum whole rows of x into rows of out, in blocks of columns. Long reductions are cut
// into segments of rows whose partial sums are added in segment order.
void sum_columns(const StridedShape<2>& s, const float* x, float* out, int64_t out_numel, bool accumulate,
                 CpuAllocator& scratch) {
  const OuterDims outer(s);
  const int64_t C = s.shape[s.ndim - 1], out_step = s.stride[1][s.ndim - 1];
  const int64_t rows_per_segment = std::max<int64_t>(1, kSegmentElems / C);
  const int64_t segments = (outer.reduced.count + rows_per_segment - 1) / rows_per_segment;
  const int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;

  ScratchFloats partial(scratch, segments > 1 ? segments * out_numel : 0);
  const int64_t tasks = segments * outer.kept.count * blocks;
  parallel_for(tasks, std::min<int64_t>(C, kColumnBlock) * rows_per_segment, [&](int64_t t0, int64_t t1) {
    float acc[kColumnBlock];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t block = t % blocks, ko = t / blocks % outer.kept.count, seg = t / blocks / outer.kept.count;
      const int64_t c0 = block * kColumnBlock, width = std::min(kColumnBlock, C - c0);
      const int64_t r0 = seg * rows_per_segment, r1 = std::min(outer.reduced.count, r0 + rows_per_segment);
      const int64_t x_base = outer.kept.x_offset(ko) + c0;
      std::fill(acc, acc + width, 0.f);
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = x + x_base + outer.reduced.x_offset(r);
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) acc[j] += row[j];
      }
      const int64_t o = outer.kept.out_offset(ko) + c0 * out_step;
      if (segments > 1) {
        float* dst = partial.data() + seg * out_numel + o;
        for (int64_t j = 0; j < width; ++j) dst[j * out_step] = acc[j];
      } else {
        for (int64_t j = 0; j < width; ++j) out[o + j * out_step] = accumulate ? out[o + j * out_step] + acc[j] : acc[j];
      }
    }
  });
  if (segments == 1) return;
  parallel_for(out_numel, segments, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      float v = accumulate ? out[o] : 0.f;
      for (int64_t seg = 0; seg < segments; ++seg) v += partial.data()[seg * out_numel + o];
      out[o] = v;
    }
  });
}

// The innermost dim is summed away: each output is a sum of contiguous runs of x. With few outputs, each output's
// reduction is cut into fixed segments that the threads share; their partial sums are added in order.
void sum_rows(const StridedShape<2>& s, const float* x, float* out, bool accumulate, CpuAllocator& scratch) {
  const OuterDims outer(s);
  const int64_t L = s.shape[s.ndim - 1];
  const int64_t per_output = outer.reduced.count * L;
  const auto sum_range = [&](int64_t ko, int64_t t0, int64_t t1) {  // flat (reduced row, column) range of output ko
    const int64_t base = outer.kept.x_offset(ko);
    float v = 0.f;
    for (int64_t t = t0; t < t1;) {
      const int64_t r = t / L, j = t % L, len = std::min(L - j, t1 - t);
      v += sum_run(x + base + outer.reduced.x_offset(r) + j, len);
      t += len;
    }
    return v;
  };
  const auto store = [&](int64_t ko, float v) {
    float& o = out[outer.kept.out_offset(ko)];
    o = accumulate ? o + v : v;
  };

  if (outer.kept.count >= kManyOutputs || per_output <= kSegmentElems) {
    parallel_for(outer.kept.count, per_output, [&](int64_t k0, int64_t k1) {
      for (int64_t ko = k0; ko < k1; ++ko) store(ko, sum_range(ko, 0, per_output));
    });
    return;
  }
  const int64_t segments = (per_output + kSegmentElems - 1) / kSegmentElems;
  ScratchFloats partial(scratch, segments);
  for (int64_t ko = 0; ko < outer.kept.count; ++ko) {
    parallel_for(segments, kSegmentElems, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; ++g)
        partial.data()[g] = sum_range(ko, g * kSegmentElems, std::min(per_output, (g + 1) * kSegmentElems));
    });
    float v = 0.f;
    for (int64_t g = 0; g < segments; ++g) v += partial.data()[g];
    store(ko, v);
  }
}

}  // namespace

void sum_to(const Broadcast& p, const float* x, float* out, int64_t out_numel, bool accumulate, CpuAllocator& scratch) {
  HR_CHECK(p.ndim >= 0 && p.ndim <= kMaxDims, "sum_to: ndim " + std::to_string(p.ndim) + " out of range");
  StridedShape<2> full;
  full.ndim = p.ndim;
  int64_t kept = 1;
  for (int d = 0; d < p.ndim; ++d) {
    full.shape[d] = p.shape[d];
    full.stride[1][d] = p.sa[d];
    if (p.sa[d] != 0) kept *= p.shape[d];
  }
  contiguous_strides(full.ndim, full.shape, full.stride[0]);
  const int64_t numel = full.numel();
  if (numel == 0) {  // an empty sum is 0
    if (!accumulate) std::fill(out, out + out_numel, 0.f);
    return;
  }
  HR_CHECK(kept == out_numel, "sum_to: the kept dims hold " + std::to_string(kept) + " elements, out has " +
                                  std::to_string(out_numel));

  const StridedShape<2> s = coalesce(full);
  bool reduces = false;
  for (int d = 0; d < s.ndim; ++d) reduces = reduces || s.stride[1][d] == 0;
  if (!reduces) {  // nothing summed: a strided copy (or add) into out
    parallel_for(numel, 1, [&](int64_t b, int64_t e) {
      for_each_run(s, b, e, [&](const int64_t* off, int64_t len) {
        const float* src = x + off[0];
        float* dst = out + off[1];
        const int64_t step = s.stride[1][s.ndim - 1];
        for (int64_t j = 0; j < len; ++j) dst[j * step] = accumulate ? dst[j * step] + src[j] : src[j];
      });
    });
  } else if (s.stride[1][s.ndim - 1] != 0) {
    sum_columns(s, x, out, out_numel, accumulate, scratch);
  } else {
    sum_rows(s, x, out, accumulate, scratch);
  }
}

}  // namespace hr::cpu
