#!/usr/bin/env bash
# The MLM head's share of a pretraining step (issue #33), with the decoder at the masked positions only (one in 7, as
# pretraining decodes) and at every position (--mlm-dense): configs/pretrain-wiki.yaml's step timed by
# `headroom bench` with the 30522-token vocabulary and with a 2-token one (the decoder and the token table's update
# then cost next to nothing), the three alternating in each round. The head's share is 1 - (2-token step / step): the
# decoder's products, its softmax, and the token table's gradient and optimizer update, which the tied decoder shares.
# Usage: scripts/mlm-head-share.sh [ROUNDS (5)] [PRECISION (f32)] [BATCH (64)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} precision=${2:-f32} batch=${3:-64}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
arms=("sparse|--vocab 30522" "dense|--vocab 30522 --mlm-dense" "no-decoder|--vocab 2")
for r in $(seq "$rounds"); do
  for arm in "${arms[@]}"; do
    # shellcheck disable=SC2086  # the arm's flags are words
    build/headroom bench configs/pretrain-wiki.yaml --precision "$precision" --batch "$batch" --seq-len 128 \
      --steps 5 --warmup 2 --inference-runs 1 ${arm#*|} --json | tail -1 >"$out/${arm%%|*}-$r.json"
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1
echo "$precision, batch $batch x 128, $rounds rounds"
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
ms = {a: [json.load(open(f"{out}/{a}-{r}.json"))["train_step_ms"] for r in range(1, rounds + 1)]
      for a in ("sparse", "dense", "no-decoder")}
print("| decoder | median step ms | head's share (median of rounds) |")
print("|---|---:|---:|")
for a in ("sparse", "dense"):
    share = statistics.median(1 - n / s for n, s in zip(ms["no-decoder"], ms[a]))
    print(f"| {'masked positions (1 in 7)' if a == 'sparse' else 'every position'} | {statistics.median(ms[a]):.1f} | "
          f"{100 * share:.1f}% |")
print(f"| none (2-token vocabulary) | {statistics.median(ms['no-decoder']):.1f} | |")
PY
