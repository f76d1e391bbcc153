#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz/ (one per parser of untrusted input) under ASan + UBSan.
#   scripts/fuzz.sh TARGET|all SECONDS [RUNS]     SECONDS for each target, or until RUNS executions
# Builds build-fuzz/ with clang on first use. New inputs that libFuzzer finds go to build-fuzz/corpus/TARGET, not into
# the committed seeds; a crash, leak or timeout leaves its input in build-fuzz/crashes/TARGET/: fix the parser, then
# commit that input under tests/fuzz/regressions/TARGET/ so the normal test suite replays it.
# Ends with one line per target: executions, seconds, and whether it found anything; exits non-zero if one did.
set -uo pipefail
cd "$(dirname "$0")/.."

all=(clinc150 conll config delimited jsonl safetensors squad text_corpus token_cache tokenizer)
target=${1:?usage: scripts/fuzz.sh TARGET|all SECONDS (targets: ${all[*]})}
seconds=${2:?usage: scripts/fuzz.sh TARGET|all SECONDS [RUNS]}
runs_limit=${3:--1}
targets=("${all[@]}")
[ "$target" = all ] || targets=("$target")

clangxx=$(command -v clang++-14 || command -v clang++) || { echo "clang++ is missing: run scripts/install.sh"; exit 1; }
if [ ! -f build-fuzz/build.ninja ]; then
  CXX=$clangxx meson setup build-fuzz --buildtype=debugoptimized -Dfuzz=enabled -Dcuda=disabled >/dev/null || exit 1
fi
meson compile -C build-fuzz "${targets[@]/#/fuzz_}" >/dev/null || { meson compile -C build-fuzz "${targets[@]/#/fuzz_}"; exit 1; }

status=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  seeds=("tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && seeds+=("tests/fuzz/regressions/$t")
  log="build-fuzz/fuzz-$t.log"
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: one that needs 2 GB is a memory bomb
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 build-fuzz/tests/fuzz_$t -max_total_time="$seconds" -runs="$runs_limit" -timeout=10 \
    -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 -artifact_prefix="build-fuzz/crashes/$t/" \
    "build-fuzz/corpus/$t" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  time=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
  if [ $rc -eq 0 ]; then
    summary+=("$t: ${runs:-?} executions in ${time:-$seconds} s, nothing found")
  else
    status=1
    summary+=("$t: FOUND a problem after ${runs:-?} executions, see $log and build-fuzz/crashes/$t/")
    tail -40 "$log"
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
