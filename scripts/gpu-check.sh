#!/usr/bin/env bash
# The GPU check in one command, on a machine with an NVIDIA GPU, nvcc and cuBLAS:
#   1. configures build-gpu/ with -Dcuda=enabled (a release build) and compiles it;
#   2. runs the GPU tests (test_cuda_backend: every Backend method against the CPU backend; test_gpu_parity: every
#      framework op forward and backward, and a whole training step, against the CPU) and fails if they fail or skip;
#   3. times a BERT-base-sized training step (batch 32 x 128 tokens) with `headroom bench`, in full FP32 and again
#      with HR_CUDA_TF32=1 (TF32 tensor cores in cuBLAS);
#   4. prints a table last: step time, tokens/s, model TFLOP/s, peak device memory and cuBLAS's sgemm rate measured
#      in the same run.
# Logs go to build-gpu/gpu-check/; when OUT is set, the logs and the table are copied there too.
# Exits 1 (with the reason) when a stage fails or no GPU is present. Takes a few minutes on an H200.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=build-gpu/gpu-check
fail() {
  echo "gpu-check FAILED: $*" >&2
  if [ -n "${OUT:-}" ] && [ -d "$logs" ]; then mkdir -p "$OUT" && cp -r "$logs" "$OUT/"; fi
  exit 1
}

# nvcc is not on PATH by default on Debian-style CUDA installs
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

# ---- 1. build
if [ ! -f build-gpu/build.ninja ]; then
  meson setup build-gpu --buildtype=release -Dcuda=enabled || fail "meson setup -Dcuda=enabled (nvcc and cuBLAS found?)"
fi
mkdir -p "$logs"
meson compile -C build-gpu 2>&1 | tee "$logs/build.log" | tail -n 3
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "build (see $logs/build.log)"

# ---- 2. GPU tests: a skip means no usable GPU, which is a failure here
export HR_SHARED="$PWD/../shared" HR_SOURCE_ROOT="$PWD"
for t in cuda_backend gpu_parity; do
  echo "== test_$t"
  timeout 300 "build-gpu/tests/test_$t" >"$logs/test_$t.log" 2>&1
  status=$?
  tail -n 4 "$logs/test_$t.log"
  if grep -q "skipped: no CUDA device" "$logs/test_$t.log"; then
    fail "test_$t skipped its GPU cases: no usable CUDA device" \
      "(nvidia-smi -L: $(nvidia-smi -L 2>&1 | head -n 1))"
  fi
  [ $status -eq 0 ] || fail "test_$t (exit $status; see $logs/test_$t.log)"
done

# ---- 3. timing: BERT-base shape, batch 32 x 128 tokens, FP32 then TF32
bench=(build-gpu/headroom bench configs/bert-base.yaml --set train.device=cuda --batch 32 --seq-len 128 --vocab 30522
  --classes 2 --steps 10 --warmup 3 --json)
for mode in fp32 tf32; do
  echo "== bench ($mode)"
  tf32=0
  [ "$mode" = tf32 ] && tf32=1
  HR_CUDA_TF32=$tf32 timeout 240 "${bench[@]}" >"$logs/bench-$mode.json" 2>"$logs/bench-$mode.err" ||
    fail "headroom bench ($mode) (see $logs/bench-$mode.err)"
done

# ---- 4. the table, last
python3 - "$logs/bench-fp32.json" "$logs/bench-tf32.json" >"$logs/table.txt" <<'EOF' || fail "reading the bench JSON"
import json, sys
rows = []
for mode, path in zip(["FP32", "TF32 (HR_CUDA_TF32=1)"], sys.argv[1:]):
    with open(path) as f:
        j = json.loads(f.read().strip().splitlines()[-1])
    rows.append((mode, j))
j0 = rows[0][1]
print(f"BERT-base training step on {j0['device']}: batch {j0['batch']} x seq {j0['seq_len']}, "
      f"{j0['parameters'] / 1e6:.1f}M parameters, AdamW, median of 10 steps")
head = ("gemm mode", "step ms", "tokens/s", "model TFLOP/s", "peak device MB", "sgemm TFLOP/s", "of sgemm")
print("| " + " | ".join(head) + " |")
print("|" + "|".join("-" * (len(h) + 2) for h in head) + "|")
for mode, j in rows:
    print(f"| {mode} | {j['train_step_ms']:.1f} | {j['train_tokens_per_s']:.0f} | {j['train_gflops'] / 1e3:.2f} | "
          f"{j['peak_device_mb']:.0f} | {j['sgemm_gflops'] / 1e3:.2f} | {100 * j['train_vs_sgemm']:.0f}% |")
print("model TFLOP/s: 3x the forward FLOPs of the layers and head per step; sgemm: cuBLAS on the model's "
      "(B*T, D) x (4D, D)^T shape in the same process; peak device MB: the caching allocator's peak bytes in use.")
EOF
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp -r "$logs" "$OUT/"; fi
echo
cat "$logs/table.txt"
