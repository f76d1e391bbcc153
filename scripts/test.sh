#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test in the release build (which also compiles the
# CUDA backend where nvcc is found; without a GPU its GPU test cases count as skipped) and again under ASan + UBSan.
# Ends with "N passed, N failed" (", N skipped" when any were) counted from doctest's own test-case totals, and exits
# non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install.sh || { echo "0 passed, 1 failed"; exit 1; }

if [ ! -f build-sanitize/build.ninja ]; then
  meson setup build-sanitize --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcuda=disabled >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
meson compile -C build-sanitize || { echo "0 passed, 1 failed"; exit 1; }

status=0
meson test -C build --print-errorlogs --num-processes 2 || status=1
# detect_leaks=0: OpenMP and oneDNN keep per-thread pools alive until exit
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-sanitize --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1

python3 scripts/count_tests.py build/meson-logs/testlog.json build-sanitize/meson-logs/testlog.json
counted=$?
[ $status -eq 0 ] && [ $counted -eq 0 ]
