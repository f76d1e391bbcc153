#!/usr/bin/env bash
# Where a training step's thread wake-ups come from: OpenMP parallel regions a step, by the function that opens them.
# Under OMP_WAIT_POLICY=passive (headroom's default, README) each region wakes sleeping threads, which costs tens of
# microseconds on a virtual machine; this first measures that cost here (back-to-back empty regions, passive and
# active), then runs `headroom bench` with 4 and 12 timed steps under an LD_PRELOAD shim that counts GOMP_parallel calls
# by caller, and divides the difference by 8 (the probes, warm-up and inference runs drop out, as in
# scripts/onednn-breakdown.sh). Needs a C compiler and addr2line (binutils).
# Usage: [HEADROOM=binary] scripts/parallel-regions.sh [CONFIG] [extra bench args, e.g. --precision bf16]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/bench-cpu.yaml}; shift || true
bin=$(realpath "${HEADROOM:-build/headroom}")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/count.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
enum { N = 4096 };
static void* fns[N];
static long counts[N];
static int used;
static void report(void) {
  const char* out = getenv("HR_REGIONS_OUT");
  FILE* f = out ? fopen(out, "w") : NULL;
  if (!f) return;
  for (int i = 0; i < used; ++i) {
    Dl_info info;
    if (!dladdr(fns[i], &info)) continue;
    fprintf(f, "%ld %s 0x%lx\n", counts[i], info.dli_fname, (unsigned long)((char*)fns[i] - (char*)info.dli_fbase));
  }
  fclose(f);
}
void GOMP_parallel(void (*fn)(void*), void* data, unsigned threads, unsigned flags) {
  static void (*real)(void (*)(void*), void*, unsigned, unsigned);
  if (!real) {
    real = (void (*)(void (*)(void*), void*, unsigned, unsigned))dlsym(RTLD_NEXT, "GOMP_parallel");
    atexit(report);
  }
  int i = 0;
  while (i < used && fns[i] != (void*)fn) ++i;
  if (i == used && used < N) fns[used++] = (void*)fn;
  if (i < N) ++counts[i];
  real(fn, data, threads, flags);
}
C
cat > "$dir/wake.c" <<'C'
#include <omp.h>
#include <stdio.h>
int main(void) {
  volatile int sink = 0;
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = omp_get_wtime();
    for (int i = 0; i < 2000; ++i) {
#pragma omp parallel
      sink = omp_get_thread_num();
    }
    const double us = (omp_get_wtime() - t0) / 2000 * 1e6;
    if (us < best) best = us;
  }
  printf("%.1f", best);
  return 0;
}
C
cc -O2 -shared -fPIC "$dir/count.c" -o "$dir/count.so" -ldl
cc -O2 -fopenmp "$dir/wake.c" -o "$dir/wake"
echo "an empty parallel region on $(nproc) threads (best of 5 x 2000): $(OMP_WAIT_POLICY=passive "$dir/wake") us passive," \
     "$(OMP_WAIT_POLICY=active "$dir/wake") us active"
for steps in 4 12; do
  HR_REGIONS_OUT="$dir/$steps.txt" LD_PRELOAD="$dir/count.so" "$bin" bench "$config" --steps $steps --warmup 2 \
    --inference-runs 2 "$@" > /dev/null
done
python3 - "$dir/4.txt" "$dir/12.txt" <<'PY'
import collections, subprocess, sys
def load(path):
    d = collections.Counter()
    for line in open(path):
        n, lib, off = line.split()
        d[(lib, off)] += int(n)
    return d
few, many = load(sys.argv[1]), load(sys.argv[2])
def name(lib, off):
    if not lib.endswith("headroom"):
        return lib.split("/")[-1]
    fn = subprocess.run(["addr2line", "-f", "-C", "-e", lib, off], capture_output=True, text=True).stdout.split("\n")[0]
    fn = fn.replace("(anonymous namespace)::", "")
    if "parallel_for<" in fn:  # the lambda's type names the function that opened the region
        fn = fn.split("parallel_for<", 1)[1]
    return fn.split("(")[0].replace("hr::", "")
per = collections.Counter()
for k in set(few) | set(many):
    if many[k] > few[k]: per[name(*k)] += (many[k] - few[k]) / 8
print("parallel regions a training step: %.0f" % sum(per.values()))
print("| regions / step | opened by |\n|---:|---|")
for fn, n in per.most_common():
    print("| %g | %s |" % (n, fn))
PY
