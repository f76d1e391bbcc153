// `headroom bench --kernels`: the backend's elementwise, row and optimizer kernels alone, timed on buffers of the bench
// config's activation shapes, so that a fusion can be weighed against the pass it would save before it is written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace hr {

struct KernelTiming {
  std::string name;   // e.g. "dropout (B*T, ffn)"
  int64_t elements;   // per call
  double bytes;       // read and written per call, as the kernel's contract says (caches aside)
  double median_us;   // per call
};

// Times each kernel `runs` times after two warm-up calls on device d: B*T rows of width d_model and ffn, H heads of
// T x T attention probabilities, `parameters` values for the optimizer and the gradient norm.
std::vector<KernelTiming> time_kernels(Device d, int64_t rows, int64_t d_model, int64_t ffn, int64_t heads_rows,
                                       int64_t T, int64_t parameters, int runs);

}  // namespace hr
