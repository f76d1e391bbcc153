#!/usr/bin/env bash
# Attention alone on the CPU: headroom's fused kernel and its unfused ops (`headroom bench --attention`) against
# PyTorch's scaled_dot_product_attention (scripts/torch_attention.py --device cpu), at configs/bert-base.yaml's heads
# (12 of 64) and batch 8 x 512 by default, with dropout 0.1 on the weights (where PyTorch's CPU SDPA takes its math
# path: its fused CPU kernel has no dropout) and without (its fused kernel), f32 and bf16, the two frameworks
# alternating in each round. Needs PyPI's torch (scripts/install-python-refs.sh). Run it on an idle machine.
# Usage: scripts/attention-vs-torch.sh [ROUNDS] [OUT]   (default 3 rounds; raw JSON lines and the table go to OUT)
#   environment: BATCH, SEQ_LEN, RUNS (timed calls a measurement, default 5), PYTHON (default the pyref venv's)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} out=${2:-attention-vs-torch}
py=${PYTHON:-$HOME/.cache/headroom/pyref/bin/python}
B=${BATCH:-8} T=${SEQ_LEN:-512} runs=${RUNS:-5}
"$py" -c 'import torch' 2>/dev/null || { echo "$0: no torch in $py (scripts/install-python-refs.sh)" >&2; exit 2; }
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
for r in $(seq "$rounds"); do
  for p in 0.1 0; do
    build/headroom bench configs/bert-base.yaml --set train.device=cpu --set "model.dropout=$p" --batch "$B" \
      --seq-len "$T" --steps "$runs" --attention --json | sed "s/^{/{\"round\":$r,/" >>"$raw"
    "$py" scripts/torch_attention.py --device cpu --batch "$B" --seq-len "$T" --heads 12 --head-dim 64 \
      --dropout "$p" --runs "$runs" 2>/dev/null | sed "s/^{/{\"round\":$r,/" >>"$raw"
  done
done
python3 - "$raw" >"$out/table.md" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = {}
for j in rows:
    if "error" in j:
        continue
    name = ("headroom " + j["path"]) if j["framework"] == "headroom" else j["framework"].split("+")[0] + " sdpa (" + ",".join(j.get("sdpa_backends", [])) + ")"
    groups.setdefault((round(j["dropout"], 2), j["precision"], name), []).append(j)
print("| dropout | precision | implementation | forward ms | forward + backward ms | rounds |")
print("|---:|---|---|---:|---:|---:|")
for (p, prec, name), js in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1] != "f32", kv[0][2])):
    f = statistics.median(j["forward_ms"] for j in js)
    fb = statistics.median(j["forward_backward_ms"] for j in js)
    print(f"| {p} | {prec} | {name} | {f:.1f} | {fb:.1f} | {len(js)} |")
EOF
{
  cat "$out/table.md"
  echo
  echo "batch $B x $T tokens, 12 heads of 64, medians over rounds of the per-round medians of $runs calls"
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), OMP_NUM_THREADS=${OMP_NUM_THREADS:-all}, torch threads: $("$py" -c 'import torch; print(torch.get_num_threads())')"
} | tee "$out/summary.md"
