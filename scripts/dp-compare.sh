#!/usr/bin/env bash
# The main job (configs/clinc150.yaml) on this machine's 2 cores two ways, alternating so that a shared machine's noise
# hits both alike: 1 process x 2 threads (plain `headroom train`) and 2 MPI ranks x 1 thread (mpirun, each rank bound
# to a core). Per run: wall time and the test accuracy of the best-validation checkpoint; then mean +- sd per way.
# Usage: scripts/dp-compare.sh [SEEDS (0 1)] [extra train args, e.g. --set train.epochs=2]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-"0 1"}
shift || true
out=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # mpirun as root (containers)
for seed in $seeds; do
  for way in 1x2 2x1; do
    t0=$(date +%s%N)
    if [ $way = 1x2 ]; then
      OMP_NUM_THREADS=2 build/headroom train configs/clinc150.yaml --quiet --set train.seed="$seed" "$@" \
        --out "$out/$way-$seed" >/dev/null
    else
      mpirun -np 2 --bind-to core -x OMP_NUM_THREADS=1 build/headroom train configs/clinc150.yaml --quiet \
        --set train.seed="$seed" "$@" --out "$out/$way-$seed" >/dev/null
    fi
    echo "$((($(date +%s%N) - t0) / 1000000))" > "$out/$way-$seed/wall_ms"
    echo "seed $seed, $way: $(cat "$out/$way-$seed/wall_ms") ms" >&2
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
python3 - "$out" $seeds <<'PY'
import json, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
names = {"1x2": "1 process x 2 threads", "2x1": "2 ranks x 1 thread (mpirun)"}
print("| way | seed | wall s | test accuracy |")
print("|---|---|---:|---:|")
res = {}
for way in names:
    for s in seeds:
        d = f"{out}/{way}-{s}"
        wall = float(open(f"{d}/wall_ms").read()) / 1000
        test = [json.loads(l) for l in open(f"{d}/metrics.jsonl") if '"test"' in l][-1]["test"]["accuracy"]
        res.setdefault(way, []).append((wall, test))
        print(f"| {names[way]} | {s} | {wall:.1f} | {100 * test:.2f}% |")
sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
for way, rows in res.items():
    w, a = [r[0] for r in rows], [100 * r[1] for r in rows]
    print(f"| {names[way]} | mean +- sd | {statistics.mean(w):.1f} +- {sd(w):.1f} | {statistics.mean(a):.2f} +- {sd(a):.2f}% |")
PY
