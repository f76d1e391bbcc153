#!/usr/bin/env bash
# Memory does not grow with the corpus (issue #33): the peak resident memory of the same 20 pretraining steps
# (configs/pretrain-wiki.yaml, f32) over the 1 MB test extract and over the whole training corpus, the evaluation split
# the same in both. The token cache of each corpus is built first (untimed), so the runs map it as training does.
# Usage: scripts/mlm-memory.sh [CORPUS (corpus/wiki_en/train-*.txt)] [EVAL (corpus/wiki_en/valid.txt)]
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-corpus/wiki_en/train-*.txt} eval=${2:-corpus/wiki_en/valid.txt}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {  # run NAME TRAIN_PATH [ARGS]: the peak RSS in MB of 20 steps
  local name=$1 train=$2
  shift 2
  build/headroom train configs/pretrain-wiki.yaml --quiet --out "$out/$name-warm" --set "data.train_path=$train" \
    --set "data.eval_path=$eval" --set train.max_steps=1 "$@" >/dev/null
  /usr/bin/time -f %M -o "$out/$name.kb" build/headroom train configs/pretrain-wiki.yaml --quiet --out "$out/$name" \
    --set "data.train_path=$train" --set "data.eval_path=$eval" --set train.max_steps=20 --set train.eval_every=20 \
    --set train.precision=f32 "$@" >/dev/null
  echo $(($(cat "$out/$name.kb") / 1024))
}
mkdir -p "$out/cache"
tiny=$(run tiny tests/fixtures/wiki_en_tiny/tiny.txt --set "data.cache_dir=$out/cache")  # no cache inside the repository
full=$(run full "$corpus")
echo "| training corpus | peak RSS MB |"
echo "|---|---:|"
echo "| tests/fixtures/wiki_en_tiny/tiny.txt ($(du -h tests/fixtures/wiki_en_tiny/tiny.txt | cut -f1)) | $tiny |"
# shellcheck disable=SC2086  # the corpus is a glob
echo "| $corpus ($(du -ch $corpus | tail -1 | cut -f1)) | $full |"
