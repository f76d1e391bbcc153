#!/usr/bin/env bash
# The recall testbed's difficulty curve (docs/tutorial.md): test EM of configs/recall.yaml and configs/recall-2hop.yaml
# as one knob varies, over seeds (train.seed and data.recall.seed together), and the attention variants (talking heads,
# residual logits, interleaved head maps) on the same settings. One run at a time; each is 10-90 s on a 2-core CPU.
#   scripts/recall-curve.sh [OUT_DIR] [SEEDS...]        default: runs/recall-curve, seeds 0 1
#   RECALL_GROUPS="knobs" scripts/recall-curve.sh ...  only some groups (curve knobs variants; default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/recall-curve}
shift || true
seeds=${*:-0 1}
hr=${HEADROOM:-build/headroom}
mkdir -p "$out"

# The first eval step at which EM reached 90, or "-" (the end of the plateau: learning here is a plateau, then a jump).
escape_step() {
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "eval" in r and r["eval"]["exact_match"] >= 90: print(r["step"]); break
else: print("-")' "$1/metrics.jsonl"
}

# one setting: NAME CONFIG OVERRIDES...; prints "NAME  EM per seed  mean +- sd  (seconds)  EM >= 90 from step, per seed"
run() {
  local name=$1 config=$2
  shift 2
  local ems=() escapes=() start=$SECONDS
  for s in $seeds; do
    local dir="$out/$name-seed$s"
    rm -rf "$dir"
    local sets=()
    for o in "$@" "train.seed=$s" "data.recall.seed=$s"; do sets+=(--set "$o"); done
    "$hr" train "$config" --out "$dir" "${sets[@]}" > "$dir.log" 2>&1
    ems+=("$(sed -n 's/^test (best checkpoint): exact_match \([0-9.]*\).*/\1/p' "$dir.log")")
    escapes+=("$(escape_step "$dir")")
  done
  printf '%-22s %s\n' "$name" "$(printf '%s\n' "${ems[@]}" | awk -v t=$((SECONDS - start)) '
    { x[NR] = $1; s += $1 } END { m = s / NR; for (i = 1; i <= NR; i++) v += (x[i] - m) ^ 2
      sd = NR > 1 ? sqrt(v / (NR - 1)) : 0; line = ""; for (i = 1; i <= NR; i++) line = line sprintf("%6.2f ", x[i])
      printf "EM %s  mean %6.2f +- %5.2f  (%d s)", line, m, sd, t }')  EM>=90 from step ${escapes[*]}" |
    tee -a "$out/curve.txt"
}

: > "$out/curve.txt"
groups=${RECALL_GROUPS:-curve knobs variants}
if [[ " $groups " == *" curve "* ]]; then
  for p in 2 3 4; do run "1hop-pairs$p" configs/recall.yaml "data.recall.pairs=$p" "data.recall.queries=$p"; done
  run "1hop-pairs2-heads1" configs/recall.yaml "model.layers.0.attention.heads=1" "model.layers.0.attention.head_dim=64"
  for p in 2 3; do run "2hop-pairs$p" configs/recall-2hop.yaml "data.recall.pairs=$p" "data.recall.queries=$p"; done
fi
# the other knobs at 3 pairs: distractor words between pairs (a longer context), queries per context (fewer training
# questions per context), a larger or smaller key/value vocabulary
if [[ " $groups " == *" knobs "* ]]; then
  p3=(data.recall.pairs=3 data.recall.queries=3)
  for d in 1 2 4; do run "1hop-pairs3-distractors$d" configs/recall.yaml "${p3[@]}" "data.recall.distractors=$d"; done
  run "1hop-pairs3-queries1" configs/recall.yaml data.recall.pairs=3 data.recall.queries=1
  for v in 8 32; do run "1hop-pairs3-vocab$v" configs/recall.yaml "${p3[@]}" "data.recall.keys=$v" "data.recall.values=$v"; done
fi
# talking heads (Shazeer et al. 2020), residual attention logits (He et al. 2021) without and with the interleaved head
# map, against plain attention: 1 hop at 3 pairs (learnable: how fast) and 2 hops at 2 pairs
if [[ " $groups " == *" variants "* ]]; then
  a=model.layers.0.attention
  for setting in "1hop-pairs3 configs/recall.yaml data.recall.pairs=3 data.recall.queries=3" \
                 "2hop-pairs2 configs/recall-2hop.yaml data.recall.pairs=2 data.recall.queries=2"; do
    read -r name config k1 k2 <<< "$setting"
    run "$name-plain" "$config" "$k1" "$k2"
    run "$name-talking" "$config" "$k1" "$k2" "$a.talking_heads=true"
    run "$name-residual" "$config" "$k1" "$k2" "$a.cross_layer=residual_logits"
    run "$name-interleave" "$config" "$k1" "$k2" "$a.cross_layer=residual_logits" "$a.permute=interleave"
  done
fi
