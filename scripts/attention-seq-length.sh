#!/usr/bin/env bash
# Sequence length at equal tokens (issue #35): the bench shape (configs/bench-cpu.yaml: 4 layers, d_model 256, 4 heads
# of 64) trained on 2048 tokens a step as T = 64, 128, 512, 1024, 2048 (batch 2048 / T), by each binary given, the
# binaries and lengths alternating within each round so that a shared machine's noise hits them alike. Prints the
# medians: step time, the model's GFLOP/s and its ratio to T = 64, and the peak device memory and its ratio to T = 64.
# Usage: scripts/attention-seq-length.sh [ROUNDS (3)] [PRECISION (f32)] [BINARY...] (default build/headroom)
#   scripts/attention-seq-length.sh 3 bf16 build/headroom ../main/build/headroom    # fused against unfused
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} precision=${2:-f32}
shift $(($# < 2 ? $# : 2))
binaries=("${@:-build/headroom}")
lengths=(64 128 512 1024 2048)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for t in "${lengths[@]}"; do
    for i in "${!binaries[@]}"; do
      "${binaries[$i]}" bench configs/bench-cpu.yaml --precision "$precision" --seq-len "$t" --batch $((2048 / t)) \
        --set model.max_len=2048 --steps 5 --warmup 2 --inference-runs 1 --json | tail -1 >"$out/$i-$t-$r.json"
    done
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
echo "$precision, $rounds rounds, 2048 tokens a step"
python3 - "$out" "$rounds" "${binaries[@]}" <<'PY'
import json, statistics, sys
out, rounds, binaries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lengths = (64, 128, 512, 1024, 2048)
print("| binary | T x batch | median step ms | GFLOP/s | GFLOP/s / T=64 | peak device MB | peak / T=64 |")
print("|---|---|---:|---:|---:|---:|---:|")
for i, b in enumerate(binaries):
    runs = {t: [json.load(open(f"{out}/{i}-{t}-{r}.json")) for r in range(1, rounds + 1)] for t in lengths}
    med = {t: (statistics.median(j["train_step_ms"] for j in runs[t]), statistics.median(j["train_gflops"] for j in runs[t]),
               max(j["peak_device_mb"] for j in runs[t])) for t in lengths}
    for t in lengths:
        ms, gf, mb = med[t]
        print(f"| {b} | {t} x {2048 // t} | {ms:.1f} | {gf:.1f} | {gf / med[64][1]:.2f} | {mb:.0f} | {mb / med[64][2]:.2f} |")
PY
