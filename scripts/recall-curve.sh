#!/usr/bin/env bash
# The recall testbed's difficulty curve (docs/tutorial.md): test EM of configs/recall.yaml and configs/recall-2hop.yaml
# as one knob varies, over seeds (train.seed and data.recall.seed together). One run at a time; each is 10-40 s on a
# 2-core CPU.
#   scripts/recall-curve.sh [OUT_DIR] [SEEDS...]        default: runs/recall-curve, seeds 0 1
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/recall-curve}
shift || true
seeds=${*:-0 1}
hr=${HEADROOM:-build/headroom}
mkdir -p "$out"

# one setting: NAME CONFIG OVERRIDES...; prints "NAME  EM per seed  mean +- sd  seconds"
run() {
  local name=$1 config=$2
  shift 2
  local ems=() start=$SECONDS
  for s in $seeds; do
    local dir="$out/$name-seed$s"
    rm -rf "$dir"
    local sets=()
    for o in "$@" "train.seed=$s" "data.recall.seed=$s"; do sets+=(--set "$o"); done
    "$hr" train "$config" --out "$dir" "${sets[@]}" > "$dir.log" 2>&1
    ems+=("$(sed -n 's/^test (best checkpoint): exact_match \([0-9.]*\).*/\1/p' "$dir.log")")
  done
  printf '%-22s %s\n' "$name" "$(printf '%s\n' "${ems[@]}" | awk -v t=$((SECONDS - start)) '
    { x[NR] = $1; s += $1 } END { m = s / NR; for (i = 1; i <= NR; i++) v += (x[i] - m) ^ 2
      sd = NR > 1 ? sqrt(v / (NR - 1)) : 0; line = ""; for (i = 1; i <= NR; i++) line = line sprintf("%6.2f ", x[i])
      printf "EM %s  mean %6.2f +- %5.2f  (%d s)", line, m, sd, t }')" | tee -a "$out/curve.txt"
}

: > "$out/curve.txt"
for p in 2 3 4; do run "1hop-pairs$p" configs/recall.yaml "data.recall.pairs=$p" "data.recall.queries=$p"; done
run "1hop-pairs2-heads1" configs/recall.yaml "model.layers.0.attention.heads=1" "model.layers.0.attention.head_dim=64"
for p in 2 3; do run "2hop-pairs$p" configs/recall-2hop.yaml "data.recall.pairs=$p" "data.recall.queries=$p"; done
