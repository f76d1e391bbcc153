#!/usr/bin/env bash
# Decompresses the English Wikipedia pretraining corpus (xz shards: train-00..09.txt.xz, valid.txt.xz; CC BY-SA 3.0,
# attribution in its SOURCES.txt) into plain-text files that `data.format: text` reads, once: files already there are
# kept. Usage: scripts/prepare-wiki.sh SRC_DIR DEST_DIR   (e.g. ../shared/data/wiki_en corpus/wiki_en)
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 SRC_DIR DEST_DIR" >&2; exit 2; fi
src=$1 dest=$2
shopt -s nullglob
shards=("$src"/*.txt.xz)
if [ ${#shards[@]} -eq 0 ]; then echo "$0: no *.txt.xz shards in $src" >&2; exit 2; fi
mkdir -p "$dest"
[ -f "$src/SOURCES.txt" ] && cp "$src/SOURCES.txt" "$dest/SOURCES.txt"
for f in "${shards[@]}"; do
  out="$dest/$(basename "${f%.xz}")"
  if [ -s "$out" ]; then continue; fi
  echo "decompressing $f -> $out"
  xz -dc "$f" > "$out.tmp" && mv "$out.tmp" "$out"  # a killed run leaves no half file under the real name
done
echo "$dest: $(ls "$dest"/*.txt | wc -l) text files, $(du -sh "$dest" | cut -f1)"
