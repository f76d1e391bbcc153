#!/usr/bin/env bash
# Installs the Python reference implementations that scripts/hf-parity.py and tests/test_hf_reference.cpp compare
# headroom with: transformers (below 5, which dropped BERT's head pruning), tokenizers, safetensors and torch (PyPI's
# torch, with its CUDA libraries: several GB); and onnxruntime with onnx (about 40 MB), the reference inference
# runtime that headroom's CPU speed is compared with beside PyTorch (scripts/bert-small-speed-compare.sh).
# They go into a virtual environment, ~/.cache/headroom/pyref by default (HEADROOM_PYREF=DIR for another), so the
# system's python3 is left as it is; the test and the parity script find that environment by itself.
# Not part of CI (.ci/run, scripts/test.sh): the test counts as skipped without these packages.
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0
fi
venv="${HEADROOM_PYREF:-$HOME/.cache/headroom/pyref}"
start=$(date +%s)
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# transformers 5 dropped BERT's head pruning (config.json's pruned_heads): it cannot load a pruned export
"$venv/bin/python" -m pip install --quiet torch "transformers>=4.40,<5" tokenizers safetensors numpy onnx \
  onnxruntime
"$venv/bin/python" -c "import torch, transformers, tokenizers, safetensors, onnxruntime; print('torch', \
torch.__version__, 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__, 'safetensors', \
safetensors.__version__, 'onnxruntime', onnxruntime.__version__)"
echo "installed into $venv in $(( $(date +%s) - start )) s"
