#!/usr/bin/env bash
# The per-layer head experiments of docs/tutorial.md (sections 7-9), each a resumable `headroom allocate` or `sweep`:
#   split-recall, split-clinc  the seed's split: the first half of the layers 8 heads, the second half 4 heads of twice
#                              the head_dim (every layer as wide as before: the same parameters), against uniform 8 and
#                              uniform 4 heads (and 1 head on recall); recall at 3 pairs (6 seeds: a run there either
#                              learns or stays at chance), CLINC150's main job (3 seeds)
#   search-recall              L0 gates on 8 heads a layer size each layer (allocate's search, gates fine-tuned from
#                              the wide model trained without them), then 6 seeds against the uniform model of the
#                              same parameters; search-recall-scratch: the same with gates from the first step (3)
#   sweep-recall, sweep-clinc  the head sweep up to 64 heads at a d_model they divide (recall 64: 1 to 64 heads of
#                              64 to 1; CLINC150 128: 4, 32, 64 heads), 2 seeds
# Usage: scripts/head-allocation-experiments.sh [OUT_DIR] [PART...]   (default runs/head-allocation, every part)
# Finished runs are reused, an interrupted one resumes. On a 2-core CPU: a recall run 20-60 s, a CLINC150 run 2-4 min;
# the whole script about 1.5 hours. Parts can run side by side (OMP_NUM_THREADS=1 each): the accuracies do not
# change, the timings in the tables then come from a loaded machine: REMEASURE=1 scripts/... afterwards, on the idle
# machine, reuses every run and times them again back to back.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/head-allocation}
shift || true
parts=${*:-split-recall split-clinc search-recall search-recall-scratch sweep-recall sweep-clinc}
hr=${HEADROOM:-build/headroom}
a=model.layers.0.attention
remeasure=""; [ "${REMEASURE:-0}" = 1 ] && remeasure=--remeasure
recall=(--set data.recall.pairs=3 --set data.recall.queries=3)

for part in $parts; do
  case $part in
    split-recall)  # configs/recall.yaml: d_model 64, 2 layers -> 8 heads of 8, then 4 heads of 16
      $hr allocate configs/recall.yaml "${recall[@]}" --set $a.heads=8 --set $a.head_dim=8 \
        --allocation 8,4 --match layer --baselines 4,1 --seeds 6 --out "$out/split-recall" $remeasure ;;
    split-clinc)   # configs/clinc150.yaml: d_model 128, 2 layers -> 8 heads of 16, then 4 heads of 32
      $hr allocate configs/clinc150.yaml --set $a.heads=8 --set $a.head_dim=16 \
        --allocation 8,4 --match layer --baselines 4 --seeds 3 --out "$out/split-clinc" $remeasure ;;
    search-recall|search-recall-scratch)
      from=dense seeds=6; [ $part = search-recall-scratch ] && from=scratch seeds=3
      $hr allocate configs/recall.yaml "${recall[@]}" --wide-heads 8 --l0-lambda 0.002 --set train.gate_lr=0.05 \
        --search-from $from --seeds $seeds --out "$out/$part" $remeasure ;;
    sweep-recall)
      $hr sweep configs/recall.yaml "${recall[@]}" --heads 1,2,4,8,16,32,64 --seeds 2 --out "$out/sweep-recall" \
        $remeasure ;;
    sweep-clinc)
      $hr sweep configs/clinc150.yaml --heads 4,32,64 --seeds 2 --out "$out/sweep-clinc" $remeasure ;;
    *) echo "unknown part '$part' (split-recall split-clinc search-recall search-recall-scratch sweep-recall" \
         "sweep-clinc)" >&2; exit 2 ;;
  esac
done
