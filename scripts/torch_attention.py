"""The PyTorch reference for `headroom bench --attention` in scripts/gpu-check.sh: attention alone, forward and
forward + backward, at configs/bert-base.yaml's heads (12 of 64, dropout 0.1 on the weights, no key mask) and
batch 8 x 512 tokens by default, through torch.nn.functional.scaled_dot_product_attention in FP32 (TF32 off) and bf16,
timed on the GPU (--device cpu: on the CPU, at torch's thread count). q, k and v are (B, H, T, Dh) views of (B, T, H*Dh) tensors, as headroom keeps them.

Prints one JSON object a line with the keys headroom's prints: framework, device, path ("sdpa": PyTorch's own choice
of kernel; sdpa_backends lists the kernels that take the operands), precision, forward_ms, forward_backward_ms and
forward_backward_tflops (3.5 x 4 B H T^2 Dh FLOPs over the forward + backward time). Without torch or a GPU it prints
one {"error": ...} line and exits 0, so that the check goes on.
Usage: python3 scripts/torch_attention.py [--batch 8] [--seq-len 512] [--heads 12] [--head-dim 64] [--runs 10]
                                          [--device cuda|cpu]
"""
import argparse
import json
import statistics
import time


def sdpa_backends(torch, q, k, v, p) -> list:
    """The SDPA kernels that take these operands (of flash, efficient, cudnn, math); PyTorch picks one of them."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # before torch 2.3
        return []
    names = []
    for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
        if not hasattr(SDPBackend, name):
            continue
        try:
            with sdpa_kernel(getattr(SDPBackend, name)), torch.no_grad():
                torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p)
            names.append(name.split("_")[0].lower())
        except RuntimeError:
            continue
    return names


def median_ms(torch, call, runs: int, sync) -> float:
    for _ in range(2):
        call()
    sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = parser.parse_args()
    dev = args.device
    try:
        import torch
        if dev == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
    except (ImportError, RuntimeError) as e:
        print(json.dumps({"framework": "pytorch", "error": f"{type(e).__name__}: {e}"}), flush=True)
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    device_name = torch.cuda.get_device_name() if dev == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    B, T, H, Dh, p = args.batch, args.seq_len, args.heads, args.head_dim, args.dropout
    flops = 4.0 * B * H * T * T * Dh
    for precision, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        try:
            torch.manual_seed(0)
            # (B, T, H*Dh) as headroom's projections write them, seen as (B, H, T, Dh)
            q, k, v = ((torch.rand(B, T, H * Dh, device=dev, dtype=dtype) * 2 - 1)
                       .view(B, T, H, Dh).transpose(1, 2).requires_grad_() for _ in range(3))
            gout = torch.rand(B, H, T, Dh, device=dev, dtype=dtype) * 2 - 1
            attend = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p)  # noqa: E731
            backends = sdpa_backends(torch, q, k, v, p)

            def forward():
                with torch.no_grad():
                    attend()

            def forward_backward():
                attend().backward(gout)

            fwd, fwd_bwd = median_ms(torch, forward, args.runs, sync), median_ms(torch, forward_backward, args.runs, sync)
            result = {"framework": f"pytorch {torch.__version__}", "device": device_name,
                      "path": "sdpa", "sdpa_backends": backends, "precision": precision, "batch": B,
                      "seq_len": T, "heads": H, "head_dim": Dh, "dropout": p, "forward_ms": fwd,
                      "forward_backward_ms": fwd_bwd,
                      "forward_backward_tflops": 3.5 * flops / (fwd_bwd * 1e-3) / 1e12}
        except RuntimeError as e:
            result = {"framework": f"pytorch {torch.__version__}", "path": "sdpa", "precision": precision,
                      "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(result), flush=True)
        if dev == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
