#!/usr/bin/env bash
# The head questions on pretrained encoders (issue #34, docs/heads-results.md): matched MLM pretraining runs that differ
# only in their heads (1, 4, 8, 16 and 64 heads over the same 256 attention dimensions, so the same parameters; 8
# narrower heads below and 4 wider above; talking heads on 8; second seeds of 8, 64 and 16 for the seed-to-seed
# spread), every pretrained model fine-tuned on CLINC150 over seeds and on bAbI task 1, the same layouts fine-tuned
# from scratch, what the pretrained heads attend to, a pruning curve of a fine-tuned 8-head model, and the step time of
# each layout.
# Usage: scripts/pretrained-heads-experiments.sh OUT [PART ...]
#   PART: pretrain finetune scratch roles prune speed table (default: all, in that order)
# Resumable: an interrupted pretraining run is resumed (`train --resume`), a finished one (OUT/pretrain/NAME/complete)
# skipped, as is a fine-tuning or pruning run that finished; so the work can span sessions. Environment: CORPUS (the
# training shards, default corpus/wiki_en/train-*.txt as scripts/prepare-wiki.sh writes them), STEPS (pretraining
# steps, default 6000: 24.6M tokens), SEEDS (CLINC150 seeds, default "0 1 2"), QA_SEEDS (bAbI seeds, default "0"),
# HEADROOM (default build/headroom), ARMS (the pretraining arms to run, in that order, e.g. "h8 h1": two processes with
# disjoint ARMS share the work), ROLES_EXTRA (more NAME=RUN pairs for the roles part, e.g. a real pretrained model).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [pretrain finetune scratch roles prune speed table]" >&2; exit 2; }
out=$1
shift
read -r -a parts <<<"${*:-pretrain finetune scratch roles prune speed table}"
hr=${HEADROOM:-build/headroom}
steps=${STEPS:-6000} seeds=${SEEDS:-0 1 2} qa_seeds=${QA_SEEDS:-0} corpus=${CORPUS:-corpus/wiki_en/train-*.txt}

# configs/pretrain-wiki.yaml with the budget of these runs: f32 (bf16 steps at 0.6x f32's rate on a CPU without AMX:
# docs/pretraining.md) and batch 32 (twice the steps for the same tokens)
recipe=(--set train.precision=f32 --set train.batch_size=32 --set "train.max_steps=$steps" --set train.warmup=0.1
        --set train.eval_every=500 --set data.mlm.max_eval_rows=1024 --set "data.train_path=$corpus")
uniform() { echo "[{repeat: 4, attention: {heads: $1, head_dim: $2${3:-}}}]"; }
# NAME|model.layers|pretraining seed: the arms differ in these only
arms=(
  "h1|$(uniform 1 256)|0"
  "h4|$(uniform 4 64)|0"
  "h8|$(uniform 8 32)|0"
  "h16|$(uniform 16 16)|0"
  "split|[{repeat: 2, attention: {heads: 8, head_dim: 32}}, {repeat: 2, attention: {heads: 4, head_dim: 64}}]|0"
  "talking|$(uniform 8 32 ', talking_heads: true')|0"
  "h8-seed1|$(uniform 8 32)|1"
  "h64|$(uniform 64 4)|0"
  "h64-seed1|$(uniform 64 4)|1"
  "h16-seed1|$(uniform 16 16)|1"
)
name_of() { echo "${1%%|*}"; }
layers_of() { local rest=${1#*|}; echo "${rest%|*}"; }
seed_of() { echo "${1##*|}"; }
pretrained() { [ -f "$out/pretrain/$1/complete" ]; }
cpu() { lscpu | sed -n 's/^Model name: *//p' | head -1; }

# The arms ARMS names, in its order (all of them without it): pretrain, finetune and scratch work on these
selected=("${arms[@]}")
if [ -n "${ARMS:-}" ]; then
  selected=()
  for name in $ARMS; do
    selected+=("$(printf '%s\n' "${arms[@]}" | grep "^$name|")") || { echo "$0: no arm '$name' in ARMS" >&2; exit 2; }
  done
fi

pretrain() {
  mkdir -p "$out/pretrain"
  for arm in "${selected[@]}"; do
    local name dir
    name=$(name_of "$arm") dir="$out/pretrain/$(name_of "$arm")"
    pretrained "$name" && continue
    if [ -f "$dir/checkpoint-last.safetensors" ]; then
      echo "pretrain $name: resuming $dir" >&2
      "$hr" train --resume "$dir" --quiet >>"$dir.log" 2>&1
    else
      rm -rf "$dir"  # no checkpoint yet: nothing in it to keep
      echo "pretrain $name: $dir" >&2
      "$hr" train configs/pretrain-wiki.yaml --quiet --out "$dir" "${recipe[@]}" \
        --set "model.layers=$(layers_of "$arm")" --set "train.seed=$(seed_of "$arm")" >>"$dir.log" 2>&1
    fi
    touch "$dir/complete"
  done
}

# The two fine-tuning tasks: CLINC150 intents (3 seeds) and bAbI task 1 as extractive QA (SQuAD half 1 -> half 2 is
# hours a run on this machine and near zero for these small models), each TASK|config|directory under OUT
tasks=("clinc150|configs/clinc150-from-pretrain.yaml|finetune" "babi|configs/babi-qa1-from-pretrain.yaml|finetune-babi")

# fine-tune TASK NAME SEED [scratch]: the task from pretraining run NAME, or from scratch with the same layout and
# recipe (OUT/scratch, OUT/scratch-babi), once
finetune_one() {
  local task arm config dir init=()
  task=$(printf '%s\n' "${tasks[@]}" | grep "^$1|")
  arm=$(printf '%s\n' "${arms[@]}" | grep "^$2|")
  config=$(layers_of "$task") dir=${task##*|}
  if [ "${4:-}" = scratch ]; then
    dir=$out/${dir/finetune/scratch}/$2-$3
  else
    dir=$out/$dir/$2-$3 init=(--set "train.init_from=$out/pretrain/$2/checkpoint-best.safetensors")
  fi
  [ -f "$dir/wall_ms" ] && return 0
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  local t0
  t0=$(date +%s%N)
  "$hr" train "$config" --quiet --out "$dir" --set "train.seed=$3" --set "model.layers=$(layers_of "$arm")" \
    "${init[@]}" >"$dir.log" 2>&1
  echo "$((($(date +%s%N) - t0) / 1000000))" >"$dir/wall_ms"
}

# every pretrained arm (seed 0 of pretraining for the scratch baselines) on both tasks: CLINC150 over SEEDS, bAbI over
# QA_SEEDS
finetune() {
  local how=${1:-}
  for task in clinc150 babi; do
    local task_seeds=$seeds
    if [ $task = babi ]; then task_seeds=$qa_seeds; fi
    for seed in $task_seeds; do
      for arm in "${selected[@]}"; do
        local name
        name=$(name_of "$arm")
        if [ "$how" = scratch ]; then
          if [ "$(seed_of "$arm")" = 0 ]; then finetune_one $task "$name" "$seed" scratch; fi
        elif pretrained "$name"; then
          finetune_one $task "$name" "$seed"
        else
          echo "finetune: $name not pretrained yet" >&2
        fi
      done
    done
  done
}

scratch() { finetune scratch; }

roles() {
  local args=()
  for arm in "${arms[@]}"; do
    pretrained "$(name_of "$arm")" && args+=("$(name_of "$arm")=$out/pretrain/$(name_of "$arm")")
  done
  read -r -a extra <<<"${ROLES_EXTRA:-}"
  args+=("${extra[@]}")
  if [ ${#args[@]} -gt 0 ]; then HEADROOM=$hr scripts/head-roles.sh "$out/roles" "${args[@]}"; fi
}

# The fine-tuned 8-head model (seed 0) pruned without retraining: by importance, and by the gates of the same model
# fine-tuned 3 more epochs with L0 gates; test accuracy against the heads kept, and inference time (prune-curve.sh)
prune() {
  local run=$out/finetune/h8-0 gated=$out/prune/h8-l0
  [ -f "$run/wall_ms" ] || { echo "prune: $run not fine-tuned yet" >&2; return 0; }
  mkdir -p "$out/prune"
  if [ ! -f "$gated/complete" ]; then
    rm -rf "$gated"
    "$hr" train configs/clinc150-from-pretrain.yaml --quiet --out "$gated" --set train.epochs=3 \
      --set "model.layers=$(layers_of "$(printf '%s\n' "${arms[@]}" | grep '^h8|')")" \
      --set "train.init_from=$run/checkpoint-best.safetensors" --set train.gate_lr=0.05 \
      --set model.layers.0.attention.gates.type=l0 --set model.layers.0.attention.gates.lambda=0.02 >"$gated.log" 2>&1
    touch "$gated/complete"
  fi
  HEADROOM=$hr scripts/prune-curve.sh "$out/prune/curve" "$run" "$gated"
}

# The training step of each layout, alternating, 5 rounds (pretraining shape, batch 32 x 128)
speed() {
  mkdir -p "$out/speed"
  for r in 1 2 3 4 5; do
    for arm in "${arms[@]}"; do
      [ "$(seed_of "$arm")" = 0 ] || continue
      "$hr" bench configs/pretrain-wiki.yaml --precision f32 --batch 32 --seq-len 128 --steps 5 --warmup 2 \
        --vocab 30522 --inference-runs 1 --set "model.layers=$(layers_of "$arm")" --json | tail -1 \
        >"$out/speed/$(name_of "$arm")-$r.json"
    done
  done
  cpu >"$out/speed/cpu.txt"
  # the binary may be a frozen copy (HEADROOM): the repository's commit says what build/headroom would be
  echo "$hr; repository at $(git rev-parse --short HEAD)$(git status --porcelain | grep -q . && echo ', with local changes')" \
    >"$out/speed/binary.txt"
}

table() {
  local names=()
  for arm in "${arms[@]}"; do names+=("$(name_of "$arm")"); done
  pretrained_runs=()
  for n in "${names[@]}"; do pretrained "$n" && pretrained_runs+=("$out/pretrain/$n"); done
  if [ ${#pretrained_runs[@]} -gt 0 ]; then
    "$hr" curves "${pretrained_runs[@]}" --metric eval.masked_accuracy --x tokens \
      --title "validation masked accuracy (%) against tokens seen" --out "$out/pretrain-accuracy.png"
    "$hr" curves "${pretrained_runs[@]}" --metric eval.perplexity --x tokens \
      --title "validation perplexity against tokens seen" --out "$out/pretrain-perplexity.png"
  fi
  python3 scripts/pretrained_heads_table.py "$out" "$seeds" "$qa_seeds" "${names[@]}" >"$out/results.md"
  echo "CPU: $(cpu)" >>"$out/results.md"
  cat "$out/results.md"
}

for part in "${parts[@]}"; do
  case $part in
    pretrain | finetune | scratch | roles | prune | speed | table) "$part" ;;
    *) echo "$0: unknown part '$part' (pretrain finetune scratch roles prune speed table)" >&2; exit 2 ;;
  esac
done
