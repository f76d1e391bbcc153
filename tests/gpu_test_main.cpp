// main() of the GPU test executables (test_cuda_backend, test_gpu_parity). Without a CUDA device the cases of test
// suite "gpu" are filtered out, so doctest's summary counts them as skipped; the host-side cases still run, and when
// they pass the exit status is 77, which meson reports as SKIP rather than as a pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "kernels/backend.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const bool device = hr::cuda_available();
  if (!device) context.addFilter("test-suite-exclude", "gpu");
  const int status = context.run();
  if (context.shouldExit() || status != 0 || device) return status;
  std::printf("no CUDA device: the cases of test suite \"gpu\" were skipped (exit 77)\n");
  return 77;
}
