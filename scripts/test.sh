#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test in the release build (which also compiles the
# CUDA backend where nvcc is found; without a GPU its GPU test cases count as skipped) and again under ASan + UBSan,
# then runs each fuzz target briefly (scripts/fuzz.sh). Ends with "N passed, N failed" (", N skipped" when any were)
# counted from doctest's own test-case totals, and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install.sh --test || { echo "0 passed, 1 failed"; exit 1; }

# -g1: line tables and functions only; the sanitizers' stack traces are the same (inlined frames included) and each
# file compiles in about three quarters of -g's time
if [ ! -f build-sanitize/build.ninja ]; then
  meson setup build-sanitize --buildtype=debugoptimized -Dcpp_args=-g1 -Db_sanitize=address,undefined \
    -Db_lundef=false -Dcuda=disabled >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
meson compile -C build-sanitize || { echo "0 passed, 1 failed"; exit 1; }

status=0
meson test -C build --print-errorlogs --num-processes 2 || status=1
# detect_leaks=0: OpenMP and oneDNN keep per-thread pools alive until exit
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-sanitize --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1

# The parsers' fuzz targets, 8 s each (about a minute in all), where clang and libFuzzer are installed; a finding
# counts as one failed test
fuzz_failed=0
if command -v clang++-14 >/dev/null && dpkg-query -W -f='${Status}' libfuzzer-14-dev 2>/dev/null | grep -q "ok installed"; then
  scripts/fuzz.sh all 8 || fuzz_failed=1
fi

totals=$(python3 scripts/count_tests.py build/meson-logs/testlog.json build-sanitize/meson-logs/testlog.json)
counted=$?
if [[ $fuzz_failed -eq 1 && $totals =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(.*)$ ]]; then
  totals="${BASH_REMATCH[1]} passed, $((BASH_REMATCH[2] + 1)) failed${BASH_REMATCH[3]}"
fi
echo "$totals"
[ $status -eq 0 ] && [ $counted -eq 0 ] && [ $fuzz_failed -eq 0 ]
