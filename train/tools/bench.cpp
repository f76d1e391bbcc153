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
#include "models/encoder_model.h"
#include "train/run/run_config.h"
#include "train/run/training_step.h"

namespace hr {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// sgemm rate of the backend at a size typical of the model's largest matmuls, median of several runs
double sgemm_gflops(Device d, int64_t M, int64_t N, int64_t K) {
  Tensor a = Tensor::full({M, K}, 0.5f, d), b = Tensor::full({N, K}, 0.25f, d), c = Tensor::empty({M, N}, d);
  GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.transB = true;
  g.A = a.data(), g.lda = K, g.B = b.data(), g.ldb = K, g.C = c.data(), g.ldc = N;
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
  return median(rates);
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

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

TrainingTiming time_training_steps(EncoderModel& model, int64_t B, int64_t T, int64_t vocab, int64_t warmup,
                                   int64_t steps) {
  const Device d = model.device();
  const NamedTensors params = model.named_parameters();
  AdamW adamw(params, matrix_decay_flags(params), AdamWOptions{});
  TrainingStep train_step(model, adamw, StepOptions{1, 1.f});
  const EncoderInput in = random_input(model, B, T, vocab, 1);
  Backend& be = backend(d);
  // A loss for any head: cross-entropy over the output's last dimension (classes, or start/end for a span head), with
  // labels cycling through it; the step's work is the model's, whichever loss the task would use.
  Tensor labels;
  auto loss = [&](int64_t) {
    const Tensor out = model.forward(in);  // e.g. (B, classes) or (B, T, 2)
    const int64_t C = out.dim(-1), rows = out.numel() / C;
    if (!labels.defined()) {
      std::vector<int32_t> ids(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(i % C);
      labels = Tensor::from_ids(ids, {rows}, d);
    }
    Tensor l = cross_entropy(reshape(out, {rows, C}), labels);
    if (Tensor p = model.penalty(); p.defined()) l = add(l, p);
    return l;
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
  model.train(was_training);
  return timing;
}

std::pair<double, double> forward_latency_percentiles_ms(EncoderModel& model, int64_t B, int64_t T, int64_t vocab,
                                                         int runs) {
  const EncoderInput in = random_input(model, B, T, vocab, 3);
  const bool was_training = model.training();
  model.eval();
  NoGradGuard ng;
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

int bench_command(const BenchOptions& opt) {
  RunConfig rc = load_run_config(opt.config, opt.overrides);
  const Device d = rc.train.device;
  manual_seed(0);
  auto model = build_model(rc.root.child("model"), ModelDims{opt.vocab, opt.classes});
  model->to(d);
  const int64_t B = opt.batch, T = opt.seq_len > 0 ? opt.seq_len : model->max_len();

  // model FLOPs per training step: 3x the forward (forward + backward for inputs and weights)
  double fwd_per_token = 0;
  for (const auto& s : model->layer_stats(T)) fwd_per_token += s.attention_flops + s.ffn_flops;
  const double fwd_flops = fwd_per_token * static_cast<double>(B * T) +
                           2.0 * static_cast<double>(B * model->d_model() * opt.classes);
  const double train_flops = 3.0 * fwd_flops;

  const TrainingTiming timing = time_training_steps(*model, B, T, opt.vocab, opt.warmup, opt.steps);
  const std::vector<double>& step_s = timing.step_seconds;
  const size_t steady_allocs = timing.system_allocations;
  const EncoderInput in = random_input(*model, B, T, opt.vocab, 1);

  model->eval();
  std::vector<double> infer_s, latency_s;
  {
    NoGradGuard ng;
    for (int64_t i = 0; i < opt.warmup + opt.steps; ++i) {
      const auto t = Clock::now();
      model->forward(in).to_vector();
      if (i >= opt.warmup) infer_s.push_back(seconds_since(t));
    }
    const EncoderInput one = random_input(*model, 1, T, opt.vocab, 2);
    for (int64_t i = 0; i < opt.latency_runs + 5; ++i) {
      const auto t = Clock::now();
      model->forward(one).to_vector();
      if (i >= 5) latency_s.push_back(seconds_since(t));
    }
  }
  // the model's dominant gemm shape: (B*T, ffn) x (ffn, D)
  const double gemm = sgemm_gflops(d, B * T, model->d_model() * 4, model->d_model());
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);

  const double step = median(step_s), infer = median(infer_s);
  nlohmann::json j = {
      {"config", opt.config}, {"device", device_name(d)}, {"batch", B}, {"seq_len", T},
      {"parameters", model->num_parameters()},
      {"train_step_ms", step * 1e3}, {"train_tokens_per_s", static_cast<double>(B * T) / step},
      {"train_gflops", train_flops / step / 1e9},
      {"infer_batch_ms", infer * 1e3}, {"infer_tokens_per_s", static_cast<double>(B * T) / infer},
      {"infer_gflops", fwd_flops / infer / 1e9},
      {"latency_b1_p50_ms", percentile(latency_s, 0.5) * 1e3}, {"latency_b1_p95_ms", percentile(latency_s, 0.95) * 1e3},
      {"sgemm_gflops", gemm}, {"train_vs_sgemm", train_flops / step / 1e9 / gemm},
      {"peak_rss_mb", static_cast<double>(ru.ru_maxrss) / 1024.0},
      {"peak_device_mb", static_cast<double>(backend(d).peak_bytes_in_use()) / 1048576.0},
      {"steady_state_system_allocations", steady_allocs}, {"final_loss", timing.final_loss}};
  if (opt.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::printf("%s on %s: batch %lld x seq %lld, %lld parameters, median of %lld steps\n", opt.config.c_str(),
                device_name(d), static_cast<long long>(B), static_cast<long long>(T),
                static_cast<long long>(model->num_parameters()), static_cast<long long>(opt.steps));
    std::printf("  training step      %9.1f ms  %9.0f tokens/s  %7.1f GFLOP/s (model FLOPs)\n", step * 1e3,
                j["train_tokens_per_s"].get<double>(), j["train_gflops"].get<double>());
    std::printf("  inference batch    %9.1f ms  %9.0f tokens/s  %7.1f GFLOP/s\n", infer * 1e3,
                j["infer_tokens_per_s"].get<double>(), j["infer_gflops"].get<double>());
    std::printf("  batch-1 latency    p50 %.2f ms  p95 %.2f ms\n", j["latency_b1_p50_ms"].get<double>(),
                j["latency_b1_p95_ms"].get<double>());
    std::printf("  sgemm (same run)   %9.1f GFLOP/s; training reaches %.0f%% of it\n", gemm,
                100.0 * j["train_vs_sgemm"].get<double>());
    std::printf("  peak RSS %.0f MB; new system allocations during timed steps: %zu; loss of the last step %.4f\n",
                j["peak_rss_mb"].get<double>(), steady_allocs, timing.final_loss);
  }
  return 0;
}

}  // namespace hr
