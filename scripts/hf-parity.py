#!/usr/bin/env python3
"""headroom against the real implementations (transformers, tokenizers), on real text. Needs the python references
(scripts/install-python-refs.sh; run this with ~/.cache/headroom/pyref/bin/python) and a built headroom.

  hf-parity.py model  --model DIR [--headroom build/headroom] [--work W] [--texts 200] [--tol 1e-4]
      imports DIR (a Hugging Face BERT directory, e.g. from scripts/get-pretrained.sh) into W/run, runs
      `headroom embed` on real texts (CLINC150 test texts and paragraphs of wiki_en/tiny.txt, half each) in padded
      batches, and compares last_hidden_state (every real token) and the mean-pooled embeddings with transformers'
      BertModel fed the same ids in the same batches; also checks that headroom's ids are transformers' tokenizer's.
  hf-parity.py tokens --model DIR [--headroom build/headroom] [--work W] [--texts 10000]
      headroom's WordPiece ids (`headroom tokenize`) against tokenizers' BertWordPieceTokenizer configured from the
      model's vocab.txt and tokenizer_config.json (lower-casing, accents), on real texts: wiki_en/tiny.txt paragraphs,
      wiki_en/valid.txt.xz paragraphs, CLINC150 texts. Every difference is printed; any is a failure.
  hf-parity.py export --hf DIR --inputs FILE [--tol 1e-4]
      loads an `headroom export-hf` directory in transformers (BertForSequenceClassification,
      BertForQuestionAnswering or BertForMaskedLM, by its architectures) and compares its logits on FILE's input_ids,
      token_type_ids and attention_mask with FILE's headroom logits (logits, start_logits and end_logits, or
      prediction_logits at every position) and, when FILE has them, the softmax of the classifier's logits with
      headroom predict's probabilities. Loading must report no missing or unexpected tensors (an MLM export stores no
      decoder: transformers ties it to the word embeddings).

Prints one JSON line of measurements; exit 0 when within the tolerance, 1 when not, 2 on bad usage.
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# tiny.txt is in the repository (tests/fixtures/wiki_en_tiny); HR_WIKI_DIR may name the corpus with valid.txt.xz too
WIKI = os.environ.get("HR_WIKI_DIR", os.path.join(ROOT, "tests/fixtures/wiki_en_tiny"))


def clinc_texts(splits):
    with open(os.path.join(ROOT, "data/clinc150/data_full.json"), encoding="utf-8") as f:
        d = json.load(f)
    return [t for s in splits for t, _ in d[s]]


def wiki_paragraphs(name, limit=None):
    path = os.path.join(WIKI, name)
    opener = lzma.open if name.endswith(".xz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.strip():
                out.append(line)
            if limit and len(out) >= limit:
                break
    return out


def spread(items, n):
    """n items spread evenly over the list."""
    if n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def run(cmd, stdin_text=None):
    r = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        sys.exit(1)
    return r.stdout


def imported_run(args):
    run_dir = os.path.join(args.work, "run")
    if not os.path.exists(os.path.join(run_dir, "config.yaml")):
        run([args.headroom, "import-hf", args.model, "--out", run_dir])
    return run_dir


def jsonl(texts):
    return "".join(json.dumps({"text": t}) + "\n" for t in texts)


def model_parity(args):
    import numpy as np
    import torch
    from safetensors.numpy import load_file
    from transformers import AutoTokenizer, BertModel

    n = args.texts
    texts = spread(clinc_texts(["test"]), n // 2) + spread(wiki_paragraphs("tiny.txt"), n - n // 2)
    run_dir = imported_run(args)
    hidden_file = os.path.join(args.work, "hidden.safetensors")
    mean_file = os.path.join(args.work, "mean.safetensors")
    base = [args.headroom, "embed", "--run", run_dir, "--jsonl", "--batch-size", str(args.batch_size)]
    run(base + ["--pooling", "none", "--out", hidden_file], jsonl(texts))
    run(base + ["--pooling", "mean", "--out", mean_file], jsonl(texts))
    ours, ours_mean = load_file(hidden_file), load_file(mean_file)
    ids, mask, hidden = ours["input_ids"], ours["attention_mask"], ours["last_hidden_state"]

    # the ids: transformers' own tokenizer of the directory, truncated to the same length
    tok = AutoTokenizer.from_pretrained(args.model)
    ref_ids = tok(texts, truncation=True, max_length=min(tok.model_max_length, 512))["input_ids"]
    id_mismatch = [i for i, r in enumerate(ref_ids) if list(ids[i][: mask[i].sum()]) != r]

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = BertModel.from_pretrained(args.model, attn_implementation="eager").eval()
    max_diff = mean_diff = 0.0
    with torch.no_grad():
        for b0 in range(0, len(texts), args.batch_size):
            b1 = min(len(texts), b0 + args.batch_size)
            m = mask[b0:b1]
            T = int(m.sum(1).max())
            x = torch.from_numpy(ids[b0:b1, :T].astype(np.int64))
            am = torch.from_numpy(m[:, :T].astype(np.int64))
            h = model(input_ids=x, attention_mask=am, token_type_ids=torch.zeros_like(x)).last_hidden_state.numpy()
            keep = m[:, :T].astype(bool)
            max_diff = max(max_diff, float(np.abs(h - hidden[b0:b1, :T])[keep].max()))
            mf = m[:, :T, None].astype(np.float64)
            pooled = (h.astype(np.float64) * mf).sum(1) / mf.sum(1)
            mean_diff = max(mean_diff, float(np.abs(pooled - ours_mean["embeddings"][b0:b1]).max()))
    result = {"check": "model", "model": args.model, "texts": len(texts), "batch_size": args.batch_size,
              "tokens": int(mask.sum()), "truncated_to_512": int((mask.sum(1) == 512).sum()),
              "max_abs_diff_last_hidden_state": max_diff, "max_abs_diff_mean_pooled": mean_diff,
              "texts_whose_ids_differ_from_transformers_tokenizer": len(id_mismatch), "tol": args.tol}
    print(json.dumps(result))
    for i in id_mismatch[:5]:
        print(f"ids differ: {texts[i][:200]!r}", file=sys.stderr)
    return 0 if max_diff <= args.tol and mean_diff <= args.tol and not id_mismatch else 1


def tokenizer_parity(args):
    from tokenizers import BertWordPieceTokenizer

    n = args.texts
    texts = wiki_paragraphs("tiny.txt")
    if os.path.exists(os.path.join(WIKI, "valid.txt.xz")):
        texts += wiki_paragraphs("valid.txt.xz", limit=min(4000, max(0, n - len(texts))))
    texts += clinc_texts(["test", "oos_test", "val", "oos_val", "train", "oos_train"])
    texts = texts[:n]
    run_dir = imported_run(args)
    cfg_path = os.path.join(args.model, "tokenizer_config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {}
    lower = cfg.get("do_lower_case", True)
    strip = cfg.get("strip_accents")  # None: follows lowercase, in tokenizers as in transformers
    ref = BertWordPieceTokenizer(os.path.join(args.model, "vocab.txt"), clean_text=True, handle_chinese_chars=True,
                                 strip_accents=strip, lowercase=lower)
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    got = [json.loads(line)["ids"] for line in run([args.headroom, "tokenize", "--run", run_dir, "--jsonl"],
                                                    jsonl(texts)).splitlines()]
    assert len(got) == len(texts), (len(got), len(texts))
    differ = [i for i in range(len(texts)) if got[i] != want[i]]
    vocab = [l.rstrip("\n") for l in open(os.path.join(args.model, "vocab.txt"), encoding="utf-8")]
    for i in differ[:20]:
        a, b = got[i], want[i]
        k = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
        print(f"text {i} differs at piece {k}: headroom {[vocab[x] for x in a[k:k + 5]]}, tokenizers "
              f"{[vocab[x] for x in b[k:k + 5]]}; text: {texts[i][:300]!r}", file=sys.stderr)
    print(json.dumps({"check": "tokens", "model": args.model, "texts": len(texts),
                      "pieces": sum(len(w) for w in want), "lowercase": lower, "strip_accents": strip,
                      "texts_that_differ": len(differ)}))
    return 0 if not differ else 1


def export_parity(args):
    import numpy as np
    import torch
    from safetensors.numpy import load_file
    from transformers import BertForMaskedLM, BertForQuestionAnswering, BertForSequenceClassification

    import transformers

    f = load_file(args.inputs)
    config = json.load(open(os.path.join(args.hf, "config.json")))
    arch = config["architectures"][0]
    if config.get("pruned_heads") and int(transformers.__version__.split(".")[0]) >= 5:
        print(f"transformers {transformers.__version__} has no head pruning (removed in 5.0): it cannot load "
              f"{args.hf}'s pruned_heads; install transformers<5 (scripts/install-python-refs.sh)", file=sys.stderr)
        return 1
    cls = {"BertForSequenceClassification": BertForSequenceClassification,
           "BertForQuestionAnswering": BertForQuestionAnswering, "BertForMaskedLM": BertForMaskedLM}[arch]
    model, info = cls.from_pretrained(args.hf, attn_implementation="eager", output_loading_info=True)
    model.eval()
    loading = {k: sorted(v) for k, v in info.items() if k in ("missing_keys", "unexpected_keys") and v}
    x = {k: torch.from_numpy(f[k].astype(np.int64)) for k in ("input_ids", "token_type_ids", "attention_mask")}
    with torch.no_grad():
        out = model(**x)
    keep = f["attention_mask"].astype(bool)
    if arch == "BertForSequenceClassification":
        diffs = {"logits": float(np.abs(out.logits.numpy() - f["logits"]).max())}
        if "probabilities" in f:  # headroom predict's
            p = torch.softmax(out.logits, -1).numpy()
            diffs["probabilities"] = float(np.abs(p - f["probabilities"]).max())
    elif arch == "BertForMaskedLM":  # every position, padding included
        logits = out.logits.numpy()
        diffs = {"prediction_logits": float(np.abs(logits - f["prediction_logits"]).max()),
                 "prediction_logits_real_tokens": float(np.abs(logits - f["prediction_logits"])[keep].max())}
    else:  # the logits of real tokens (headroom's padding positions are its own)
        diffs = {k: float(np.abs(getattr(out, k).numpy() - f[k])[keep].max()) for k in ("start_logits", "end_logits")}
    worst = max(diffs.values())
    print(json.dumps({"check": "export", "hf": args.hf, "architecture": arch, "pruned_heads": config.get("pruned_heads"),
                      "max_abs_diff": diffs, "tol": args.tol, "loading": loading}))
    return 0 if worst <= args.tol and not loading else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="check", required=True)
    for name in ("model", "tokens"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True, help="a Hugging Face BERT directory")
        s.add_argument("--headroom", default=os.path.join(ROOT, "build/headroom"))
        s.add_argument("--work", help="where the imported run and outputs go (default: a temporary directory)")
        s.add_argument("--texts", type=int, default=200 if name == "model" else 10000)
        if name == "model":
            s.add_argument("--batch-size", type=int, default=16)
            s.add_argument("--tol", type=float, default=1e-4)
    s = sub.add_parser("export")
    s.add_argument("--hf", required=True, help="a directory written by headroom export-hf")
    s.add_argument("--inputs", required=True, help="safetensors: input_ids, token_type_ids, attention_mask, logits")
    s.add_argument("--tol", type=float, default=1e-4)
    args = p.parse_args()
    if args.check == "export":
        return export_parity(args)
    with tempfile.TemporaryDirectory() as tmp:
        args.work = args.work or tmp
        os.makedirs(args.work, exist_ok=True)
        return model_parity(args) if args.check == "model" else tokenizer_parity(args)


if __name__ == "__main__":
    sys.exit(main())
