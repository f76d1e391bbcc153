"""PyTorch 2.x and onnxruntime timed on a BERT sequence classifier on the CPU, for scripts/bert-small-speed-compare.sh.

transformers' BertForSequenceClassification with random weights, bge-small-en-v1.5's shape by default (12 post-LN
layers, hidden 384, 12 heads of 32, FFN 1536, exact GELU, LayerNorm eps 1e-12, 30522-token vocabulary, 512 positions,
dropout 0.1, 2 labels on the [CLS] pooler; configs/bge-small-shape.yaml), SDPA attention, at --threads threads:

  train    one training step at --batch x --seq-len: forward, cross-entropy, backward, gradient clipping to norm 1
           (as `headroom bench` clips), AdamW; f32, and bf16 under torch.autocast. Median of --steps after --warmup.
  latency  batch-1 inference, eval mode, no_grad, f32, at each of --latency-seq: p50 of --latency-runs after 5
           untimed runs (as `headroom bench`), in PyTorch and in onnxruntime on the model exported with
           torch.onnx.export (dynamic batch and sequence axes): CPUExecutionProvider, --threads intra-op threads,
           ORT_ENABLE_ALL, spinning unless OMP_WAIT_POLICY=passive; the graph as exported ("onnxruntime") and after
           onnxruntime.transformers' BERT fusions ("onnxruntime-fused": Attention, SkipLayerNormalization,
           EmbedLayerNormalization). Each ONNX model's logits are checked against PyTorch's first (a "check" line;
           exits 1 above --max-diff).

Prints one JSON object a line: framework, version, what, precision, batch, seq_len, threads, ms.
Usage: python scripts/torch_bert_speed.py [--what train,latency] [--precision f32,bf16] [--threads N] [--batch 32]
       [--seq-len 128] [--latency-seq 128,32] [--layers 12] [--steps 5] [--warmup 2] [--onnx-dir DIR] ...
(scripts/install-python-refs.sh installs torch, transformers, onnx and onnxruntime.)
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification


def build_model(a: argparse.Namespace) -> BertForSequenceClassification:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=a.vocab, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=a.heads, intermediate_size=a.ffn, max_position_embeddings=512,
                        layer_norm_eps=1e-12, hidden_act="gelu", hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1, num_labels=a.labels, attn_implementation="sdpa")
    return BertForSequenceClassification(config)


def row(a: argparse.Namespace, framework: str, version: str, what: str, precision: str, batch: int, seq: int,
        ms: float, **extra) -> str:
    return json.dumps({"framework": framework, "version": version, "what": what, "precision": precision,
                       "batch": batch, "seq_len": seq, "threads": a.threads, "ms": ms, **extra})


def train_step(a: argparse.Namespace, precision: str) -> str:
    model = build_model(a).train()
    try:  # the fused CPU AdamW where this torch has it
        opt, kind = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True), "fused"
    except (TypeError, RuntimeError):
        opt, kind = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01), "default"
    ids = torch.randint(0, a.vocab, (a.batch, a.seq_len))
    mask = torch.ones(a.batch, a.seq_len, dtype=torch.long)
    labels = torch.randint(0, a.labels, (a.batch,))

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits = model(input_ids=ids, attention_mask=mask).logits
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        times.append(time.perf_counter() - t0)
    return row(a, "pytorch", torch.__version__, "train_step", precision, a.batch, a.seq_len,
               statistics.median(times) * 1e3, adamw=kind, parameters=sum(p.numel() for p in model.parameters()),
               final_loss=float(loss.detach()))


def p50_ms(run, runs: int) -> float:
    for _ in range(5):
        run()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def onnx_models(a: argparse.Namespace, model: BertForSequenceClassification) -> dict:
    """The exported model and its BERT-fused version, made once in --onnx-dir (reused by later rounds)."""
    import onnx
    import onnxruntime
    from onnxruntime.transformers.optimizer import optimize_model
    os.makedirs(a.onnx_dir, exist_ok=True)
    stem = os.path.join(a.onnx_dir, f"bert-l{a.layers}-h{a.hidden}-a{a.heads}-f{a.ffn}-v{a.vocab}-c{a.labels}")
    plain, fused = stem + ".onnx", stem + "-fused.onnx"
    if not os.path.exists(plain):
        ids = torch.randint(0, a.vocab, (1, 16))
        axes = {0: "batch", 1: "seq"}
        # the TorchScript exporter: dynamo=True needs onnxscript, and ORT's BERT fusions match this graph
        torch.onnx.export(model, (ids, torch.ones_like(ids)), plain, input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "logits": {0: "batch"}})
    if not os.path.exists(fused):
        optimize_model(plain, model_type="bert", num_heads=a.heads, hidden_size=a.hidden,
                       opt_level=0).save_model_to_file(fused)
    ops = [n.op_type for n in onnx.load(fused, load_external_data=False).graph.node]
    fusions = {op: ops.count(op) for op in ("Attention", "SkipLayerNormalization", "EmbedLayerNormalization")}
    return {"onnxruntime": plain, "onnxruntime-fused": fused, "version": onnxruntime.__version__, "fusions": fusions}


def latency(a: argparse.Namespace) -> tuple:
    import onnxruntime
    model = build_model(a).eval()
    lines, worst = [], 0.0
    paths = onnx_models(a, model)
    sessions, passive = {}, os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive"
    for name in ("onnxruntime", "onnxruntime-fused"):
        so = onnxruntime.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
        so.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # ORT's own thread pool spins unless told not to: it follows OpenMP's OMP_WAIT_POLICY, as headroom and torch do
        so.add_session_config_entry("session.intra_op.allow_spinning", "0" if passive else "1")
        sessions[name] = onnxruntime.InferenceSession(paths[name], so, providers=["CPUExecutionProvider"])
    for seq in a.latency_seq:
        torch.manual_seed(seq)
        ids = torch.randint(0, a.vocab, (1, seq))
        mask = torch.ones_like(ids)
        feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
        with torch.no_grad():
            reference = model(input_ids=ids, attention_mask=mask).logits.numpy()

            def forward() -> None:
                model(input_ids=ids, attention_mask=mask).logits
            lines.append(row(a, "pytorch", torch.__version__, "latency_b1_p50", "f32", 1, seq,
                             p50_ms(forward, a.latency_runs)))
        for name, s in sessions.items():
            diff = float(np.abs(s.run(None, feeds)[0] - reference).max())
            worst = max(worst, diff)
            lines.append(json.dumps({"check": f"{name} logits vs pytorch", "seq_len": seq, "max_abs_diff": diff}))
            lines.append(row(a, name, paths["version"], "latency_b1_p50", "f32", 1, seq,
                             p50_ms(lambda: s.run(None, feeds), a.latency_runs), spinning=not passive,
                             **({"fusions": paths["fusions"]} if name == "onnxruntime-fused" else {})))
    return lines, worst


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--what", default="train,latency")
    p.add_argument("--precision", default="f32,bf16", help="of the training step")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--latency-seq", default="128,32")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=384)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--ffn", type=int, default=1536)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--labels", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--latency-runs", type=int, default=50)
    p.add_argument("--onnx-dir", help="where the ONNX models are made, or found (default: a new temporary one)")
    p.add_argument("--max-diff", type=float, default=1e-4, help="largest |ONNX - PyTorch| logit accepted")
    a = p.parse_args()
    a.latency_seq = [int(s) for s in a.latency_seq.split(",")]
    scratch = None if a.onnx_dir else tempfile.TemporaryDirectory(prefix="headroom-onnx-")  # removed at exit
    a.onnx_dir = a.onnx_dir or scratch.name
    torch.set_num_threads(a.threads)
    what = a.what.split(",")
    if "train" in what:
        for precision in a.precision.split(","):
            print(train_step(a, precision), flush=True)
    if "latency" in what:
        lines, worst = latency(a)
        print("\n".join(lines), flush=True)
        if worst > a.max_diff:
            raise SystemExit(f"ONNX logits differ from PyTorch's by {worst:.3g} > --max-diff {a.max_diff}")


if __name__ == "__main__":
    main()
