// OpenMP helpers of the CPU backend: split a range over the threads only when the work pays for the fork/join.
#pragma once

#include <omp.h>

#include <cstdint>

namespace hr::cpu {

// Below about this many cheap operations a parallel region costs more than it saves: waking a sleeping OpenMP thread
// takes tens of microseconds on a virtual machine (docs/performance.md). Tests set 1 to run the parallel paths on small
// inputs (ParallelAlways).
inline int64_t parallel_work = int64_t{1} << 17;

// Calls fn(begin, end) on contiguous blocks that cover [0, n), one block per thread when n * work_per_item reaches
// parallel_work, else once inline. Blocks depend on the thread count, so fn must not let them change the result.
template <class Fn>
void parallel_for(int64_t n, int64_t work_per_item, Fn&& fn) {
  if (n <= 0) return;
  if (n == 1 || n * work_per_item < parallel_work || omp_in_parallel() || omp_get_max_threads() == 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

// For its scope every parallel_for of more than one item runs on all threads, whatever its size (tests).
class ParallelAlways {
 public:
  ParallelAlways() { parallel_work = 1; }
  ~ParallelAlways() { parallel_work = saved_; }
  ParallelAlways(const ParallelAlways&) = delete;
  ParallelAlways& operator=(const ParallelAlways&) = delete;

 private:
  int64_t saved_ = parallel_work;
};

}  // namespace hr::cpu
