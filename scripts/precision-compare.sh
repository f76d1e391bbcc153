#!/usr/bin/env bash
# One config trained in f32 and in bf16 (train.precision), alternating so that a shared machine's noise hits both
# alike, over several seeds. Per run: wall time and the final score (the test split's row when the run has one, else
# the last evaluation: accuracy, or exact match for QA); then mean +- sd per precision and the CPU that ran it.
# Usage: scripts/precision-compare.sh CONFIG [SEEDS ("0 1 2")] [extra train args, e.g. --set train.epochs=2]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:?usage: scripts/precision-compare.sh CONFIG [SEEDS] [train args]}
seeds=${2:-"0 1 2"}
shift 2 || shift || true
out=$(mktemp -d)
for seed in $seeds; do
  for p in f32 bf16; do
    t0=$(date +%s%N)
    build/headroom train "$config" --quiet --set train.seed="$seed" --set train.precision=$p "$@" \
      --out "$out/$p-$seed" >/dev/null
    echo "$((($(date +%s%N) - t0) / 1000000))" > "$out/$p-$seed/wall_ms"
    echo "seed $seed, $p: $(cat "$out/$p-$seed/wall_ms") ms" >&2
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
python3 - "$out" "$config" $seeds <<'PY'
import json, statistics, sys
out, config, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
def score(d):
    rows = [json.loads(l) for l in open(f"{d}/metrics.jsonl")]
    final = ([r["test"] for r in rows if "test" in r] or [r["eval"] for r in rows if "eval" in r])[-1]
    return ("accuracy", 100 * final["accuracy"]) if "accuracy" in final else ("exact match", final["exact_match"])
print(f"{config}")
print("| precision | seed | wall s | score |")
print("|---|---|---:|---:|")
res = {}
for p in ("f32", "bf16"):
    for s in seeds:
        d = f"{out}/{p}-{s}"
        wall = float(open(f"{d}/wall_ms").read()) / 1000
        name, value = score(d)
        res.setdefault(p, []).append((wall, value))
        print(f"| {p} | {s} | {wall:.1f} | {value:.2f}% {name} |")
sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
for p, rows in res.items():
    w, a = [r[0] for r in rows], [r[1] for r in rows]
    print(f"| {p} | mean +- sd | {statistics.mean(w):.1f} +- {sd(w):.1f} | {statistics.mean(a):.2f} +- {sd(a):.2f}% |")
PY
