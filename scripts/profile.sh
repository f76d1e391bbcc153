#!/usr/bin/env bash
# Where a CPU training step's time goes: perf samples `headroom bench` on the reference config (after the build) and
# groups the symbols into the kinds of work of docs/performance.md. Needs perf (Debian: linux-perf).
# Usage: [HEADROOM=binary] scripts/profile.sh [CONFIG] [extra bench args, e.g. --precision bf16]
#   (default configs/bench-cpu.yaml, 30 steps)
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/bench-cpu.yaml}; shift || true
data=$(mktemp -d)/perf.data
perf record -q -o "$data" -F 499 "${HEADROOM:-build/headroom}" bench "$config" --steps 30 --warmup 3 "$@"
perf report -i "$data" --no-children --sort dso,sym --stdio 2>/dev/null | python3 -c '
import re, sys
groups = [("gemm and large elementwise (oneDNN JIT code)", r"\[JIT\]|libdnnl"),
          ("rounding to bf16 (matmul operands)", r"to_bf16"), ("dropout", r"dropout"), ("AdamW", r"adamw"), ("layer norm", r"layer_norm"),
          ("softmax (scale, mask, backward)", r"softmax"), ("elementwise binary/unary", r"binary|unary|for_each_run<3"),
          ("copies (permute, slice, concat)", r"copy_strided|memmove|memcpy"), ("reductions (bias grads, norms)", r"sum_columns|sum_squares|sum_to"),
          ("kernel (page faults, scheduling)", r"\[kernel"), ("other", r".")]
share = {g: 0.0 for g, _ in groups}
for line in sys.stdin:
    m = re.match(r"\s*([0-9.]+)%\s+(.*)", line)
    if not m: continue
    for g, pat in groups:
        if re.search(pat, m.group(2)):
            share[g] += float(m.group(1)); break
print("| work | share of CPU samples |\n|---|---:|")
for g, _ in groups: print("| %s | %.1f%% |" % (g, share[g]))
'
