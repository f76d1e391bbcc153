"""The tables of scripts/pretrained-heads-experiments.sh from its OUT directory: pretraining (final validation figures,
tokens, rate), fine-tuning on CLINC150 and bAbI task 1 from each pretrained run and from scratch (mean +- sd over
seeds), the pruning curve and the step time of each layout. A part not run yet is left out.
Usage: python3 scripts/pretrained_heads_table.py OUT "SEEDS" "QA_SEEDS" NAME [NAME ...]"""
import glob
import json
import os
import statistics
import sys

import yaml


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def sd(values):
    return statistics.stdev(values) if len(values) > 1 else 0.0


def pretraining(out, names):
    print("## Pretraining\n")
    print("| run | heads a layer | final masked accuracy % | final perplexity | tokens | median tokens/s | hours |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for n in names:
        path = f"{out}/pretrain/{n}/metrics.jsonl"
        if not os.path.exists(f"{out}/pretrain/{n}/complete"):
            continue
        m = rows(path)
        evals = [r for r in m if "eval" in r]
        steps = [r for r in m if "loss" in r]
        with open(f"{out}/pretrain/{n}/config.yaml") as f:
            cfg = yaml.safe_load(f)
        batch, seq = cfg["train"]["batch_size"], cfg["data"]["max_seq_len"]
        heads = " ".join(layout(cfg))
        last = evals[-1]
        rate = statistics.median(r["tokens_per_s"] for r in steps) if steps else float("nan")
        hours = wall_seconds(m) / 3600
        print(f"| {n} | {heads} | {last['eval']['masked_accuracy']:.2f} | {last['eval']['perplexity']:.1f} | "
              f"{last['step'] * batch * seq / 1e6:.1f}M | {rate:.0f} | {hours:.2f} |")
    print()


def wall_seconds(metrics):
    """A run's training time over all its sessions: elapsed_s restarts at each resume (a "session" row)."""
    total, segment = 0.0, 0.0
    for r in metrics:
        if "session" in r:
            total, segment = total + segment, 0.0
        segment = max(segment, r.get("elapsed_s", 0.0))
    return total + segment


def layout(cfg):
    """The heads x head_dim of each layer group of a run's config (its model.layers)."""
    model = cfg["model"]
    return [f"{g.get('repeat', 1)}x({g['attention']['heads']}x{g['attention']['head_dim']}"
            f"{' talking' if g['attention'].get('talking_heads') else ''})" for g in model["layers"]]


def test_accuracy(run):
    """CLINC150: the in-scope test accuracy of the best-validation checkpoint, %."""
    return 100 * [r for r in rows(f"{run}/metrics.jsonl") if "test" in r][-1]["test"]["accuracy"]


def last_exact_match(run):
    """bAbI task 1: exact match of the last checkpoint on the test file (bAbI has no dev set: no checkpoint is picked
    by it), %."""
    return [r for r in rows(f"{run}/metrics.jsonl") if "eval" in r][-1]["eval"]["exact_match"]


FINETUNING = [
    ("finetune", "Fine-tuned on CLINC150 (in-scope test accuracy %, best-validation checkpoint)", test_accuracy),
    ("finetune-babi", "Fine-tuned on bAbI task 1 (exact match % on its test file, last checkpoint)", last_exact_match),
]


def finetuning(out, seeds, qa_seeds, names):
    """Each task's table: the pretrained arms and, beside them, the same layouts fine-tuned from scratch."""
    for folder, title, score in FINETUNING:
        task_seeds = qa_seeds if folder.endswith("babi") else seeds
        scratch = folder.replace("finetune", "scratch")
        lines = []
        for n in names:
            for start, where in (("pretrained", folder), ("scratch", scratch)):
                runs = [f"{out}/{where}/{n}-{s}" for s in task_seeds if os.path.exists(f"{out}/{where}/{n}-{s}/wall_ms")]
                if not runs:
                    continue
                v = [score(d) for d in runs]
                wall = [float(open(f"{d}/wall_ms").read()) / 1000 for d in runs]
                lines.append(f"| {n} | {start} | {len(runs)} | {statistics.mean(v):.2f} +- {sd(v):.2f} | "
                             f"{statistics.mean(wall):.0f} |")
        if not lines:
            continue
        print(f"## {title}\n")
        print("| layout | start | seeds | score | wall s |")
        print("|---|---|---:|---:|---:|")
        print("\n".join(lines) + "\n")


def pruning(out):
    curve = f"{out}/prune/curve"
    if not os.path.exists(f"{curve}/curve.tsv"):
        return
    print("## Pruning the fine-tuned 8-head model (seed 0), no retraining (scripts/prune-curve.sh)\n")
    with open(f"{curve}/curve.tsv") as f:
        header, *lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for l in lines:
        print("| " + " | ".join(l) + " |")
    print(f"\n![accuracy against the heads kept]({curve}/curve.png)\n")
    for extra in ("kept.md", "speed.md"):
        if os.path.exists(f"{curve}/{extra}"):
            print(open(f"{curve}/{extra}").read())


def speed(out, names):
    files = {n: sorted(glob.glob(f"{out}/speed/{n}-[0-9]*.json")) for n in names}
    files = {n: f for n, f in files.items() if f}
    if not files or "h1" not in files:
        return
    ms = {n: [json.load(open(p))["train_step_ms"] for p in f] for n, f in files.items()}
    binary = open(f"{out}/speed/binary.txt").read().strip() if os.path.exists(f"{out}/speed/binary.txt") else "?"
    print(f"## Training step (batch 32 x 128, f32), rounds alternating ({binary})\n")
    print("| layout | median step ms | ratio to h1 (median of rounds) |")
    print("|---|---:|---:|")
    for n, v in ms.items():
        ratio = statistics.median(a / b for a, b in zip(v, ms["h1"]))
        print(f"| {n} | {statistics.median(v):.1f} | {ratio:.3f} |")
    print()


def main():
    out, seeds, qa_seeds, names = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4:]
    pretraining(out, names)
    finetuning(out, seeds, qa_seeds, names)
    pruning(out)
    speed(out, names)


if __name__ == "__main__":
    main()
