// `headroom bench CONFIG`: times training steps (forward, backward, AdamW) and inference on synthetic batches of the
// config's shape, counts the model FLOPs, and measures the gemm rate (f32 and bf16) of oneDNN or cuBLAS in the same run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace hr {

struct BenchOptions {
  std::string config;
  std::vector<std::string> overrides;
  int64_t batch = 32, seq_len = 0, vocab = 8000, classes = 150;  // seq_len 0: model.max_len
  int64_t warmup = 3, steps = 10, latency_runs = 50;
  int64_t inference_runs = 0;  // timed batch inference passes; 0: as many as `steps`
  bool json = false;
  bool kernels = false;  // also time the backend's non-gemm kernels alone (train/tools/kernel_bench.h)
  bool attention = false;  // time attention alone instead of the model (train/tools/attention_bench.h)
  bool gemm_strides = false;  // time the FFN's weight-gradient gemms alone at 4 KB and padded leading dimensions
  bool mlm_dense = false;  // an MLM model decodes every position instead of the masked ones (to measure what that costs)
};

int bench_command(const BenchOptions& opt);

class EncoderModel;
// Median wall time (ms) of an eval-mode forward pass over a batch of B random sequences of T tokens.
double forward_latency_ms(EncoderModel& model, int64_t B, int64_t T, int64_t vocab, int runs);
// Wall time (s) of each of `steps` training steps (train/run/training_step.h: forward, loss, backward, clipping,
// AdamW) on a synthetic batch of B x T tokens after `warmup` untimed ones, the system allocations the timed steps
// made, and the last step's loss. A non-finite step is an error. Changes the weights.
// With a communicator of N > 1 ranks (bench under mpirun) each rank runs its shard of the B rows and the gradients
// are all-reduced as in training (train/run/gradient_reducer.h).
struct TrainingTiming {
  std::vector<double> step_seconds;
  size_t system_allocations = 0;
  double final_loss = 0;
  // data parallel only
  double allreduce_wait_s = 0;  // mean per step: waiting for gradient all-reduces after backward (not hidden by it)
  double allreduce_s = 0;       // median: one all-reduce of the whole gradient, alone (as if nothing overlapped)
  int64_t gradient_bytes = 0;
  int buckets = 0;
};
class Communicator;
// An MLM model (model.type encoder_mlm) decodes one position in 7 (pretraining's 15% of the tokens) as training
// does, or with `mlm_dense` every position.
TrainingTiming time_training_steps(EncoderModel& model, int64_t B, int64_t T, int64_t vocab, int64_t warmup,
                                   int64_t steps, Communicator* comm = nullptr, double bucket_mb = 25,
                                   bool overlap = true, bool mlm_dense = false);
// The positions an MLM bench step decodes: one in 7 of n, as pretraining chooses 15% of the tokens.
std::vector<int64_t> bench_mlm_positions(int64_t n);
double median(std::vector<double> v);
// `call` twice to warm up, then the median wall time (ms) of `runs` calls, each followed by a synchronize of `be`.
double median_call_ms(Backend& be, int runs, const std::function<void()>& call);
// p50 and p95 (ms) of the same, for latency tables.
std::pair<double, double> forward_latency_percentiles_ms(EncoderModel& model, int64_t B, int64_t T, int64_t vocab,
                                                         int runs);

}  // namespace hr
