#!/usr/bin/env bash
# headroom against PyTorch 2.x and onnxruntime on bge-small-en-v1.5's shape (configs/bge-small-shape.yaml: 12 post-LN
# layers, hidden 384, 12 heads of 32, FFN 1536, 30522-token vocabulary, 2 labels on the [CLS] pooler, random weights)
# on the CPU: a training step at batch 32 x 128 in f32 and bf16 (`headroom bench` against
# scripts/torch_bert_speed.py: transformers' BertForSequenceClassification, SDPA, torch.autocast for bf16), and f32
# batch-1 inference latency at 128 and 32 tokens (also in onnxruntime on the model exported with torch.onnx.export,
# as exported and with ORT's BERT fusions). Each round runs every measurement once, the frameworks alternating, so a
# shared machine's noise hits all alike; the table gives the medians over rounds. Run it on an idle machine.
# Usage: scripts/bert-small-speed-compare.sh [ROUNDS (5)] [OUT (a new temporary folder)]
#   OUT gets raw.jsonl (every measurement, with its round) and table.md.
#   environment: THREADS (all three frameworks' threads, default nproc), STEPS and WARMUP (training steps timed and
#   untimed a round, default 5 and 2), BATCH, SEQ_LEN, LATENCY_SEQ ("128 32"), LAYERS (12), HIDDEN (384), HEADS (12),
#   FFN (1536; HIDDEN=768 FFN=3072 is bert-base's shape), PYTHON (default the venv
#   of scripts/install-python-refs.sh); GOMP_SPINCOUNT (default 30000, about 0.3 ms: how long headroom's and PyTorch's
#   libgomp threads spin before they sleep; ORT's pool spins briefly too) or OMP_WAIT_POLICY=passive (no thread
#   spins in any of the three: on a shared machine, where spinning threads slow everything down many times).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} out=${2:-$(mktemp -d /tmp/bert-small-speed.XXXXXX)}
py=${PYTHON:-$HOME/.cache/headroom/pyref/bin/python}
threads=${THREADS:-$(nproc)} steps=${STEPS:-5} warmup=${WARMUP:-2}
B=${BATCH:-32} T=${SEQ_LEN:-128} lat_seqs=${LATENCY_SEQ:-128 32} layers=${LAYERS:-12}
hidden=${HIDDEN:-384} heads=${HEADS:-12} ffn=${FFN:-1536}
config=configs/bge-small-shape.yaml
if ! "$py" -c 'import torch, transformers, onnx, onnxruntime' 2>/dev/null; then
  echo "$0: no torch, transformers, onnx and onnxruntime in $py: run scripts/install-python-refs.sh" >&2
  exit 2
fi
[ -x build/headroom ] || { echo "$0: no build/headroom: build it first (ninja -C build headroom)" >&2; exit 2; }
# one wait policy for all: headroom and PyTorch read these through libgomp, torch_bert_speed.py gives ORT's pool
# OMP_WAIT_POLICY (headroom makes an unset one passive; a GOMP_SPINCOUNT overrides that)
export OMP_NUM_THREADS=$threads PYTHONWARNINGS=ignore
[ "${OMP_WAIT_POLICY:-}" = passive ] || export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-30000}
wait_policy="OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}, GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-unset}"
mkdir -p "$out"
raw=$out/raw.jsonl
: >"$raw"
hr=(build/headroom bench "$config" --set "model.layers.0.repeat=$layers" --set "model.d_model=$hidden"
    --set "model.ffn_dim=$ffn" --set "model.layers.0.attention.heads=$heads"
    --set "model.layers.0.attention.head_dim=$((hidden / heads))" --vocab 30522 --classes 2 --json)
pyspeed=("$py" scripts/torch_bert_speed.py --threads "$threads" --layers "$layers" --hidden "$hidden" --heads "$heads"
         --ffn "$ffn" --onnx-dir "$out/onnx")
tag() { sed "s/^{/{\"round\":$1,/" >>"$raw"; }
ms() { python3 -c "import json, sys; print(round(json.loads(sys.stdin.readlines()[-1])[sys.argv[1]], 1))" "$1"; }
hr_train() { "${hr[@]}" --precision "$p" --batch "$B" --seq-len "$T" --steps "$steps" --warmup "$warmup" \
  --inference-runs 1 | tail -1; }
py_train() { "${pyspeed[@]}" --what train --precision "$p" --batch "$B" --seq-len "$T" --steps "$steps" \
  --warmup "$warmup"; }
hr_latency() {
  local L h
  for L in $lat_seqs; do  # a batch-1 bench: its one training step is short, and its latency runs are at L tokens
    h=$("${hr[@]}" --precision f32 --batch 1 --seq-len "$L" --steps 1 --warmup 0 --inference-runs 1 | tail -1)
    echo "$h" | sed 's/^{/{"what":"latency_b1",/' | tag "$r"
    echo "round $r: batch-1 latency at $L tokens, headroom $(echo "$h" | ms latency_b1_p50_ms) ms"
  done
}
py_latency() {
  local l
  l=$("${pyspeed[@]}" --what latency --latency-seq "$(echo "$lat_seqs" | tr ' ' ,)")
  echo "$l" | tag "$r"
  echo "$l" | python3 -c "
import json, sys
for j in map(json.loads, sys.stdin):
    if 'ms' in j:
        print(f\"round $r: batch-1 latency at {j['seq_len']} tokens, {j['framework']} {j['ms']:.1f} ms\")"
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "$(lscpu | sed -n 's/^Model name: *//p' | head -1); $threads threads, $wait_policy; load $load_before; $out"
for r in $(seq "$rounds"); do  # headroom first in odd rounds, the Python references first in even ones
  for p in f32 bf16; do
    if (( r % 2 )); then h=$(hr_train); t=$(py_train); else t=$(py_train); h=$(hr_train); fi
    echo "$h" | sed 's/^{/{"what":"train_step",/' | tag "$r"
    echo "$t" | tag "$r"
    echo "round $r: $p training step, headroom $(echo "$h" | ms train_step_ms) ms, pytorch $(echo "$t" | ms ms) ms"
  done
  if (( r % 2 )); then hr_latency; py_latency; else py_latency; hr_latency; fi
done
rm -r "$out/onnx"  # the exported models, made in round 1 for all rounds: 270 MB at bge-small's shape
python3 - "$raw" "$B" "$T" "$threads" "$wait_policy" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
  "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" "$layers layers x $hidden, $heads heads, FFN $ffn" \
  <<'EOF' | tee "$out/table.md"
import json, statistics, sys
raw, B, T, threads, wait, cpu, load0, load1, shape = sys.argv[1:]
B, T = int(B), int(T)
rows = [json.loads(l) for l in open(raw) if l.strip()]
rounds = len({j["round"] for j in rows})
hr = [j for j in rows if "config" in j]
py = [j for j in rows if "framework" in j]
checks = [j for j in rows if "check" in j]
def med(xs):
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")
version = {j["framework"]: j["version"] for j in py}
torch = f"PyTorch {version['pytorch'].split('+')[0]}"
ort = f"onnxruntime {version['onnxruntime']}"
print(f"Shape: {shape}.\n")
print(f"Training step, batch {B} x {T} tokens (forward, cross-entropy, backward, clipping, AdamW), median over "
      f"{rounds} rounds:\n")
print(f"| precision | headroom | {torch} (SDPA) | headroom / PyTorch |")
print("|---|---:|---:|---:|")
for p in ("f32", "bf16"):
    h = med(j["train_step_ms"] for j in hr if j["what"] == "train_step" and j["precision"] == p)
    t = med(j["ms"] for j in py if j["what"] == "train_step" and j["precision"] == p)
    print(f"| {p} | {h:.1f} ms ({B * T / h * 1e3:.0f} tok/s) | {t:.1f} ms ({B * T / t * 1e3:.0f} tok/s) "
          f"| {h / t:.2f} |")
print(f"\nBatch-1 inference latency, f32, p50 of 50 runs, median over {rounds} rounds:\n")
print(f"| tokens | headroom | {torch} (SDPA) | {ort} | {ort}, BERT fusions | headroom / PyTorch "
      "| headroom / ORT | headroom / ORT fused |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for L in sorted({j["seq_len"] for j in hr if j["what"] == "latency_b1"}, reverse=True):
    h = med(j["latency_b1_p50_ms"] for j in hr if j["what"] == "latency_b1" and j["seq_len"] == L)
    o = {f: med(j["ms"] for j in py if j["what"] == "latency_b1_p50" and j["framework"] == f and j["seq_len"] == L)
         for f in ("pytorch", "onnxruntime", "onnxruntime-fused")}
    print(f"| {L} | {h:.2f} ms | {o['pytorch']:.2f} ms | {o['onnxruntime']:.2f} ms | {o['onnxruntime-fused']:.2f} ms "
          f"| {h / o['pytorch']:.2f} | {h / o['onnxruntime']:.2f} | {h / o['onnxruntime-fused']:.2f} |")
params = {j["parameters"] for j in hr if j["what"] == "train_step"} | {j["parameters"] for j in py if "parameters" in j}
fusions = next(j["fusions"] for j in py if "fusions" in j)
print(f"\nRatios below 1: headroom is faster. CPU: {cpu}; {threads} threads in all three (OMP_NUM_THREADS, "
      f"torch.set_num_threads, ORT intra_op_num_threads), {wait}; load average {load0} before, {load1} after. "
      f"Parameters: "
      f"{', '.join(str(p) for p in sorted(params))}{'' if len(params) == 1 else ' (THE MODELS DIFFER)'}. "
      f"headroom's gemms: {hr[0]['sgemm_implementation']}, {hr[0]['bf16_gemm_implementation']}; PyTorch's AdamW: "
      f"{py[0].get('adamw')}. ORT's BERT fusions: {', '.join(f'{n} {k}' for k, n in fusions.items())}; "
      f"ONNX logits against PyTorch's: max |diff| {max(j['max_abs_diff'] for j in checks):.1e}.")
EOF
