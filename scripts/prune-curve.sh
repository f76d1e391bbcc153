#!/usr/bin/env bash
# Test accuracy of a fine-tuned classifier against the heads it keeps (Michel et al. 2019, figure 2): heads removed
# by importance (head-mask gradients over the eval split) and, given a run fine-tuned with L0 gates, by the gates'
# open probabilities; no training after the pruning. Then the inference time of the unpruned model against the
# pruned ones at half and a quarter of the heads (headroom bench, batch 32 and batch 1, alternating).
# Usage: scripts/prune-curve.sh OUT RUN [GATED_RUN]
#   OUT/curve.tsv and OUT/curve.png (accuracy against the fraction of heads kept), OUT/kept.md (the heads each method
#   keeps per layer), OUT/speed.md. KEEP (environment): the fractions of heads kept, default "1 .75 .5 .4 .3 .2 .1".
# A pruned model already evaluated (OUT/METHOD-K/test.json) is kept, so an interrupted run goes on where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OUT RUN [GATED_RUN]" >&2; exit 2; }
out=$1 run=$2 gated=${3:-}
hr=${HEADROOM:-build/headroom}
fractions=${KEEP:-1 .75 .5 .4 .3 .2 .1}
mkdir -p "$out"

heads=$("$hr" info "$run/config.yaml" | awk '$2 == "encoder" { n += $3 } END { print n }')  # the layer table's heads

test_json() {  # test_json RUN FILE: the test split's metrics, once
  [ -f "$2" ] || { "$hr" eval --run "$1" --split test --json >"$2.tmp" && mv "$2.tmp" "$2"; }
}
accuracy() { python3 -c 'import json,sys; print("%.2f" % (100 * json.load(open(sys.argv[1]))["test"]["accuracy"]))' "$1"; }

# prune_to METHOD SOURCE K: OUT/METHOD-K, the source run cut to K heads, and its test metrics
prune_to() {
  local dir=$out/$1-$3
  if [ ! -f "$dir/test.json" ]; then
    rm -rf "$dir"
    local by=(--by "$1")
    [ "$1" = importance ] && by+=(--split eval)
    "$hr" prune --run "$2" "${by[@]}" --keep "$3" --out "$dir" >"$dir.log" 2>&1
    test_json "$dir" "$dir/test.json"
  fi
}

methods=("importance|$run")
[ -n "$gated" ] && methods+=("gates|$gated")
printf 'method\theads_kept\tfraction_kept\ttest_accuracy\n' >"$out/curve.tsv"
for m in "${methods[@]}"; do
  method=${m%%|*} source=${m#*|}
  for f in $fractions; do
    k=$(python3 -c "print(max(1, round($f * $heads)))")
    if [ "$k" = "$heads" ]; then
      file=$out/$method-$k.test.json
      test_json "$source" "$file"
    else
      prune_to "$method" "$source" "$k"
      file=$out/$method-$k/test.json
    fi
    printf '%s\t%s\t%s\t%s\n' "$method" "$k" "$(python3 -c "print(round($k / $heads, 4))")" "$(accuracy "$file")" \
      >>"$out/curve.tsv"
  done
done
"$hr" plot "$out/curve.tsv" --x fraction_kept --y test_accuracy --series method \
  --title "test accuracy against the heads kept, no retraining ($heads heads unpruned)" \
  --x-label "fraction of heads kept" --y-label "test accuracy (%)" --out "$out/curve.png"

# the heads each method keeps, layer by layer
python3 - "$out" "${methods[@]%%|*}" >"$out/kept.md" <<'EOF'
import glob, json, os, sys
out, methods = sys.argv[1], sys.argv[2:]
print("| method | heads kept | kept per layer (indices) |")
print("|---|---:|---|")
for m in methods:
    runs = sorted(glob.glob(os.path.join(out, m + "-*", "prune.json")), key=lambda p: -json.load(open(p))["heads_after"])
    for p in runs:
        j = json.load(open(p))
        layers = "; ".join("%d: %s" % (len(l["kept"]), ",".join(map(str, l["kept"]))) for l in j["layers"])
        print("| %s | %d | %s |" % (m, j["heads_after"], layers))
EOF

# inference: the unpruned model against the importance-pruned ones at 1/2 and 1/4 of the heads, alternating
vocab=$(wc -l <"$run/vocab.txt") classes=$(wc -l <"$run/labels.txt")
bench() {
  "$hr" bench "$1" --batch 32 --seq-len "${SEQ_LEN:-32}" --vocab "$vocab" --classes "$classes" --steps 1 --warmup 3 \
    --inference-runs 30 --json | tail -1
}
half=$(( (heads + 1) / 2 )) quarter=$(( (heads + 3) / 4 ))
prune_to importance "$run" "$half"
prune_to importance "$run" "$quarter"
{
  echo "| model | heads | batch 32 ms | batch 1 p50 ms | round |"
  echo "|---|---:|---:|---:|---:|"
  for round in 1 2 3; do
    for m in "$run|$heads" "$out/importance-$half|$half" "$out/importance-$quarter|$quarter"; do
      bench "${m%%|*}/config.yaml" | python3 -c "import json,sys; j=json.load(sys.stdin); print('| %s | %s | %.1f | %.2f | $round |' % ('${m%%|*}', '${m#*|}', j['infer_batch_ms'], j['latency_b1_p50_ms']))"
    done
  done
  echo
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), OMP_NUM_THREADS=${OMP_NUM_THREADS:-all}"
} >"$out/speed.md"
cat "$out/curve.tsv" "$out/kept.md" "$out/speed.md"
