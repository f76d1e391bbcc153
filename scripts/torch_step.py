"""The PyTorch reference for scripts/gpu-check.sh: one training step of BERT-base (configs/bert-base.yaml's shape:
12 post-LN layers, d_model 768, 12 heads of 64, FFN 3072, exact GELU, dropout 0.1, LayerNorm eps 1e-12, 30522-token
vocabulary, 2 classes) at batch 32 x 128 tokens: forward, cross-entropy, backward, AdamW, timed on the GPU.

Runs on the device machine only (PyTorch and transformers are there, not here). Prints one JSON object a line for each
of: attention "eager" (the T x T scores materialised, as headroom does) and "sdpa" (PyTorch's fused attention), each in
full FP32 and with TF32 matmuls. Usage: python3 scripts/torch_step.py [--steps 10] [--warmup 3]
"""
import argparse
import json
import statistics
import time

import torch
from transformers import BertConfig, BertForSequenceClassification


def time_step(attention: str, tf32: bool, batch: int, seq: int, steps: int, warmup: int) -> dict:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, max_position_embeddings=512, layer_norm_eps=1e-12, hidden_act="gelu",
                        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, num_labels=2,
                        attn_implementation=attention)
    model = BertForSequenceClassification(config).cuda().train()
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
    mask = torch.ones(batch, seq, dtype=torch.long, device="cuda")
    labels = torch.randint(0, 2, (batch,), device="cuda")

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        opt.step()
        return loss

    torch.cuda.reset_peak_memory_stats()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    ms = statistics.median(times) * 1e3
    result = {"framework": f"pytorch {torch.__version__}", "device": torch.cuda.get_device_name(),
              "attention": attention, "tf32": tf32, "batch": batch, "seq_len": seq,
              "parameters": sum(p.numel() for p in model.parameters()), "train_step_ms": ms,
              "train_tokens_per_s": batch * seq / (ms / 1e3), "final_loss": float(loss),
              "peak_device_mb": torch.cuda.max_memory_allocated() / 2**20}
    del model, opt
    torch.cuda.empty_cache()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    for attention in ("eager", "sdpa"):
        for tf32 in (False, True):
            try:
                result = time_step(attention, tf32, args.batch, args.seq_len, args.steps, args.warmup)
            except (ValueError, ImportError, RuntimeError) as e:  # e.g. a transformers without sdpa for BERT
                result = {"attention": attention, "tf32": tf32, "error": f"{type(e).__name__}: {e}"}
                torch.cuda.empty_cache()
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
