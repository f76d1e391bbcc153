#!/usr/bin/env bash
# The run report's browser check on the main job, and the screenshot of docs/report.md: trains configs/clinc150.yaml
# (what scripts/main.sh runs) into a temporary directory unless a run directory is given, writes its report, opens it
# in headless Chromium, fails when the console shows anything (the page logs nothing unless an image does not decode
# or something tries to leave the page), and saves the screenshot as docs/images/report-clinc150.png (or $2).
#   scripts/report-screenshot.sh [RUN_DIR [OUT.png]]
set -euo pipefail
cd "$(dirname "$0")/.."
browser=${HR_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$browser" ] || { echo "no chromium: scripts/install.sh --test installs it" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run=${1:-}
out=${2:-docs/images/report-clinc150.png}
if [ -z "$run" ]; then
  run=$tmp/clinc150
  build/headroom train --quiet configs/clinc150.yaml --out "$run"
fi
build/headroom report "$run" --out "$tmp/report.html"
echo "report: $(($(stat -c %s "$tmp/report.html") / 1024)) KiB"

chrome() {  # chrome HEIGHT ARGS...: a fresh headless Chromium; its log (stderr) on stdout
  local height=$1; shift
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --disable-extensions \
    --disable-background-networking --user-data-dir="$(mktemp -d -p "$tmp")" --enable-logging=stderr --v=0 \
    --window-size=1280,"$height" "$@" 2>&1 >/dev/null || true
}
console=$(chrome 2900 --screenshot="$out" "file://$tmp/report.html" | grep ":CONSOLE" || true)
if [ -n "$console" ]; then
  echo "the console shows:" >&2
  echo "$console" >&2
  exit 1
fi
echo "console: silent; screenshot: $out ($(($(stat -c %s "$out") / 1024)) KiB)"
# the load time, from a page that frames the report and logs when the frame and all its images have loaded
echo "<!DOCTYPE html><iframe src=\"report.html\" style=\"width:1280px;height:2900px\"
  onload=\"console.log('report loaded after ' + performance.now() + ' ms')\"></iframe>" > "$tmp/timing.html"
chrome 2900 --dump-dom "file://$tmp/timing.html" | grep -o "report loaded after [0-9.]* ms" || true
