#!/usr/bin/env bash
# The main job in one command: installs what is missing, builds the headroom binary (not the tests: scripts/test.sh
# builds them), and trains the default config (CLINC150 intent classification on the bundled data). Extra arguments
# go to `headroom train` (e.g. --set train.epochs=1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh headroom:executable
exec build/headroom train configs/clinc150.yaml "$@"
