"""PyTorch 2.x's masked-language-model training step on the shape headroom pretrains, for scripts/mlm-speed-compare.sh.

transformers' BertForMaskedLM with configs/pretrain-wiki.yaml's encoder by default (4 post-LN layers, d_model 256, 4
heads of 64, FFN 1024, exact GELU, no dropout, 30522-token vocabulary with the decoder tied to the word embeddings),
at batch 64 x 128 tokens: forward, the MLM loss, backward, AdamW. The decoder runs only on the masked positions, one
in 7 (headroom's sparse decoding, `headroom bench` on an encoder_mlm config), unless --dense. f32, and bf16 under
torch.autocast (matmuls in bf16, f32 master weights), as headroom's train.precision: bf16.

Prints one JSON object a line per precision: median step ms and tokens/s over --steps after --warmup.
Usage: python scripts/torch_mlm_step.py [--precision f32,bf16] [--batch 64] [--seq-len 128] [--layers 4]
       [--hidden 256] [--heads 4] [--ffn 1024] [--steps 10] [--warmup 3] [--dense] [--device cpu|cuda]
(scripts/install-python-refs.sh installs torch and transformers.)
"""
import argparse
import json
import os
import statistics
import time

import torch
from transformers import BertConfig, BertForMaskedLM


def time_step(a: argparse.Namespace, precision: str) -> dict:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=a.hidden, num_hidden_layers=a.layers,
                        num_attention_heads=a.heads, intermediate_size=a.ffn, max_position_embeddings=512,
                        layer_norm_eps=1e-12, hidden_act="gelu", hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, attn_implementation="sdpa")
    model = BertForMaskedLM(config).to(a.device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    ids = torch.randint(5, config.vocab_size, (a.batch, a.seq_len), device=a.device)
    mask = torch.ones(a.batch, a.seq_len, dtype=torch.long, device=a.device)
    # the decoded positions: every 7th token (about the 15% that masking picks), or all of them with --dense
    positions = torch.zeros(a.batch, a.seq_len, dtype=torch.bool, device=a.device)
    positions.view(-1)[:: 1 if a.dense else 7] = True
    labels = ids[positions]

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            hidden = model.bert(input_ids=ids, attention_mask=mask).last_hidden_state  # (B, T, D)
            logits = model.cls(hidden[positions])  # (masked, V)
            loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    return {"framework": f"pytorch {torch.__version__}", "device": a.device, "threads": torch.get_num_threads(),
            "precision": precision, "batch": a.batch, "seq_len": a.seq_len, "decoded_positions": int(labels.numel()),
            "parameters": sum(p.numel() for p in model.parameters()), "train_step_ms": ms,
            "train_tokens_per_s": a.batch * a.seq_len / (ms / 1e3), "final_loss": float(loss.detach())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--precision", default="f32,bf16")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=1024)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dense", action="store_true", help="decode every position, as BertForMaskedLM does")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = p.parse_args()
    if a.device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(os.cpu_count() or 1)
    for precision in a.precision.split(","):
        print(json.dumps(time_step(a, precision)), flush=True)


if __name__ == "__main__":
    main()
