#!/usr/bin/env bash
# Installs what headroom needs on a fresh Debian 12 machine (idempotent: installed packages are skipped) and
# configures the release build in build/, then builds the targets given (all of them by default: scripts/main.sh asks
# for the headroom binary only). CUDA is optional: the CUDA backend is built where nvcc and cuBLAS are found.
# --test (scripts/test.sh) also installs Chromium for the run report's browser check (tests/test_report_browser.cpp):
# without its recommends, 24 packages, about 124 MB to download and 414 MB on disk (about 20 s on a fast mirror).
# Usage: scripts/install.sh [--test] [TARGET ...]   (meson target names, e.g. headroom:executable)
set -euo pipefail
cd "$(dirname "$0")/.."
for_tests=0
if [ "${1:-}" = "--test" ]; then
  for_tests=1
  shift
fi

packages=(meson ninja-build g++ pkg-config
  libdnnl-dev          # oneDNN: the CPU backend's matmul, softmax, layer norm, eltwise
  libyaml-cpp-dev      # model/training configs
  doctest-dev          # tests
  nlohmann-json3-dev   # JSON datasets, safetensors headers, metrics.jsonl
  libcli11-dev         # the headroom command line
  libutf8proc-dev      # Unicode normalisation and categories for the BERT tokenizer
  libcairo2-dev        # PNG plots and attention maps
  zlib1g-dev           # crc32: the per-tensor checksums of safetensors files
  libopenmpi-dev openmpi-bin  # data-parallel training under mpirun (with CUDA, NCCL from the toolkit)
  clang-14 libfuzzer-14-dev libomp-14-dev)  # scripts/fuzz.sh: libFuzzer builds of the parsers

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
# headless Chromium only: with its recommends (desktop integration, sound, fonts, systemd upgrades) it is 129 packages
if [ $for_tests -eq 1 ] && ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  [ ${#missing[@]} -gt 0 ] || $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium
fi

# nvcc is not on PATH by default on Debian-style CUDA installs
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
meson compile -C build "$@"
