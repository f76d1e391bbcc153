#!/usr/bin/env bash
# Two builds of headroom on the CPU reference shape, alternately, so that a shared machine's noise hits both alike:
# per round and the medians of the training step, batch-32 inference, batch-1 latency and the in-run sgemm ratio.
# Usage: scripts/bench-compare.sh OLD_BINARY [NEW_BINARY (build/headroom)] [ROUNDS (5)] [CONFIG (configs/bench-cpu.yaml)]
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=${2:-build/headroom} rounds=${3:-5} config=${4:-configs/bench-cpu.yaml}
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for which in old new; do
    bin=$old; [ "$which" = new ] && bin=$new
    "$bin" bench "$config" --steps 10 --warmup 3 --json | tail -1 > "$out/$which-$r.json"
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
keys = [("train_step_ms", "training step ms"), ("train_vs_sgemm", "of in-run sgemm"),
        ("infer_batch_ms", "inference b32 ms"), ("latency_b1_p50_ms", "batch-1 p50 ms")]
runs = {w: [json.load(open(f"{out}/{w}-{r}.json")) for r in range(1, rounds + 1)] for w in ("old", "new")}
print("| build | round | " + " | ".join(k[1] for k in keys) + " |")
print("|---|---|" + "---:|" * len(keys))
for w in ("old", "new"):
    for i, j in enumerate(runs[w], 1):
        print(f"| {w} | {i} | " + " | ".join(f"{j[k]:.3f}" if k == "train_vs_sgemm" else f"{j[k]:.1f}" for k, _ in keys) + " |")
for w in ("old", "new"):
    med = {k: statistics.median(j[k] for j in runs[w]) for k, _ in keys}
    print(f"| {w} | median | " + " | ".join(f"{med[k]:.3f}" if k == "train_vs_sgemm" else f"{med[k]:.1f}" for k, _ in keys) + " |")
ratio = statistics.median(runs["new"][i]["train_step_ms"] / runs["old"][i]["train_step_ms"] for i in range(rounds))
print(f"median per-round ratio of training step, new / old: {ratio:.3f}")
PY
