#!/usr/bin/env bash
# Fine-tuning from different starting points, compared over seeds: each ARM is "name|config|extra train args" (e.g.
# from scratch, from a pretraining run, from an imported BERT), trained once per seed, arms alternating so a shared
# machine's noise hits all alike. Runs are kept in OUT (a run that finished is not trained again). Per run: wall time
# and the test split's score (accuracy; exact match / F1 for QA); then mean +- sd per arm and the CPU that ran them.
# Usage: scripts/finetune-compare.sh OUT SEEDS ARM [ARM ...]
#   scripts/finetune-compare.sh ../ft "0 1 2" "scratch|configs/clinc150-from-pretrain.yaml|" \
#     "pretrained|configs/clinc150-from-pretrain.yaml|--set train.init_from=runs/pretrain/checkpoint-best.safetensors"
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 OUT SEEDS ARM [ARM ...]  (ARM: name|config|train args)" >&2; exit 2; }
out=$1 seeds=$2
shift 2
mkdir -p "$out"
for seed in $seeds; do
  for arm in "$@"; do
    IFS='|' read -r name config args <<<"$arm"
    dir="$out/$name-$seed"
    if [ -f "$dir/wall_ms" ]; then continue; fi
    rm -rf "$dir"
    t0=$(date +%s%N)
    # shellcheck disable=SC2086  # args are words
    build/headroom train "$config" --quiet --set train.seed="$seed" $args --out "$dir" >"$out/$name-$seed.log" 2>&1
    echo "$((($(date +%s%N) - t0) / 1000000))" >"$dir/wall_ms"
    echo "$name seed $seed: $(($(cat "$dir/wall_ms") / 1000)) s" >&2
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
python3 - "$out" "$seeds" "$@" <<'PY'
import json, statistics, sys
out, seeds, arms = sys.argv[1], sys.argv[2].split(), [a.split("|")[0] for a in sys.argv[3:]]
def score(d):
    rows = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
    final = ([r["test"] for r in rows if "test" in r] or [r["eval"] for r in rows if "eval" in r])[-1]
    if "accuracy" in final:
        return {"accuracy": 100 * final["accuracy"]}
    return {k: final[k] for k in ("exact_match", "f1") if k in final} or {"masked_accuracy": final["masked_accuracy"]}
sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
print("| start | seeds | wall s | " + " | ".join(score(f"{out}/{arms[0]}-{seeds[0]}")) + " |")
print("|---|---|---:|" + "---:|" * len(score(f"{out}/{arms[0]}-{seeds[0]}")))
for a in arms:
    runs = [f"{out}/{a}-{s}" for s in seeds]
    walls = [float(open(f"{r}/wall_ms").read()) / 1000 for r in runs]
    scores = [score(r) for r in runs]
    cells = [f"{statistics.mean([s[k] for s in scores]):.2f} +- {sd([s[k] for s in scores]):.2f}" for k in scores[0]]
    print(f"| {a} | {len(runs)} | {statistics.mean(walls):.0f} +- {sd(walls):.0f} | " + " | ".join(cells) + " |")
PY
