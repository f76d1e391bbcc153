#!/usr/bin/env bash
# Where a training step's oneDNN time goes, primitive by primitive: runs `headroom bench` twice with ONEDNN_VERBOSE=1,
# with 4 and 12 timed training steps, and divides the difference of the summed execution times by 8, so that the
# gemm-rate probe, warm-up, inference and latency runs (the same in both) drop out. One row per primitive, implementation,
# layouts and shape: ms a step, calls a step, and GFLOP/s for matmuls.
# Usage: [HEADROOM=binary] scripts/onednn-breakdown.sh [CONFIG] [extra bench args, e.g. --precision bf16]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/bench-cpu.yaml}; shift || true
dir=$(mktemp -d)
for steps in 4 12; do
  ONEDNN_VERBOSE=1 "${HEADROOM:-build/headroom}" bench "$config" --steps $steps --warmup 2 --inference-runs 2 "$@" > "$dir/$steps.txt"
done
python3 - "$dir/4.txt" "$dir/12.txt" <<'EOF'
import collections, re, sys

def load(path):
    agg = collections.defaultdict(lambda: [0, 0.0])
    for line in open(path):
        f = line.rstrip("\n").split(",")
        if len(f) < 11 or f[0] != "onednn_verbose" or f[1] != "exec": continue
        layouts = " ".join(m.split("::")[0] + ":" + m.split(":")[-2] for m in f[6].split() if "undef" not in m)
        attr = f[7].replace("attr-scratchpad:user", "").strip()
        key = (f[3], f[4], layouts, attr, f[9])
        agg[key][0] += 1
        agg[key][1] += float(f[10])
    return agg

def gflop(prim, desc):
    if prim != "matmul": return 0.0
    a, b = desc.split(":")[:2]
    a, b = [int(x) for x in a.split("x")], [int(x) for x in b.split("x")]
    batch = 1
    for d in a[:-2]: batch *= d
    return 2.0 * batch * a[-2] * a[-1] * b[-1] / 1e9

few, many = load(sys.argv[1]), load(sys.argv[2])
rows = []
for key in set(few) | set(many):
    calls = (many[key][0] - few[key][0]) / 8.0
    ms = (many[key][1] - few[key][1]) / 8.0
    if calls > 0: rows.append((ms, calls, key))
rows.sort(reverse=True)
total = sum(r[0] for r in rows)
print("oneDNN execution time in one training step: %.1f ms" % total)
print("| ms / step | share | calls | ms / call | GFLOP/s | primitive | implementation | shape | layouts | post-ops |")
print("|---:|---:|---:|---:|---:|---|---|---|---|---|")
for ms, calls, (prim, impl, layouts, attr, desc) in rows:
    if ms < 0.05: continue
    per = ms / calls
    rate = gflop(prim, desc) / (per / 1e3) if per > 0 and prim == "matmul" else 0.0
    print("| %.2f | %.1f%% | %g | %.3f | %s | %s | %s | %s | %s | %s |" % (ms, 100 * ms / total, calls, per,
          "%.0f" % rate if rate else "", prim, impl, desc, layouts, attr))
EOF
rm -rf "$dir"
