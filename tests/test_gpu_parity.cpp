// The framework on the GPU against the framework on the CPU: every op of framework/ops.h runs forward and backward on
// the same inputs on Device::CPU and on Device::CUDA (copied with Tensor::to), and the outputs and input gradients
// must agree; then one whole training step of a small EncoderModel (talking heads and L0 gates on one layer) moved
// with Module::to: loss, every parameter gradient, the clipped norm and the AdamW-updated weights.
//
// Agreement is a relative error below 1e-4, measured against max(|cpu|, 1% of the tensor's largest |cpu|) so that
// entries near zero produced by cancelling sums are judged on the tensor's scale (the backends add in different
// orders). That holds with cuBLAS in full FP32, the default. With HR_CUDA_TF32=1 the gemm inputs are rounded to a
// 10-bit mantissa and errors of about 1e-3 are expected: these tests are meant to run without it.
// Dropout masks and uniform noise come from the same counter-based stream on both devices and must be identical.
//
// Every case is in test suite "gpu": without a CUDA device (or in a build without CUDA) tests/gpu_test_main.cpp
// filters them out, doctest counts them as skipped, and the executable exits 77 (meson: SKIP).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "framework/autograd.h"
#include "framework/config.h"
#include "kernels/base/error.h"
#include "framework/ops.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "models/encoder_layer.h"
#include "models/encoder_model.h"
#include "train/run/training_step.h"

using namespace hr;

TEST_SUITE_BEGIN("gpu");

namespace {

constexpr double kRtol = 1e-4;  // f32 on both sides; ~1e-3 would be needed under HR_CUDA_TF32=1
constexpr uint64_t kSeed = 4321;

using V = std::vector<Tensor>;
using Fn = std::function<V(const V&)>;

std::vector<float> random_values(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// A CPU leaf with uniform values in [lo, hi); `grad` marks it differentiable.
Tensor input(const Shape& s, uint32_t seed, bool grad = true, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::from_vector(random_values(shape_numel(s), seed, lo, hi), s);
  if (grad) t.set_requires_grad(true);
  return t;
}

// A 0/1 f32 mask on the CPU (not differentiable).
Tensor binary_mask(const Shape& s, uint32_t seed) {
  std::vector<float> v = random_values(shape_numel(s), seed, 0.f, 1.f);
  for (float& x : v) x = x < 0.4f ? 1.f : 0.f;
  return Tensor::from_vector(v, s);
}

// Worst |gpu - cpu| / max(|cpu|, floor) with floor = 1% of the largest |cpu| unless given.
double max_rel_error(const std::vector<float>& gpu, const std::vector<float>& cpu, double floor = -1) {
  REQUIRE(gpu.size() == cpu.size());
  if (floor < 0) {
    double scale = 0;
    for (float c : cpu) scale = std::max(scale, static_cast<double>(std::fabs(c)));
    floor = 0.01 * scale;
  }
  double worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (std::isnan(gpu[i]) != std::isnan(cpu[i])) return INFINITY;
    if (std::isnan(cpu[i])) continue;
    const double denom = std::max({static_cast<double>(std::fabs(cpu[i])), floor, 1e-30});
    worst = std::max(worst, std::fabs(static_cast<double>(gpu[i]) - cpu[i]) / denom);
  }
  return worst;
}

void expect_close(const std::string& what, const Tensor& gpu, const Tensor& cpu, double floor = -1) {
  INFO(what);
  REQUIRE(gpu.defined() == cpu.defined());
  if (!cpu.defined()) return;
  CHECK(gpu.device() == Device::CUDA);
  CHECK(cpu.device() == Device::CPU);
  REQUIRE(gpu.shape() == cpu.shape());
  const double err = max_rel_error(gpu.to_vector(), cpu.to_vector(), floor);
  INFO("max relative error " << err);
  CHECK(err < kRtol);
}

struct Run {
  V outputs, grads;  // grads[i]: gradient of input i (undefined where it does not require grad)
};

// f on copies of `inputs` placed on d, then backward of sum_k sum(out_k * R_k) for fixed weights R_k (every output
// element matters, each with its own weight). The random stream is reset first, so dropout and noise draw alike.
Run run_on(Device d, const Fn& f, const V& inputs) {
  V xs;
  for (const Tensor& t : inputs) {
    Tensor x = d == Device::CPU ? t.clone() : t.to(d);
    if (t.requires_grad()) x.set_requires_grad(true);
    xs.push_back(x);
  }
  manual_seed(kSeed);
  Run r;
  r.outputs = f(xs);
  Tensor loss;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const Tensor& y = r.outputs[k];
    const Tensor R = Tensor::from_vector(random_values(y.numel(), 100 + static_cast<uint32_t>(k), 0.5f, 1.5f),
                                         y.shape(), d);
    Tensor term = sum(mul(y, R));
    loss = loss.defined() ? add(loss, term) : term;
  }
  if (loss.defined() && loss.requires_grad()) backward(loss);
  for (const Tensor& x : xs) r.grads.push_back(x.requires_grad() ? x.grad() : Tensor());
  return r;
}

// Runs f on both devices and compares every output and every input gradient.
void check_parity(const std::string& name, const Fn& f, const V& inputs) {
  INFO(name);
  const Run cpu = run_on(Device::CPU, f, inputs);
  const Run gpu = run_on(Device::CUDA, f, inputs);
  REQUIRE(cpu.outputs.size() == gpu.outputs.size());
  for (size_t k = 0; k < cpu.outputs.size(); ++k)
    expect_close(name + ": output " + std::to_string(k), gpu.outputs[k], cpu.outputs[k]);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    REQUIRE_MESSAGE(cpu.grads[i].defined(), name << ": input " << i << " got no gradient on the CPU");
    expect_close(name + ": gradient of input " + std::to_string(i), gpu.grads[i], cpu.grads[i]);
  }
}

// f applied to one tensor, wrapped as an Fn with one output.
Fn one(std::function<Tensor(const V&)> f) {
  return [f](const V& x) { return V{f(x)}; };
}

}  // namespace

TEST_CASE("gpu parity: broadcasting arithmetic and mask_fill") {
  const Shape btd{2, 3, 4};
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {{btd, btd}, {btd, {4}}, {{2, 1, 4}, {1, 3, 1}}, {{3, 1}, {3, 4}}, {{}, btd}};
  for (const Case& c : cases) {
    const std::string shapes = shape_str(c.a) + " and " + shape_str(c.b);
    const V in{input(c.a, 1), input(c.b, 2)};
    const V pos{input(c.a, 1), input(c.b, 2, true, 0.5f, 2.f)};  // divisor away from zero
    check_parity("add " + shapes, one([](const V& x) { return add(x[0], x[1]); }), in);
    check_parity("sub " + shapes, one([](const V& x) { return sub(x[0], x[1]); }), in);
    check_parity("mul " + shapes, one([](const V& x) { return mul(x[0], x[1]); }), in);
    check_parity("div " + shapes, one([](const V& x) { return div(x[0], x[1]); }), pos);
  }
  check_parity("mask_fill (B, T, 1) mask", one([](const V& x) { return mask_fill(x[0], x[1], -3.f); }),
               {input(btd, 3), binary_mask({2, 3, 1}, 4)});
  check_parity("mask_fill full mask", one([](const V& x) { return mask_fill(x[0], x[1], 7.f); }),
               {input(btd, 5), binary_mask(btd, 6)});
  check_parity("sum_to", one([](const V& x) { return sum_to(x[0], {3, 1}); }), {input(btd, 7)});
}

TEST_CASE("gpu parity: unary ops") {
  const Shape s{3, 5, 7};
  const Tensor x = input(s, 11, true, -2.f, 2.f);
  const Tensor positive = input(s, 12, true, 0.1f, 3.f);  // log, sqrt, pow
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> f;
    bool positive;
  };
  const std::vector<Case> cases = {
      {"scale", [](const Tensor& t) { return scale(t, -1.7f); }, false},
      {"add_scalar", [](const Tensor& t) { return add_scalar(t, 0.3f); }, false},
      {"neg", [](const Tensor& t) { return neg(t); }, false},
      {"exp", [](const Tensor& t) { return exp(t); }, false},
      {"log", [](const Tensor& t) { return log(t); }, true},
      {"sigmoid", [](const Tensor& t) { return sigmoid(t); }, false},
      {"tanh", [](const Tensor& t) { return tanh(t); }, false},
      {"relu", [](const Tensor& t) { return relu(t); }, false},
      {"gelu", [](const Tensor& t) { return gelu(t); }, false},
      {"sqrt", [](const Tensor& t) { return sqrt(t); }, true},
      {"square", [](const Tensor& t) { return square(t); }, false},
      {"pow", [](const Tensor& t) { return pow(t, 1.5f); }, true},
      {"clamp", [](const Tensor& t) { return clamp(t, -0.5f, 0.8f); }, false},
  };
  for (const Case& c : cases)
    check_parity(c.name, one([f = c.f](const V& in) { return f(in[0]); }), {c.positive ? positive : x});
}

TEST_CASE("gpu parity: matmul (transposes, batches, broadcast operands) and linear") {
  const int64_t M = 5, K = 6, N = 7;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const Shape a2 = ta ? Shape{K, M} : Shape{M, K}, b2 = tb ? Shape{N, K} : Shape{K, N};
      const Shape a4 = ta ? Shape{2, 3, K, M} : Shape{2, 3, M, K}, b4 = tb ? Shape{2, 3, N, K} : Shape{2, 3, K, N};
      const std::string flags = std::string(ta ? " A^T" : "") + (tb ? " B^T" : "");
      const Fn f = one([ta, tb](const V& x) { return matmul(x[0], x[1], ta != 0, tb != 0); });
      check_parity("matmul 2-d" + flags, f, {input(a2, 21), input(b2, 22)});
      check_parity("matmul batched" + flags, f, {input(a4, 23), input(b4, 24)});
      check_parity("matmul batched @ 2-d" + flags, f, {input(a4, 25), input(b2, 26)});
      check_parity("matmul 2-d @ batched" + flags, f, {input(a2, 27), input(b4, 28)});
    }
  }
  check_parity("matmul constant operand", one([](const V& x) { return matmul(x[0], x[1]); }),
               {input({4, M, K}, 29), input({K, N}, 30, false)});
  const Fn lin = one([](const V& x) { return linear(x[0], x[1], x.size() > 2 ? x[2] : Tensor()); });
  check_parity("linear with bias", lin, {input({2, 3, K}, 31), input({N, K}, 32), input({N}, 33)});
  check_parity("linear without bias", lin, {input({4, K}, 34), input({N, K}, 35)});
}

TEST_CASE("gpu parity: shape ops") {
  const Shape s{2, 3, 4, 5};
  const Tensor x = input(s, 41);
  check_parity("reshape", one([](const V& in) { return reshape(in[0], {6, -1}); }), {x});
  check_parity("permute", one([](const V& in) { return permute(in[0], {2, 0, 3, 1}); }), {x});
  check_parity("transpose", one([](const V& in) { return transpose(in[0], 1, -1); }), {x});
  check_parity("concat", one([](const V& in) { return concat({in[0], in[1], in[2]}, 1); }),
               {input({2, 1, 4}, 42), input({2, 3, 4}, 43), input({2, 2, 4}, 44)});
  check_parity("split", [](const V& in) { return split(in[0], {1, 3, 1}, 3); }, {x});
  check_parity("slice", one([](const V& in) { return slice(in[0], 2, 1, 3); }), {x});
  check_parity("select", one([](const V& in) { return select(in[0], 1, 2); }), {x});
  // repeated indices: the backward must add both rows' gradients
  check_parity("index_select0", one([](const V& in) { return index_select0(in[0], {3, 0, 3, 1}); }),
               {input({5, 2, 3}, 45)});
}

TEST_CASE("gpu parity: reductions") {
  const Tensor x = input({3, 4, 5}, 51);
  check_parity("sum all", one([](const V& in) { return sum(in[0]); }), {x});
  check_parity("mean all", one([](const V& in) { return mean(in[0]); }), {x});
  for (int dim : {0, 1, -1}) {
    for (bool keep : {false, true}) {
      const std::string d = " dim " + std::to_string(dim) + (keep ? " keepdim" : "");
      check_parity("sum" + d, one([dim, keep](const V& in) { return sum(in[0], dim, keep); }), {x});
      check_parity("mean" + d, one([dim, keep](const V& in) { return mean(in[0], dim, keep); }), {x});
    }
  }
}

TEST_CASE("gpu parity: softmax, log_softmax, layer_norm, embedding") {
  const int64_t B = 2, H = 3, T = 5;
  const Tensor logits = input({B, H, T, T}, 61, true, -3.f, 3.f);
  // key mask (B, T): batch 0 has 3 tokens, batch 1 has none (a fully masked row is uniform)
  std::vector<float> km(static_cast<size_t>(B * T), -1e9f);
  for (int t = 0; t < 3; ++t) km[static_cast<size_t>(t)] = 0.f;
  const Tensor key_mask = Tensor::from_vector(km, {B, T});
  check_parity("softmax", one([](const V& in) { return softmax(in[0]); }), {logits});
  check_parity("softmax scaled", one([](const V& in) { return softmax(in[0], Tensor(), 0.35f); }), {logits});
  check_parity("softmax masked and scaled", one([](const V& in) { return softmax(in[0], in[1], 0.35f); }),
               {logits, key_mask});
  check_parity("log_softmax", one([](const V& in) { return log_softmax(in[0]); }), {logits});
  // log_softmax with a finite additive mask (-1e9 would give -1e9 outputs, compared fine but uninformative)
  check_parity("log_softmax masked", one([](const V& in) { return log_softmax(in[0], in[1]); }),
               {logits, input({B, T}, 62, false, -2.f, 0.f)});

  check_parity("layer_norm", one([](const V& in) { return layer_norm(in[0], in[1], in[2], 1e-5f); }),
               {input({4, 3, 16}, 63, true, -2.f, 3.f), input({16}, 64, true, 0.5f, 1.5f), input({16}, 65)});

  const Tensor ids = Tensor::from_ids({3, 0, 3, 7, 2, 3}, {2, 3});  // repeated ids accumulate in the backward
  check_parity("embedding", one([](const V& in) { return embedding(in[0], in[1]); }), {input({8, 5}, 66), ids});
}

TEST_CASE("gpu parity: fused_attention, the CUDA kernel against the CPU's, with padded sequences and dropout") {
  // 70 keys: a block of 64 and one of 6; sequence 0 pads its last 20 keys, sequence 1 all of them (fully padded rows)
  const int64_t B = 2, T = 70, H = 3, Dh = 16;
  std::vector<float> km(static_cast<size_t>(B * T), 0.f);
  for (int64_t t = 50; t < B * T; ++t) km[static_cast<size_t>(t)] = -1e9f;  // keys 50..69 of sequence 0, all of 1
  const Tensor key_mask = Tensor::from_vector(km, {B, T});
  for (const float p : {0.f, 0.2f}) {
    const std::string drop = " p " + std::to_string(p);
    const Fn f = one([p](const V& x) { return fused_attention(x[0], x[1], x[2], H, x[3], 0.25f, p, true); });
    check_parity("fused_attention" + drop, f,
                 {input({B, T, H * Dh}, 301, true, -2.f, 2.f), input({B, T, H * Dh}, 302, true, -2.f, 2.f),
                  input({B, T, H * Dh}, 303), key_mask});
    check_parity("fused_attention, 5 queries and 70 keys" + drop, f,
                 {input({B, 5, H * Dh}, 304, true, -2.f, 2.f), input({B, T, H * Dh}, 305, true, -2.f, 2.f),
                  input({B, T, H * Dh}, 306), key_mask});
  }
}

TEST_CASE("gpu parity: dropout masks and uniform noise are identical") {
  const Tensor x = input({6, 50}, 71, true, 0.5f, 1.5f);  // no zeros in x: a zero output is a dropped element
  check_parity("dropout", one([](const V& in) { return dropout(in[0], 0.3f, true); }), {x});
  check_parity("dropout in eval mode", one([](const V& in) { return dropout(in[0], 0.3f, false); }), {x});

  manual_seed(kSeed);
  const std::vector<float> yc = dropout(x, 0.3f, true).to_vector();
  manual_seed(kSeed);
  const std::vector<float> yg = dropout(x.to(Device::CUDA), 0.3f, true).to_vector();
  int64_t dropped = 0;
  for (size_t i = 0; i < yc.size(); ++i) {
    CHECK((yc[i] == 0.f) == (yg[i] == 0.f));
    dropped += yc[i] == 0.f;
  }
  CHECK(dropped > 50);  // about 30% of 300
  CHECK(dropped < 130);

  manual_seed(kSeed);
  const std::vector<float> uc = rand_uniform({1000}, Device::CPU).to_vector();
  manual_seed(kSeed);
  const std::vector<float> ug = rand_uniform({1000}, Device::CUDA).to_vector();
  CHECK(uc == ug);  // bit-identical: the same counter-based functor on both devices
  CHECK(global_generator().offset == 1000);
}

TEST_CASE("gpu parity: cross_entropy with ignore_index and label smoothing") {
  const Tensor logits = input({6, 5}, 81, true, -3.f, 3.f);
  const Tensor labels = Tensor::from_ids({1, -100, 4, 0, -100, 2}, {6});
  for (float s : {0.f, 0.1f}) {
    for (int32_t ignore : {-100, 4}) {
      const std::string name = "cross_entropy smoothing " + std::to_string(s) + " ignore " + std::to_string(ignore);
      // ignore_index 4 makes label -100 invalid: use it only where every label is in range or 4
      const Tensor lab = ignore == -100 ? labels : Tensor::from_ids({1, 4, 4, 0, 3, 2}, {6});
      check_parity(name, one([s, ignore](const V& in) { return cross_entropy(in[0], in[1], ignore, s); }),
                   {logits, lab});
    }
  }
  check_parity("cross_entropy, every row ignored", one([](const V& in) { return cross_entropy(in[0], in[1]); }),
               {logits, Tensor::from_ids(std::vector<int32_t>(6, -100), {6})});
}

TEST_CASE("gpu: ops refuse operands on different devices") {
  const Tensor c = input({2, 4}, 91, false), g = c.to(Device::CUDA);
  const Tensor w = input({4}, 92, false);
  CHECK_THROWS_AS(add(g, c), Error);
  CHECK_THROWS_AS(matmul(g, input({4, 3}, 93, false)), Error);
  CHECK_THROWS_AS(mask_fill(g, binary_mask({2, 4}, 94), 0.f), Error);
  CHECK_THROWS_AS(layer_norm(g, w, w), Error);
  CHECK_THROWS_AS(linear(g, input({3, 4}, 95, false).to(Device::CUDA), input({3}, 96, false)), Error);
  CHECK_THROWS_AS(embedding(input({8, 4}, 97, false).to(Device::CUDA), Tensor::from_ids({1, 2}, {2})), Error);
  CHECK_THROWS_AS(cross_entropy(g, Tensor::from_ids({1, 2}, {2})), Error);
}

namespace {

const char* kModelYaml = R"(model:
  type: encoder_classifier
  d_model: 32
  ffn_dim: 48
  max_len: 16
  norm: pre
  dropout: 0.1
  pooling: mean
  layers:
    - attention: {heads: 4, head_dim: 8, talking_heads: true, gates: {type: l0, lambda: 0.05}}
    - attention: {heads: 2, head_dim: 12}
)";

std::unique_ptr<EncoderModel> small_model() {
  manual_seed(77);  // the same initial weights for both copies
  return build_model(Config::parse(kModelYaml, "gpu_parity.yaml").child("model"), ModelDims{40, 5});
}

struct ParityStep {
  float loss = 0, norm = 0;
  NamedTensors grads, weights;
};

// One training step as the trainer runs it (train/run/training_step.h): forward, cross-entropy (smoothing, an ignored
// row) + gate penalty, backward, clipping, AdamW.
ParityStep train_step(EncoderModel& model, Device d, Precision precision = Precision::F32) {
  const std::vector<std::vector<int32_t>> rows = {{2, 5, 9, 11, 3, 7, 7, 1, 30, 39}, {4, 8, 15, 16, 23, 2},
                                                  {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
  const EncoderInput in = make_encoder_input(rows, 0, d);
  const Tensor labels = Tensor::from_ids({3, -100, 1}, {3}, d);
  const NamedTensors params = model.named_parameters();
  AdamW adamw(params, matrix_decay_flags(params), AdamWOptions{});
  for (const auto& [n, m] : adamw.state()) CHECK(m.device() == d);
  TrainingStep step(model, adamw, StepOptions{1, 0.05f, precision});

  manual_seed(99);  // the same dropout masks and gate noise on both devices
  model.train();
  const StepResult s = step.run(
      [&](int64_t) { return add(cross_entropy(model.forward(in), labels, -100, 0.1f), model.penalty()); }, 1e-3f);
  CHECK(s.applied);
  ParityStep r;
  r.loss = static_cast<float>(s.loss);
  r.norm = s.grad_norm;
  for (const auto& [n, p] : model.named_parameters()) r.grads.emplace_back(n, p.grad());  // clipped, as AdamW saw them
  for (const auto& [n, p] : model.named_parameters()) r.weights.emplace_back(n, p.clone());
  return r;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TEST_CASE("gpu parity: a bf16 training step (cuBLAS bf16 gemms) against the CPU's bf16 step (oneDNN)") {
  auto cpu = small_model();
  auto gpu = small_model();
  gpu->to(Device::CUDA);
  const ParityStep c = train_step(*cpu, Device::CPU, Precision::BF16);
  const ParityStep g = train_step(*gpu, Device::CUDA, Precision::BF16);
  const ParityStep f = train_step(*small_model(), Device::CPU, Precision::F32);
  // the same rounded operands; the devices sum in different orders, so an activation on a rounding boundary can land
  // one bf16 step apart: 1e-3 of the loss, 1e-2 of the norm (bf16 against f32 differs by more, checked too)
  CHECK(std::fabs(g.loss - c.loss) <= 1e-3 * std::fabs(c.loss));
  CHECK(std::fabs(g.norm - c.norm) <= 1e-2 * c.norm);
  CHECK(c.loss != f.loss);
}

TEST_CASE("gpu parity: a whole training step of an EncoderModel moved with Module::to") {
  auto cpu = small_model();
  auto gpu = small_model();
  gpu->to(Device::CUDA);

  // every parameter really moved, including the ones layers hold by reference, with its value and requires_grad
  const NamedTensors pc = cpu->named_parameters(), pg = gpu->named_parameters();
  REQUIRE(pc.size() == pg.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    INFO(pg[i].first);
    CHECK(pg[i].first == pc[i].first);
    CHECK(pc[i].second.device() == Device::CPU);
    CHECK(pg[i].second.device() == Device::CUDA);
    CHECK(pg[i].second.requires_grad());
    CHECK(pg[i].second.is_leaf());
    CHECK(pg[i].second.to_vector() == pc[i].second.to_vector());
  }
  CHECK(gpu->device() == Device::CUDA);
  auto* enc = dynamic_cast<EncoderLayer*>(&gpu->layer(0));
  REQUIRE(enc != nullptr);
  REQUIRE(enc->attn.talk_logits != nullptr);
  REQUIRE(enc->attn.gates != nullptr);
  CHECK(enc->attn.talk_logits->device() == Device::CUDA);
  CHECK(enc->attn.gates->log_alpha.device() == Device::CUDA);
  CHECK(enc->attn.o.weight.device() == Device::CUDA);
  // layer 0 (talking heads) takes the unfused path, layer 1 (plain heads) the fused kernel, on both devices
  REQUIRE(gpu->layer(1).heads() != nullptr);
  for (const Device d : {Device::CPU, Device::CUDA}) {
    CHECK(gpu->layer(0).heads()->unfused_reason(false, d) != nullptr);
    CHECK(gpu->layer(1).heads()->unfused_reason(false, d) == nullptr);
  }

  const ParityStep c = train_step(*cpu, Device::CPU);
  const ParityStep g = train_step(*gpu, Device::CUDA);
  CHECK(std::isfinite(c.loss));
  CHECK(std::fabs(g.loss - c.loss) <= kRtol * std::fabs(c.loss));
  CHECK(c.norm > 0.05f);  // clipping took effect
  CHECK(std::fabs(g.norm - c.norm) <= kRtol * c.norm);

  // A key projection's bias shifts every logit of a query row alike, and softmax ignores that: its exact gradient is
  // 0 and what either device computes is rounding noise. Checked to be noise-sized rather than compared, and its
  // update (Adam normalises the noise to about +-lr) is checked against lr.
  double grad_scale = 0;
  for (const auto& [n, t] : c.grads)
    if (t.defined())
      for (float v : t.to_vector()) grad_scale = std::max(grad_scale, static_cast<double>(std::fabs(v)));
  REQUIRE(grad_scale > 0);
  for (size_t i = 0; i < c.grads.size(); ++i) {
    const std::string& name = c.grads[i].first;
    INFO(name);
    REQUIRE(c.grads[i].second.defined());  // every parameter is reached by this loss
    if (ends_with(name, "attn.k.bias")) {
      for (const Tensor& t : {c.grads[i].second, g.grads[i].second})
        for (float v : t.to_vector()) CHECK(std::fabs(v) < 1e-4 * grad_scale);
      const std::vector<float> wc = c.weights[i].second.to_vector(), wg = g.weights[i].second.to_vector();
      for (size_t k = 0; k < wc.size(); ++k) CHECK(std::fabs(wg[k] - wc[k]) <= 2.1e-3);
      continue;
    }
    expect_close("gradient of " + name, g.grads[i].second, c.grads[i].second);
    expect_close("updated " + name, g.weights[i].second, c.weights[i].second);
  }
}

TEST_SUITE_END();
