#!/usr/bin/env bash
# Two builds of headroom (or two settings of one) on the CPU reference shape, alternately, so that a shared machine's
# noise hits both alike: per round and the medians of the training step, batch-32 inference, batch-1 latency and the
# ratio to the in-run gemm rate of the precision used.
# Usage: scripts/bench-compare.sh OLD [NEW (build/headroom)] [ROUNDS (5)] [CONFIG (configs/bench-cpu.yaml)]
# OLD and NEW are a binary followed by any bench flags, optionally after environment settings, e.g. the precisions of
# one build, or OpenMP's spinning:
#   scripts/bench-compare.sh "build/headroom --precision f32" "build/headroom --precision bf16" 7
#   scripts/bench-compare.sh build/headroom "GOMP_SPINCOUNT=30000 build/headroom" 7
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=${2:-build/headroom} rounds=${3:-5} config=${4:-configs/bench-cpu.yaml}
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for which in old new; do
    cmd=$old; [ "$which" = new ] && cmd=$new
    read -ra words <<< "$cmd"
    vars=()
    while [[ ${words[0]} == *=* ]]; do vars+=("${words[0]}"); words=("${words[@]:1}"); done
    env "${vars[@]}" "${words[0]}" bench "$config" "${words[@]:1}" --steps 10 --warmup 3 --json | tail -1 > "$out/$which-$r.json"
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
echo "old: $old; new: $new"
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
keys = [("train_step_ms", "training step ms"), ("train_vs_gemm", "of in-run gemm"),
        ("infer_batch_ms", "inference b32 ms"), ("latency_b1_p50_ms", "batch-1 p50 ms")]
runs = {w: [json.load(open(f"{out}/{w}-{r}.json")) for r in range(1, rounds + 1)] for w in ("old", "new")}
for j in runs["old"] + runs["new"]:
    j.setdefault("train_vs_gemm", j.get("train_vs_sgemm"))  # the key's name before bf16
print("| build | round | " + " | ".join(k[1] for k in keys) + " |")
print("|---|---|" + "---:|" * len(keys))
for w in ("old", "new"):
    for i, j in enumerate(runs[w], 1):
        print(f"| {w} | {i} | " + " | ".join(f"{j[k]:.3f}" if k == "train_vs_gemm" else f"{j[k]:.1f}" for k, _ in keys) + " |")
for w in ("old", "new"):
    med = {k: statistics.median(j[k] for j in runs[w]) for k, _ in keys}
    print(f"| {w} | median | " + " | ".join(f"{med[k]:.3f}" if k == "train_vs_gemm" else f"{med[k]:.1f}" for k, _ in keys) + " |")
for key, what in (("train_step_ms", "training step"), ("infer_batch_ms", "inference b32")):
    ratio = statistics.median(runs["new"][i][key] / runs["old"][i][key] for i in range(rounds))
    print(f"median per-round ratio of {what}, new / old: {ratio:.3f}")
gemm = runs["new"][-1]
print(f"gemm kernels (last round): f32 {gemm.get('sgemm_implementation', '?')}, bf16 {gemm.get('bf16_gemm_implementation', '?')}")
PY
