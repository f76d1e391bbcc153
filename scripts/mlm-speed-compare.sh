#!/usr/bin/env bash
# headroom's pretraining step against PyTorch 2.x's on the same model (scripts/torch_mlm_step.py: transformers'
# BertForMaskedLM, SDPA attention, the decoder on one position in 7 as headroom decodes), in f32 and in bf16
# (torch.autocast), the four alternating in each round so a shared machine's noise hits all alike. Prints each
# round's step times, then the medians with tokens/s and the ratios, and the CPU.
# Usage: scripts/mlm-speed-compare.sh [ROUNDS (5)] [CONFIG (configs/pretrain-wiki.yaml)] [BATCH (64)] [SEQ (128)]
# Needs the Python references (scripts/install-python-refs.sh; PYTHON defaults to their venv).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} config=${2:-configs/pretrain-wiki.yaml} batch=${3:-64} seq=${4:-128}
python=${PYTHON:-$HOME/.cache/headroom/pyref/bin/python}
[ -x "$python" ] || { echo "no Python references at $python: run scripts/install-python-refs.sh" >&2; exit 2; }
shape=$(build/headroom info "$config" | python3 -c '
import re, sys
text = sys.stdin.read()
rows = [l.split() for l in text.splitlines() if re.match(r"^\d+\s+encoder\s", l)]
heads, head_dim, ffn = {r[2] for r in rows}, {r[3] for r in rows}, {r[4] for r in rows}
assert len(heads) == len(head_dim) == len(ffn) == 1, "a uniform encoder is needed for the PyTorch model"
h, dh = int(heads.pop()), int(head_dim.pop())
print(f"--layers {len(rows)} --hidden {h * dh} --heads {h} --ffn {ffn.pop()}")')
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for p in f32 bf16; do
    build/headroom bench "$config" --precision "$p" --batch "$batch" --seq-len "$seq" --vocab 30522 --steps 5 --warmup 2 \
      --inference-runs 1 --json | tail -1 >"$out/headroom-$p-$r.json"
    # shellcheck disable=SC2086  # shape is words
    "$python" scripts/torch_mlm_step.py --precision "$p" --batch "$batch" --seq-len "$seq" $shape --steps 5 \
      --warmup 2 >"$out/torch-$p-$r.json"
    echo "round $r $p: headroom $(python3 -c "import json; print(round(json.load(open('$out/headroom-$p-$r.json'))['train_step_ms'], 1))") ms," \
      "pytorch $(python3 -c "import json; print(round(json.load(open('$out/torch-$p-$r.json'))['train_step_ms'], 1))") ms"
  done
done
python3 - "$out" "$rounds" "$batch" "$seq" <<'PY'
import json, statistics, sys
out, rounds, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ms = {(w, p): statistics.median(json.load(open(f"{out}/{w}-{p}-{r}.json"))["train_step_ms"]
                                for r in range(1, rounds + 1)) for w in ("headroom", "torch") for p in ("f32", "bf16")}
version = json.load(open(f"{out}/torch-f32-1.json"))["framework"]
print(f"| | headroom | {version} | headroom / pytorch |")
print("|---|---:|---:|---:|")
for p in ("f32", "bf16"):
    h, t = ms[("headroom", p)], ms[("torch", p)]
    print(f"| {p} step, median of {rounds} | {h:.1f} ms ({batch * seq / h * 1e3:.0f} tok/s) | "
          f"{t:.1f} ms ({batch * seq / t * 1e3:.0f} tok/s) | {h / t:.2f} |")
PY
lscpu | sed -n 's/^Model name: *//p' | head -1
