#!/usr/bin/env python3
"""Which heads a pruning kept, by role: the per-head table of `headroom heads --roles` (scripts/head-roles.sh writes
one per run and text) against the `prune.json` of one or more pruned runs of the same model. Prints a markdown table:
per role, the heads of that role and how many each pruning kept, then the mean of each statistic over the kept and
the removed heads.
Usage: scripts/roles_kept.py ROLES.txt NAME=PRUNED_RUN/prune.json [NAME=... ...]
"""
import json
import statistics
import sys


def read_roles(path):
    heads = {}
    names = None
    for line in open(path):
        cells = line.split()
        if cells[:2] == ["layer", "head"]:
            names = cells[2:]
        elif cells and cells[0].isdigit() and names:
            heads[(int(cells[0]), int(cells[1]))] = dict(zip(names, cells[2:]))
    if not heads:
        sys.exit(f"{path}: no per-head rows (the output of headroom heads --roles)")
    return heads


def kept_heads(path):
    layers = json.load(open(path))["layers"]
    return {(l, h) for l, layer in enumerate(layers) for h in layer["kept"]}


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__.split("Usage: ")[1].strip())
    heads = read_roles(sys.argv[1])
    prunings = [(a.split("=", 1)[0], kept_heads(a.split("=", 1)[1])) for a in sys.argv[2:]]
    roles = sorted({h["role"] for h in heads.values()})
    print("| role | heads | " + " | ".join(f"kept by {n} ({len(k)})" for n, k in prunings) + " |")
    print("|---|---:|" + "---:|" * len(prunings))
    for r in roles:
        of_role = [k for k, h in heads.items() if h["role"] == r]
        print(f"| {r} | {len(of_role)} | " + " | ".join(str(sum(k in kept for k in of_role)) for _, kept in prunings)
              + " |")
    stats = [s for s in next(iter(heads.values())) if s != "role"]
    print()
    print("| pruning | heads | " + " | ".join(stats) + " |")
    print("|---|---|" + "---:|" * len(stats))
    for n, kept in prunings:
        for label, group in (("kept", [h for k, h in heads.items() if k in kept]),
                             ("removed", [h for k, h in heads.items() if k not in kept])):
            if group:
                means = [statistics.mean(float(h[s]) for h in group) for s in stats]
                print(f"| {n} | {label} ({len(group)}) | " + " | ".join(f"{m:.3f}" for m in means) + " |")


if __name__ == "__main__":
    main()
