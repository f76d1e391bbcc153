#!/usr/bin/env bash
# What the heads of several runs look at, side by side (`headroom heads --roles`, Clark et al. 2019), on the same two
# texts: 256 English Wikipedia paragraphs (tests/fixtures/wiki_en_tiny/tiny.txt, cut to 128 tokens) and the 3,000
# CLINC150 validation queries. Per run and text: the table and six heatmaps in OUT, and a summary in OUT/roles.md.
# Usage: scripts/head-roles.sh OUT NAME=RUN [NAME=RUN ...]   (HEADROOM: the binary, default build/headroom)
#   scripts/head-roles.sh ../roles minilm=runs/minilm pretrained=runs/pretrain scratch=runs/clinc150-scratch
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OUT NAME=RUN [NAME=RUN ...]" >&2; exit 2; }
out=$1
shift
mkdir -p "$out"
awk 'NF > 20 && n++ < 256' tests/fixtures/wiki_en_tiny/tiny.txt >"$out/wiki.txt"
python3 -c 'import json, sys; [print(t) for t, _ in json.load(open(sys.argv[1]))["val"]]' \
  data/clinc150/data_full.json >"$out/clinc150.txt"
for arg in "$@"; do
  name=${arg%%=*} run=${arg#*=}
  for text in wiki clinc150; do
    "${HEADROOM:-build/headroom}" heads --run "$run" --roles --text-file "$out/$text.txt" --png "$out/$name-$text.png" \
      >"$out/$name-$text.txt"
  done
done
lscpu | sed -n 's/^Model name: *//p' | head -1 >"$out/cpu.txt"
python3 - "$out" "$@" >"$out/roles.md" <<'PY'
import statistics as st, sys
out, names = sys.argv[1], [a.split("=")[0] for a in sys.argv[2:]]
print("| run | text | heads | mean attention to prev / next / self / [CLS] / [SEP] | mean entropy (nats) | "
      "strongest prev / next head | roles (count) |")
print("|---|---|---:|---|---:|---|---|")
for n in names:
    for text in ("wiki", "clinc150"):
        lines = open(f"{out}/{n}-{text}.txt").read().splitlines()
        rows = [l.split() for l in lines if l[:1].isdigit()]
        col = lambda i: [float(r[i]) for r in rows]
        roles = [l.split() for l in lines if l.startswith("role ")]
        best = lambda i: max(rows, key=lambda r: float(r[i]))
        p, q = best(2), best(3)
        print(f"| {n} | {text} | {len(rows)} | " + " / ".join(f"{st.mean(col(i)):.3f}" for i in range(2, 7)) +
              f" | {st.mean(col(7)):.2f} | {float(p[2]):.2f} (layer {p[0]} head {p[1]}) / "
              f"{float(q[3]):.2f} (layer {q[0]} head {q[1]}) | " + ", ".join(f"{r[1]} {r[2]}" for r in roles) + " |")
PY
cat "$out/roles.md"
