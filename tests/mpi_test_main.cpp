// The data-parallel tests' main: exit 77 (meson: SKIP) with the reason where they cannot run, doctest otherwise.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
#ifndef HR_WITH_MPI
  std::cout << "skipped: headroom was built without MPI (install libopenmpi-dev; meson -Dmpi=enabled)\n";
  return 77;
#endif
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    std::cout << "skipped: mpirun is not on PATH (Debian: openmpi-bin)\n";
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
