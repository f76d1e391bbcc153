#include "train/tools/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "framework/autograd.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "models/attention.h"
#include "models/encoder_model.h"
#include "models/mlm_head.h"
#include "models/model_size.h"
#include "train/run/run_config.h"
#include "framework/distributed/communicator.h"
#include "train/run/data_parallel.h"
#include "train/run/gradient_reducer.h"
#include "train/run/training_step.h"
#include "train/tools/attention_bench.h"
#include "train/tools/gemm_stride_bench.h"
#include "train/tools/kernel_bench.h"

namespace hr {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// gemm rate of the backend at a size typical of the model's largest matmuls (median of several runs), with f32 or
// bf16 inputs (f32 output either way), and the kernel that ran
struct GemmRate {
  double gflops = 0;
  std::string implementation;
};
GemmRate gemm_rate(Device d, int64_t M, int64_t N, int64_t K, GemmInputs inputs) {
  const Tensor a = Tensor::full({M, K}, 0.5f, d), b = Tensor::full({N, K}, 0.25f, d);
  const bool low = inputs == GemmInputs::BF16;
  const Tensor ain = low ? autocast::to_bf16(a) : a, bin = low ? autocast::to_bf16(b) : b;
  Tensor c = Tensor::empty({M, N}, d);
  GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.transB = true, g.inputs = inputs;
  g.A = low ? static_cast<const void*>(ain.bf16()) : a.data(), g.lda = K;
  g.B = low ? static_cast<const void*>(bin.bf16()) : b.data(), g.ldb = K;
  g.C = c.data(), g.ldc = N;
  Backend& be = backend(d);
  for (int i = 0; i < 3; ++i) be.gemm(g);
  be.synchronize();
  std::vector<double> rates;
  for (int i = 0; i < 10; ++i) {
    const auto t = Clock::now();
    be.gemm(g);
    be.synchronize();
    rates.push_back(2.0 * static_cast<double>(M * N * K) / seconds_since(t) / 1e9);
  }
  return {median(rates), be.gemm_implementation(g)};
}

// B random sequences of T tokens for `model`; a model with segment embeddings (QA) gets a question-and-context split
EncoderInput random_input(const EncoderModel& model, int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(B), std::vector<int32_t>(static_cast<size_t>(T)));
  uint64_t s = seed;
  for (auto& r : rows)
    for (auto& id : r) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      id = static_cast<int32_t>((s >> 33) % static_cast<uint64_t>(vocab));
    }
  if (model.segments() == 0) return make_encoder_input(rows, 0, model.device());
  std::vector<std::vector<int32_t>> segments(static_cast<size_t>(B), std::vector<int32_t>(static_cast<size_t>(T), 0));
  for (auto& r : segments) std::fill(r.begin() + T / 4, r.end(), std::min<int32_t>(1, model.segments() - 1));
  return make_encoder_input(rows, 0, model.device(), &segments);
}

// Rank 0 prints the data-parallel figures: the step (every rank's median; the slowest rank sets the pace), the
// gradient all-reduce alone and what of it the step waited for, and the bytes a ring all-reduce moves per rank.
int report_data_parallel(const BenchOptions& opt, Communicator& comm, const TrainingTiming& timing, int64_t B,
                         int64_t T, double train_flops) {
  double slowest[3] = {median(timing.step_seconds), timing.allreduce_wait_s, timing.allreduce_s};
  comm.all_reduce_host(slowest, 3, ReduceOp::Max);
  comm.barrier();
  if (comm.rank() != 0) return 0;
  const double step = slowest[0], N = comm.size();
  const double ring_bytes = 2.0 * (N - 1) / N * static_cast<double>(timing.gradient_bytes);
  nlohmann::json j = {{"config", opt.config}, {"ranks", comm.size()}, {"communicator", comm.name()},
                      {"batch", B}, {"seq_len", T}, {"train_step_ms", step * 1e3},
                      {"train_tokens_per_s", static_cast<double>(B * T) / step},
                      {"train_gflops", train_flops / step / 1e9},
                      {"gradient_mb", static_cast<double>(timing.gradient_bytes) / 1048576.0},
                      {"buckets", timing.buckets}, {"ring_bytes_per_rank_mb", ring_bytes / 1048576.0},
                      {"allreduce_ms", slowest[2] * 1e3}, {"allreduce_share_of_step", slowest[2] / step},
                      {"allreduce_wait_ms", slowest[1] * 1e3}, {"allreduce_wait_share", slowest[1] / step},
                      {"allreduce_bus_gb_per_s", ring_bytes / slowest[2] / 1e9}, {"final_loss", timing.final_loss}};
  if (opt.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("%s on %d ranks (%s): global batch %lld x seq %lld, median of %lld steps (slowest rank)\n",
              opt.config.c_str(), comm.size(), comm.name().c_str(), static_cast<long long>(B),
              static_cast<long long>(T), static_cast<long long>(opt.steps));
  std::printf("  training step      %9.1f ms  %9.0f tokens/s  %7.1f GFLOP/s (model FLOPs)\n", step * 1e3,
              j["train_tokens_per_s"].get<double>(), j["train_gflops"].get<double>());
  std::printf("  gradient           %9.2f MB in %d buckets; a ring all-reduce moves 2(N-1)/N of it: %.2f MB per rank\n",
              j["gradient_mb"].get<double>(), timing.buckets, j["ring_bytes_per_rank_mb"].get<double>());
  std::printf("  all-reduce alone   %9.2f ms  = %.1f%% of a step (%.2f GB/s bus bandwidth)\n", slowest[2] * 1e3,
              100.0 * slowest[2] / step, j["allreduce_bus_gb_per_s"].get<double>());
  std::printf("  waited after backward %6.2f ms  = %.1f%% of a step (the part overlap with backward did not hide)\n",
              slowest[1] * 1e3, 100.0 * slowest[1] / step);
  return 0;
}

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double median_call_ms(Backend& be, int runs, const std::function<void()>& call) {
  for (int i = 0; i < 2; ++i) call();
  be.synchronize();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t = std::chrono::steady_clock::now();
    call();
    be.synchronize();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  return median(ms);
}

std::vector<int64_t> bench_mlm_positions(int64_t n) {
  std::vector<int64_t> p;
  for (int64_t i = 3; i < n; i += 7) p.push_back(i);
  return p;
}

TrainingTiming time_training_steps(EncoderModel& model, int64_t B, int64_t T, int64_t vocab, int64_t warmup,
                                   int64_t steps, Communicator* comm, double bucket_mb, bool overlap, bool mlm_dense) {
  const Device d = model.device();
  const NamedTensors params = model.named_parameters();
  AdamW adamw(params, matrix_decay_flags(params), AdamWOptions{});
  TrainingStep train_step(model, adamw, StepOptions{1, 1.f, model.precision()});
  const bool parallel = comm && comm->size() > 1;
  std::unique_ptr<GradientReducer> reducer;
  if (parallel) {
    reducer = std::make_unique<GradientReducer>(*comm, model.parameters(), train_step.gradients(), bucket_mb, overlap);
    train_step.set_sync(reducer.get());
  }
  // this rank's rows of the batch (all of it alone), weighted by their share of it in the loss
  const int64_t first = parallel ? B * comm->rank() / comm->size() : 0;
  const int64_t rows = parallel ? B * (comm->rank() + 1) / comm->size() - first : B;
  HR_CHECK(rows > 0, "bench: batch " + std::to_string(B) + " has no rows for every rank");
  const float share = static_cast<float>(rows) / static_cast<float>(B);
  const EncoderInput global = random_input(model, B, T, vocab, 1);
  EncoderInput in = global;
  if (parallel) {
    in.ids = global.ids.rows(first, rows);
    in.token_mask = global.token_mask.rows(first, rows);
    in.key_mask = global.key_mask.rows(first, rows);
    if (global.segments.defined()) in.segments = global.segments.rows(first, rows);
  }
  Backend& be = backend(d);
  // A loss for any head: cross-entropy over the output's last dimension (classes, or start/end for a span head), with
  // labels cycling through it; the step's work is the model's, whichever loss the task would use.
  Tensor labels;
  const auto* mlm = mlm_dense ? nullptr : dynamic_cast<const MlmHead*>(&model.head());
  const std::vector<int64_t> positions = bench_mlm_positions(rows * T);
  auto loss = [&](int64_t) {
    BatchRowsScope scope(parallel ? BatchRows{first, rows, B} : BatchRows{});
    // e.g. (b, classes), (b, T, 2), or an MLM head's (masked positions, V)
    const Tensor out = mlm ? mlm->logits_at(model.hidden_states(in), positions) : model.forward(in);
    const int64_t C = out.dim(-1), n = out.numel() / C;
    if (!labels.defined()) {
      std::vector<int32_t> ids(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(i % C);
      labels = Tensor::from_ids(ids, {n}, d);
    }
    Tensor l = cross_entropy(reshape(out, {n, C}), labels);
    if (Tensor p = model.penalty(); p.defined()) l = add(l, p);
    return parallel ? scale(l, share) : l;
  };
  TrainingTiming timing;
  auto step = [&]() {
    const StepResult r = train_step.run(loss, 1e-4f);
    be.synchronize();
    timing.final_loss = r.loss;
    HR_CHECK(r.applied, "bench: the training step's loss or gradient is not finite (loss " + std::to_string(r.loss) +
                            "): its timing would mean nothing");
  };
  const bool was_training = model.training();
  model.train();
  for (int64_t i = 0; i < warmup; ++i) step();
  const size_t allocs_before = be.system_allocations();
  for (int64_t i = 0; i < steps; ++i) {
    const auto t = Clock::now();
    step();
    timing.step_seconds.push_back(seconds_since(t));
  }
  timing.system_allocations = be.system_allocations() - allocs_before;
  if (parallel) {
    const ReducerStats st = reducer->stats();
    timing.allreduce_wait_s = st.wait_s / static_cast<double>(warmup + steps);
    timing.gradient_bytes = st.gradient_bytes;
    timing.buckets = st.buckets;
    std::vector<double> alone;  // the whole gradient's all-reduce with nothing to overlap it (changes the gradients)
    for (int64_t i = 0; i < steps; ++i) {
      const auto t = Clock::now();
      reducer->finish(train_step.gradients());
      alone.push_back(seconds_since(t));
    }
    timing.allreduce_s = median(alone);
  }
  model.train(was_training);
  return timing;
}

std::pair<double, double> forward_latency_percentiles_ms(EncoderModel& model, int64_t B, int64_t T, int64_t vocab,
                                                         int runs) {
  const EncoderInput in = random_input(model, B, T, vocab, 3);
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
  const AutocastScope autocast(model.precision(), model.parameters());  // bf16 weight copies made once, as a server would
  std::vector<double> ms;
  for (int i = 0; i < runs + 3; ++i) {
    const auto t = Clock::now();
    model.forward(in).to_vector();
    if (i >= 3) ms.push_back(seconds_since(t) * 1e3);
  }
  model.train(was_training);
  return {percentile(ms, 0.5), percentile(ms, 0.95)};
}

double forward_latency_ms(EncoderModel& model, int64_t B, int64_t T, int64_t vocab, int runs) {
  return forward_latency_percentiles_ms(model, B, T, vocab, runs).first;
}

namespace {

// bench --attention: attention alone on the first heads layer's shape (train/tools/attention_bench.h), one JSON
// object a path and precision with --json
int attention_bench(const BenchOptions& opt, const EncoderModel& model, Device d) {
  const MultiHeadAttention* attn = nullptr;
  for (size_t i = 0; i < model.num_layers() && !attn; ++i)
    if (const AttentionHeads* h = model.layer(i).heads(); h && h->num_heads() > 0)
      attn = dynamic_cast<const MultiHeadAttention*>(&h->heads_module());
  if (!attn) throw UsageError("bench --attention: " + opt.config + " has no multi-head attention layer with heads");
  const AttentionOptions& a = attn->options();
  const int64_t B = opt.batch, T = opt.seq_len > 0 ? opt.seq_len : model.max_len();
  const int runs = static_cast<int>(std::max<int64_t>(opt.steps, 3));
  const std::vector<AttentionTiming> rows = time_attention(d, B, T, a.heads, a.head_dim, a.dropout, runs);
  const double flops = attention_forward_flops(B, T, a.heads, a.head_dim);
  if (!opt.json)
    std::printf("attention alone on %s: batch %lld x seq %lld, %lld heads of %lld, dropout %.2f, median of %d runs\n",
                device_name(d), static_cast<long long>(B), static_cast<long long>(T), static_cast<long long>(a.heads),
                static_cast<long long>(a.head_dim), a.dropout, runs);
  for (const AttentionTiming& r : rows) {
    const double tflops = 3.5 * flops / (r.forward_backward_ms * 1e-3) / 1e12;
    if (opt.json) {
      const nlohmann::json j = {{"framework", "headroom"}, {"device", device_name(d)}, {"path", r.path},
                                {"precision", r.precision}, {"batch", B}, {"seq_len", T}, {"heads", a.heads},
                                {"head_dim", a.head_dim}, {"dropout", a.dropout}, {"forward_ms", r.forward_ms},
                                {"forward_backward_ms", r.forward_backward_ms}, {"forward_backward_tflops", tflops}};
      std::cout << j.dump() << "\n";
    } else {
      std::printf("  %-8s %-5s forward %9.3f ms   forward + backward %9.3f ms  %7.2f TFLOP/s\n", r.path.c_str(),
                  r.precision.c_str(), r.forward_ms, r.forward_backward_ms, tflops);
    }
  }
  return 0;
}

// bench --gemm-strides: the FFN's weight-gradient products alone (train/tools/gemm_stride_bench.h) at the config's
// d_ff and --batch x --seq-len tokens, one JSON object a product with --json
int gemm_stride_bench(const BenchOptions& opt, const EncoderModel& model, Device d) {
  if (d != Device::CPU) throw UsageError("bench --gemm-strides times oneDNN's CPU gemm: set train.device: cpu");
  const int64_t T = opt.seq_len > 0 ? opt.seq_len : model.max_len(), K = opt.batch * T;
  const int64_t wide = model.layer_stats(T).front().ffn_dim;
  const int runs = static_cast<int>(std::max<int64_t>(opt.steps, 3));
  if (!opt.json)
    std::printf("FFN weight-gradient gemms on %s: K = %lld tokens, the (K, %lld) activations read along K at leading "
                "dimension %lld (%s) or %lld, median of %d runs alternating\n"
                "  operand  narrow   in place ms   padded layout ms   default ms   in place / padded   default copies\n",
                device_name(d), static_cast<long long>(K), static_cast<long long>(wide), static_cast<long long>(wide),
                wide * 4 % 4096 == 0 ? "a multiple of 4 KB" : "not a multiple of 4 KB",
                static_cast<long long>(wide + 16), runs);
  for (const GemmStrideTiming& r : time_gemm_strides(K, wide, runs)) {
    if (opt.json) {
      const nlohmann::json j = {{"operand", r.operand}, {"K", K}, {"wide", wide}, {"narrow", r.narrow},
                                {"in_place_ms", r.in_place_ms}, {"padded_layout_ms", r.padded_layout_ms},
                                {"default_ms", r.default_ms}, {"default_copies", r.default_copies}};
      std::cout << j.dump() << "\n";
    } else {
      std::printf("  %-7s %7lld %13.3f %18.3f %12.3f %19.2f   %s\n", r.operand.c_str(),
                  static_cast<long long>(r.narrow), r.in_place_ms, r.padded_layout_ms, r.default_ms,
                  r.in_place_ms / r.padded_layout_ms, r.default_copies ? "yes" : "no");
    }
  }
  return 0;
}

// Model FLOPs of one forward pass over a batch of B x T tokens, and of a training step: 3x the forward (forward +
// backward for inputs and weights).
struct BenchFlops {
  double forward = 0, train = 0;
};

BenchFlops bench_flops(const EncoderModel& model, const BenchOptions& opt, int64_t B, int64_t T) {
  double fwd_per_token = 0;
  for (const auto& s : model.layer_stats(T)) fwd_per_token += s.attention_flops + s.ffn_flops;
  const double D = static_cast<double>(model.d_model());
  const auto* mlm = dynamic_cast<const MlmHead*>(&model.head());
  const double head_flops =  // the MLM head: dense D x D and the decoder D x V at every decoded position
      mlm ? static_cast<double>(opt.mlm_dense ? B * T : static_cast<int64_t>(bench_mlm_positions(B * T).size())) *
                (2.0 * D * D + 2.0 * D * static_cast<double>(mlm->bias.dim(0)))
          : 2.0 * static_cast<double>(B) * D * static_cast<double>(opt.classes);
  const double forward = fwd_per_token * static_cast<double>(B * T) + head_flops;
  return {forward, 3.0 * forward};
}

// Seconds of each timed forward pass: of the batch (after --warmup passes), and of one row (batch-1 latency).
struct InferenceTiming {
  std::vector<double> batch_s, latency_s;
};

InferenceTiming time_inference(EncoderModel& model, const BenchOptions& opt, const EncoderInput& in, int64_t T) {
  InferenceTiming t;
  model.eval();
  NoGradGuard ng;
  const AutocastScope autocast(model.precision(), model.parameters());
  const int64_t runs = opt.inference_runs > 0 ? opt.inference_runs : opt.steps;
  for (int64_t i = 0; i < opt.warmup + runs; ++i) {
    const auto start = Clock::now();
    model.forward(in).to_vector();
    if (i >= opt.warmup) t.batch_s.push_back(seconds_since(start));
  }
  const EncoderInput one = random_input(model, 1, T, opt.vocab, 2);
  for (int64_t i = 0; i < opt.latency_runs + 5; ++i) {
    const auto start = Clock::now();
    model.forward(one).to_vector();
    if (i >= 5) t.latency_s.push_back(seconds_since(start));
  }
  return t;
}

// The device's gemm rates at the model's dominant shape, (B*T, ffn) x (ffn, D): f32 and, where it has it, bf16.
struct GemmRates {
  GemmRate f32, bf16;
  bool has_bf16 = false;
  std::string bf16_why;  // without bf16: why not
};

GemmRates gemm_rates(Device d, int64_t rows, int64_t d_model) {
  GemmRates g;
  g.f32 = gemm_rate(d, rows, d_model * 4, d_model, GemmInputs::F32);
  g.has_bf16 = backend(d).bf16_support(&g.bf16_why) != Backend::Bf16::None;
  if (g.has_bf16) g.bf16 = gemm_rate(d, rows, d_model * 4, d_model, GemmInputs::BF16);
  return g;
}

void print_bench(const BenchOptions& opt, const nlohmann::json& j, const GemmRates& g,
                 const std::vector<KernelTiming>& kernels) {
  std::printf("%s on %s in %s: batch %lld x seq %lld, %lld parameters, median of %lld steps\n", opt.config.c_str(),
              j["device"].get<std::string>().c_str(), j["precision"].get<std::string>().c_str(),
              static_cast<long long>(j["batch"].get<int64_t>()), static_cast<long long>(j["seq_len"].get<int64_t>()),
              static_cast<long long>(j["parameters"].get<int64_t>()), static_cast<long long>(opt.steps));
  std::printf("  training step      %9.1f ms  %9.0f tokens/s  %7.1f GFLOP/s (model FLOPs)\n",
              j["train_step_ms"].get<double>(), j["train_tokens_per_s"].get<double>(), j["train_gflops"].get<double>());
  std::printf("  inference batch    %9.1f ms  %9.0f tokens/s  %7.1f GFLOP/s\n", j["infer_batch_ms"].get<double>(),
              j["infer_tokens_per_s"].get<double>(), j["infer_gflops"].get<double>());
  std::printf("  batch-1 latency    p50 %.2f ms  p95 %.2f ms\n", j["latency_b1_p50_ms"].get<double>(),
              j["latency_b1_p95_ms"].get<double>());
  std::printf("  f32 gemm (same run) %8.1f GFLOP/s  %s\n", g.f32.gflops, g.f32.implementation.c_str());
  if (g.has_bf16)
    std::printf("  bf16 gemm (same run) %7.1f GFLOP/s  %s\n", g.bf16.gflops, g.bf16.implementation.c_str());
  else
    std::printf("  bf16 gemm          none: %s\n", g.bf16_why.c_str());
  std::printf("  training reaches %.0f%% of the %s gemm rate\n", 100.0 * j["train_vs_gemm"].get<double>(),
              j["precision"].get<std::string>().c_str());
  std::printf("  peak RSS %.0f MB; new system allocations during timed steps: %zu; loss of the last step %.4f\n",
              j["peak_rss_mb"].get<double>(), j["steady_state_system_allocations"].get<size_t>(),
              j["final_loss"].get<double>());
  if (!kernels.empty()) std::printf("  kernels alone (median per call; bytes as each kernel reads and writes them):\n");
  for (const KernelTiming& k : kernels)
    std::printf("    %-26s %10lld elements %9.1f us %7.1f GB/s\n", k.name.c_str(), static_cast<long long>(k.elements),
                k.median_us, k.bytes / k.median_us / 1e3);
}

}  // namespace

int bench_command(const BenchOptions& opt) {
  RunConfig rc = load_run_config(opt.config, opt.overrides);
  const Device d = rc.train.device;
  const Precision precision = rc.train.precision;
  if (const std::string w = check_precision(d, precision, opt.config + ": train.precision (or --precision)"); !w.empty())
    std::cerr << w << "\n";
  manual_seed(0);
  auto model = build_model(rc.root.child("model"), ModelDims{opt.vocab, opt.classes});
  rc.root.check_all_read();  // the keys train would refuse (train.lerning_rate), refused here too
  if (opt.attention) return attention_bench(opt, *model, d);
  if (opt.gemm_strides) return gemm_stride_bench(opt, *model, d);
  model->to(d);
  model->set_precision(precision);
  const int64_t B = opt.batch, T = opt.seq_len > 0 ? opt.seq_len : model->max_len();
  if (const std::string p = training_memory_problem(static_cast<double>(model->num_parameters()),
                                                    static_cast<int64_t>(model->num_layers()), model->d_model(), B, T);
      !p.empty())
    throw UsageError("bench --batch " + std::to_string(B) + " (--seq-len " + std::to_string(T) + "): " + p);
  const BenchFlops flops = bench_flops(*model, opt, B, T);

  // under mpirun: the ranks split the batch as `headroom train` does; the report is rank 0's
  const std::unique_ptr<Communicator> comm = make_communicator(d, rc.train.dp_timeout_s);
  if (comm->size() > 1) broadcast_parameters(*comm, model->parameters());
  const TrainingTiming timing = time_training_steps(*model, B, T, opt.vocab, opt.warmup, opt.steps, comm.get(),
                                                    rc.train.dp_bucket_mb, rc.train.dp_overlap, opt.mlm_dense);
  if (comm->size() > 1) return report_data_parallel(opt, *comm, timing, B, T, flops.train);
  const InferenceTiming inference = time_inference(*model, opt, random_input(*model, B, T, opt.vocab, 1), T);
  const GemmRates g = gemm_rates(d, B * T, model->d_model());
  const double gemm = precision == Precision::BF16 ? g.bf16.gflops : g.f32.gflops;  // what training could reach
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::vector<KernelTiming> kernels;  // after the peak RSS was read: their buffers are not the model's
  if (opt.kernels) {
    const LayerStats first = model->layer_stats(T).front();
    kernels = time_kernels(d, B * T, model->d_model(), first.ffn_dim, B * first.heads * T, T, model->num_parameters(),
                           static_cast<int>(std::max<int64_t>(opt.steps, 5)));
  }

  const double step = median(timing.step_seconds), infer = median(inference.batch_s);
  const std::vector<double>& latency_s = inference.latency_s;
  nlohmann::json j = {
      {"config", opt.config}, {"device", device_name(d)}, {"precision", precision_name(precision)},
      {"batch", B}, {"seq_len", T},
      {"parameters", model->num_parameters()},
      {"train_step_ms", step * 1e3}, {"train_tokens_per_s", static_cast<double>(B * T) / step},
      {"train_gflops", flops.train / step / 1e9},
      {"infer_batch_ms", infer * 1e3}, {"infer_tokens_per_s", static_cast<double>(B * T) / infer},
      {"infer_gflops", flops.forward / infer / 1e9},
      {"latency_b1_p50_ms", percentile(latency_s, 0.5) * 1e3}, {"latency_b1_p95_ms", percentile(latency_s, 0.95) * 1e3},
      {"sgemm_gflops", g.f32.gflops}, {"sgemm_implementation", g.f32.implementation},
      {"bf16_gemm_gflops", g.bf16.gflops}, {"bf16_gemm_implementation", g.has_bf16 ? g.bf16.implementation : g.bf16_why},
      {"train_vs_gemm", flops.train / step / 1e9 / gemm},
      {"peak_rss_mb", static_cast<double>(ru.ru_maxrss) / 1024.0},
      {"peak_device_mb", static_cast<double>(backend(d).peak_bytes_in_use()) / 1048576.0},
      {"steady_state_system_allocations", timing.system_allocations}, {"final_loss", timing.final_loss}};
  for (const KernelTiming& k : kernels)
    j["kernels"][k.name] = {{"elements", k.elements}, {"us", k.median_us}, {"gb_per_s", k.bytes / k.median_us / 1e3}};
  if (opt.json) std::cout << j.dump() << "\n";
  else print_bench(opt, j, g, kernels);
  return 0;
}

}  // namespace hr
