// Integer operands that live on the device (embedding ids, class labels) checked before use: one block scans them,
// the host reads the result back (a synchronization) and reports the first bad one through kernels/backend_checks.h,
// with the same message as the CPU backend.
#include <climits>

#include "kernels/backend_checks.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/host_copy.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"

namespace hr::cuda {
namespace {

// out[0] = entries other than `skip`, out[1] = position of the first of those outside [0, end) (LLONG_MAX if none)
__global__ void scan_indices_kernel(const int32_t* v, int64_t n, int64_t end, int64_t skip, long long* out) {
  __shared__ long long smem[32];
  long long counted = 0, first_bad = LLONG_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int32_t x = v[i];
    if (x == skip) continue;
    ++counted;
    if ((x < 0 || x >= end) && i < first_bad) first_bad = i;
  }
  counted = block_reduce(counted, SumOp{}, 0ll, smem);
  first_bad = block_reduce(first_bad, MinOp{}, LLONG_MAX, smem);
  if (threadIdx.x == 0) {
    out[0] = counted;
    out[1] = first_bad;
  }
}

struct Scan {
  long long counted, first_bad;
  int32_t bad_value;  // valid when first_bad != LLONG_MAX
};

Scan scan_indices(const int32_t* v, int64_t n, int64_t end, int64_t skip, CachingAllocator& allocator,
                  cudaStream_t stream) {
  ScratchBuffer result(allocator, 2 * sizeof(long long));
  scan_indices_kernel<<<1, 1024, 0, stream>>>(v, n, end, skip, result.as<long long>());
  HR_CUDA_CHECK_LAUNCH();
  long long host[2];
  copy_to_host(host, result.as<long long>(), sizeof(host), stream);
  Scan s{host[0], host[1], 0};
  if (s.first_bad != LLONG_MAX) copy_to_host(&s.bad_value, v + s.first_bad, sizeof(int32_t), stream);
  return s;
}

}  // namespace

void check_ids(const int32_t* ids, int64_t n, const char* op, CachingAllocator& allocator, cudaStream_t stream) {
  if (n <= 0) return;
  const Scan s = scan_indices(ids, n, LLONG_MAX, LLONG_MIN, allocator, stream);  // an int32 id never equals skip
  if (s.first_bad != LLONG_MAX) check_id(s.bad_value, s.first_bad, op);
}

int64_t count_labels(const int32_t* labels, int64_t rows, int64_t C, int32_t ignore_index, const char* op,
                     CachingAllocator& allocator, cudaStream_t stream) {
  if (rows <= 0) return 0;
  const Scan s = scan_indices(labels, rows, C, ignore_index, allocator, stream);
  if (s.first_bad != LLONG_MAX) check_label(s.bad_value, s.first_bad, C, ignore_index, op);
  return s.counted;
}

}  // namespace hr::cuda
