#!/usr/bin/env bash
# `headroom bench` on this machine's cores two ways, alternating for ROUNDS rounds: 1 process x 2 threads, and 2 MPI
# ranks x 1 thread (each bound to a core) splitting the same global batch, with the gradient all-reduce's figures.
# Usage: scripts/dp-bench.sh [ROUNDS (3)] [CONFIG (configs/bench-cpu.yaml)] [extra bench args]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} config=${2:-configs/bench-cpu.yaml}
shift 2 || shift $#
out=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # mpirun as root (containers)
for r in $(seq "$rounds"); do
  OMP_NUM_THREADS=2 build/headroom bench "$config" --steps 10 --warmup 3 --json "$@" | tail -1 > "$out/one-$r.json"
  mpirun -np 2 --bind-to core -x OMP_NUM_THREADS=1 build/headroom bench "$config" --steps 10 --warmup 3 --json "$@" |
    tail -1 > "$out/two-$r.json"
done
lscpu | sed -n 's/^Model name: *//p' | head -1
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
one = [json.load(open(f"{out}/one-{r}.json")) for r in range(1, rounds + 1)]
two = [json.load(open(f"{out}/two-{r}.json")) for r in range(1, rounds + 1)]
print("| round | 1 x 2 threads: step ms | 2 ranks x 1: step ms | ratio | all-reduce alone ms (share) | waited after backward ms (share) | gradient MB | ring MB per rank |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for r, (a, b) in enumerate(zip(one, two), 1):
    print(f"| {r} | {a['train_step_ms']:.1f} | {b['train_step_ms']:.1f} | {b['train_step_ms'] / a['train_step_ms']:.2f} | "
          f"{b['allreduce_ms']:.1f} ({100 * b['allreduce_share_of_step']:.1f}%) | "
          f"{b['allreduce_wait_ms']:.1f} ({100 * b['allreduce_wait_share']:.1f}%) | {b['gradient_mb']:.1f} | "
          f"{b['ring_bytes_per_rank_mb']:.1f} |")
med = lambda k, runs: statistics.median(j[k] for j in runs)
ratio = statistics.median(b["train_step_ms"] / a["train_step_ms"] for a, b in zip(one, two))
print(f"| median | {med('train_step_ms', one):.1f} | {med('train_step_ms', two):.1f} | {ratio:.2f} | "
      f"{med('allreduce_ms', two):.1f} ({100 * med('allreduce_share_of_step', two):.1f}%) | "
      f"{med('allreduce_wait_ms', two):.1f} ({100 * med('allreduce_wait_share', two):.1f}%) | | |")
PY
