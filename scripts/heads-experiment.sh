#!/usr/bin/env bash
# The head experiments of docs/heads.md on CLINC150 (configs/clinc150-heads12.yaml: 4 layers x 12 heads of 16):
#   1. the ungated model (seed 0), and the same trained 3 more epochs without gates (the control for step 2)
#   2. L0 gates fine-tuned from its best checkpoint for 3 epochs, then pruned; test accuracy of all three
#   3. inference speed of the ungated and the pruned model (headroom bench, batch 32 and batch 1, same process order)
#   4. talking heads vs plain attention, seeds 0 and 1: test accuracy, parameters, training step time
# Usage: scripts/heads-experiment.sh [OUT_DIR]   (default runs/heads-experiment; finished runs are kept and reused)
# Each training run takes 3-6 minutes on a 2-core machine; the whole script about 40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/heads-experiment}
hr=build/headroom
cfg=configs/clinc150-heads12.yaml
gates=(--set model.layers.0.attention.gates.type=l0 --set model.layers.0.attention.gates.lambda=0.02)
mkdir -p "$out"

train() {  # train NAME ARGS...: skipped when NAME already has its last checkpoint
  local name=$1; shift
  [ -f "$out/$name/checkpoint-last.safetensors" ] || $hr train "$cfg" --quiet --out "$out/$name" "$@"
}
test_accuracy() { $hr eval --run "$out/$1" --split test --json | python3 -c 'import json,sys; print("%.2f" % (100 * json.load(sys.stdin)["test"]["accuracy"]))'; }

train plain-s0
train plain-s0-more --set train.init_from="$out/plain-s0/checkpoint-best.safetensors" --set train.epochs=3
train l0 --set train.init_from="$out/plain-s0/checkpoint-best.safetensors" --set train.epochs=3 \
  --set train.gate_lr=0.05 "${gates[@]}"
[ -f "$out/l0-pruned/checkpoint-best.safetensors" ] || $hr prune --run "$out/l0" --out "$out/l0-pruned"
train plain-s1 --set train.seed=1
train talking-s0 --set model.layers.0.attention.talking_heads=true
train talking-s1 --set model.layers.0.attention.talking_heads=true --set train.seed=1

bench() { $hr bench "$1" --batch "$2" --vocab 30522 --classes 150 --steps 20 --warmup 3 --json; }
{
  echo "## L0 gates and pruning (test accuracy, in-scope, %)"
  echo "| model | heads | test accuracy |"
  echo "|---|---:|---:|"
  echo "| ungated, 8 epochs | 48 | $(test_accuracy plain-s0) |"
  echo "| ungated, 8 + 3 epochs | 48 | $(test_accuracy plain-s0-more) |"
  echo "| L0 gates, 8 + 3 epochs | $(python3 -c "import json; print(json.load(open('$out/l0-pruned/prune.json'))['heads_after'])") open | $(test_accuracy l0) |"
  echo "| pruned | $(python3 -c "import json; p=json.load(open('$out/l0-pruned/prune.json')); print(' + '.join(str(len(l['kept'])) for l in p['layers']))") | $(test_accuracy l0-pruned) |"
  echo
  echo "## Inference, ungated vs pruned (headroom bench, forward passes in eval mode, median ms)"
  echo "| model | batch 32 ms | batch 1 p50 ms | parameters |"
  echo "|---|---:|---:|---:|"
  for round in 1 2; do
    for m in "$cfg" "$out/l0-pruned/config.yaml"; do
      bench "$m" 32 | python3 -c "import json,sys; j=json.load(sys.stdin); print('| %s (round $round) | %.1f | %.2f | %d |' % ('$m', j['infer_batch_ms'], j['latency_b1_p50_ms'], j['parameters']))"
    done
  done
  echo
  echo "## Talking heads vs plain attention"
  echo "| model | seed | test accuracy | parameters | training step ms (bench, batch 32) |"
  echo "|---|---:|---:|---:|---:|"
  for v in plain talking; do
    extra=(); [ $v = talking ] && extra=(--set model.layers.0.attention.talking_heads=true)
    ms=$($hr bench "$cfg" "${extra[@]}" --batch 32 --vocab 30522 --classes 150 --steps 20 --warmup 3 --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.1f %d" % (j["train_step_ms"], j["parameters"]))')
    for s in 0 1; do echo "| $v | $s | $(test_accuracy $v-s$s) | ${ms#* } | ${ms% *} |"; done
  done
} | tee "$out/results.md"
