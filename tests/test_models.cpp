// The model layer against independent references: PyTorch fixtures for the encoder layer, talking heads and
// hard-concrete gates; finite differences over every parameter of whole stacks (per-layer heads, gates, cross-layer
// logits); padding invariance; closed-form parameter counts; head-permutation equivalence; a user-registered layer
// type; and a tiny model that has to learn.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "tests/repo_files.h"
#include "framework/autocast.h"
#include "framework/autograd.h"
#include "framework/config.h"
#include "framework/ops.h"
#include "framework/optim.h"
#include "framework/random.h"
#include "framework/safetensors.h"
#include "models/attention.h"
#include "models/encoder_layer.h"
#include "models/encoder_model.h"
#include "models/head_gates.h"
#include "models/layer_registry.h"
#include "tests/gradcheck.h"
#include "train/tools/bench.h"
#include "train/tools/gemm_stride_bench.h"
#include "train/tools/kernel_bench.h"

using namespace hr;
using hr::testing::fixture;
using hr::testing::gradcheck;
using hr::testing::test_values;

namespace {


Tensor to_tensor(const SafeTensor& t) { return Tensor::from_vector(to_f32(t), t.shape); }

// Every element within atol + rtol * |want|; on failure reports how many differ and the first one.
void check_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                 double rtol = 1e-4, double atol = 1e-5) {
  REQUIRE_MESSAGE(got.size() == want.size(), what << ": " << got.size() << " values, expected " << want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(static_cast<double>(got[i]) - want[i]) <= atol + rtol * std::fabs(want[i])) continue;
    if (bad++ == 0) first = i;
  }
  INFO(what << ": " << bad << " of " << got.size() << " differ; first at [" << first << "]: got " << got[first]
            << ", expected " << want[first]);
  CHECK(bad == 0);
}

void set_values(Tensor t, const std::vector<float>& v) { t.copy_from(Tensor::from_vector(v, t.shape())); }

// A handle to the parameter `name` of m (same storage, so writes through it change the model).
Tensor param(const Module& m, const std::string& name) {
  for (auto& [n, p] : m.named_parameters())
    if (n == name) return p;
  FAIL("no parameter " << name);
  return Tensor();
}

// Replaces the small default initialisation by O(1) values so that every path through the model (attention logits,
// head mixing, gates) carries a gradient large enough for a wrong rule to show. LayerNorm gains stay near 1, talking
// heads near the identity, gate log_alphas are left alone (their init sets the gate values).
void randomize(Module& m, uint64_t seed) {
  for (auto& [name, p] : m.named_parameters()) {
    if (name.ends_with("log_alpha")) continue;
    std::vector<float> v = test_values(p.numel(), seed++, -0.5f, 0.5f);
    const bool gain = p.ndim() == 1 && name.ends_with(".weight");
    const bool mixing = name.ends_with("talk.logits") || name.ends_with("talk.weights");
    for (int64_t i = 0; i < p.numel(); ++i) {
      if (gain) v[static_cast<size_t>(i)] = 1.f + 0.4f * v[static_cast<size_t>(i)];
      if (mixing && i / p.dim(1) == i % p.dim(1)) v[static_cast<size_t>(i)] += 1.f;
    }
    set_values(p, v);
  }
}

std::unique_ptr<EncoderModel> model_from_yaml(const std::string& yaml, ModelDims dims = {20, 3}) {
  return build_model(Config::parse(yaml, "test.yaml").child("model"), dims);
}

// ---------------------------------------------------------------------------------------------------------------------
// 1. One encoder layer against PyTorch

void check_encoder_layer_fixture(const std::string& file, bool talking_heads) {
  const SafeTensorsFile f = read_safetensors(fixture(file));
  const auto meta = [&](const char* k) { return std::stoll(f.metadata.at(k)); };
  REQUIRE(f.metadata.at("norm") == "pre");
  AttentionOptions a;
  a.heads = meta("heads");
  a.head_dim = meta("head_dim");
  a.dropout = 0.f;
  a.talking_heads = talking_heads;
  EncoderLayer layer(meta("d_model"), meta("ffn_dim"), a, 0.f, 0.f, /*pre_norm=*/true,
                     std::stof(f.metadata.at("layer_norm_eps")));

  // fixture `param.q.weight` -> our `attn.q.weight`; `param.ln1.weight` -> `ln1.weight`
  const auto our_name = [](std::string n) {
    for (const char* p : {"q.", "k.", "v.", "o.", "talk."})
      if (n.starts_with(p)) return "attn." + n;
    return n;
  };
  std::map<std::string, std::string> fixture_of;  // our name -> fixture name
  for (const auto& [name, t] : f.tensors) {
    if (!name.starts_with("param.")) continue;
    const std::string ours = our_name(name.substr(6));
    fixture_of[ours] = name.substr(6);
    set_values(param(layer, ours), to_f32(t));
  }
  CHECK(fixture_of.size() == layer.named_parameters().size());  // every parameter came from the fixture

  const SafeTensor& mask = f.tensors.at("mask");
  std::vector<float> additive;
  for (int64_t m : to_i64(mask)) additive.push_back(m ? 0.f : -1e9f);
  LayerContext ctx;
  ctx.key_mask = Tensor::from_vector(additive, mask.shape);
  Tensor x = to_tensor(f.tensors.at("input"));
  x.set_requires_grad(true);

  const Tensor out = layer.forward(x, ctx);
  check_close(out.to_vector(), to_f32(f.tensors.at("output")), file + " output");
  backward(out, to_tensor(f.tensors.at("grad_output")));
  check_close(x.grad().to_vector(), to_f32(f.tensors.at("grad.input")), file + " grad.input");
  for (const auto& [ours, theirs] : fixture_of) {
    const Tensor g = param(layer, ours).grad();
    REQUIRE_MESSAGE(g.defined(), ours << " got no gradient");
    check_close(g.to_vector(), to_f32(f.tensors.at("grad.param." + theirs)), file + " grad of " + ours);
  }
}

}  // namespace

TEST_CASE("encoder layer matches PyTorch: forward, input and parameter gradients") {
  check_encoder_layer_fixture("encoder_layer.safetensors", false);
}

TEST_CASE("encoder layer with talking heads matches PyTorch") {
  check_encoder_layer_fixture("encoder_layer_talking_heads.safetensors", true);
}

// ---------------------------------------------------------------------------------------------------------------------
// 2. Hard-concrete gates against PyTorch

TEST_CASE("hard-concrete gates match PyTorch: z, eval z, open probability, penalty gradient") {
  const SafeTensorsFile f = read_safetensors(fixture("hard_concrete.safetensors"));
  GateOptions opt;
  opt.beta = std::stof(f.metadata.at("beta"));
  opt.gamma = std::stof(f.metadata.at("gamma"));
  opt.zeta = std::stof(f.metadata.at("zeta"));
  opt.lambda = std::stof(f.metadata.at("lam"));
  const std::vector<float> log_alpha = to_f32(f.tensors.at("log_alpha"));
  HardConcreteGates gates(static_cast<int64_t>(log_alpha.size()), opt);
  set_values(gates.log_alpha, log_alpha);

  const Tensor z = gates.z_from_noise(to_tensor(f.tensors.at("u")));
  check_close(z.to_vector(), to_f32(f.tensors.at("z_train")), "z_train");
  check_close(gates.eval_z().to_vector(), to_f32(f.tensors.at("z_eval")), "z_eval");
  check_close(gates.open_probability().to_vector(), to_f32(f.tensors.at("p_open")), "p_open");

  const Tensor objective = add(sum(mul(z, to_tensor(f.tensors.at("c")))), gates.penalty());
  check_close({objective.item()}, to_f32(f.tensors.at("objective")), "objective");
  backward(objective);
  check_close(gates.log_alpha.grad().to_vector(), to_f32(f.tensors.at("grad.log_alpha")), "grad.log_alpha");
}

TEST_CASE("a gate's initial open probability is init_open, and eval mode is deterministic") {
  GateOptions opt;
  opt.init_open = 0.7f;
  HardConcreteGates gates(4, opt);
  for (float p : gates.open_probability().to_vector()) CHECK(p == doctest::Approx(0.7).epsilon(1e-5));
  gates.eval();
  CHECK(gates.forward().to_vector() == gates.eval_z().to_vector());
}

// ---------------------------------------------------------------------------------------------------------------------
// 3. Finite differences over every parameter of whole models

namespace {

EncoderInput toy_batch() {
  // second row padded: the masked path is part of what is checked
  return make_encoder_input({{1, 5, 7, 2, 9}, {3, 4, 8}}, 0, Device::CPU);
}

void gradcheck_model(EncoderModel& model, const EncoderInput& in, bool with_penalty) {
  const std::vector<Tensor> params = model.parameters();
  auto f = [&](const std::vector<Tensor>&) {
    Tensor logits = reshape(model.forward(in), {-1});
    if (!with_penalty) return logits;
    return concat({logits, reshape(model.penalty(), {1})}, 0);
  };
  const auto r = gradcheck(f, params, 1e-2f, 12);
  INFO("worst: " << r.worst << " (" << r.checked << " coordinates of " << params.size() << " tensors)");
  CHECK(r.max_error < 5e-3);
  for (const auto& [name, p] : model.named_parameters()) CHECK_MESSAGE(p.grad().defined(), name << ": no gradient");
}

}  // namespace

TEST_CASE("gradcheck: 2-layer classifier with different heads per layer, every parameter") {
  for (const std::string norm : {"pre", "post"}) {
    CAPTURE(norm);
    auto model = model_from_yaml(std::string(R"(
model:
  type: encoder_classifier
  d_model: 8
  max_len: 8
  ffn_dim: 12
  dropout: 0
  norm: )") + norm + R"(
  layers:
    - attention: {heads: 3, head_dim: 4}
    - attention: {heads: 2, head_dim: 6}
)");
    REQUIRE(model->num_layers() == 2);
    CHECK(model->layer_stats(5)[0].heads == 3);
    CHECK(model->layer_stats(5)[1].head_dim == 6);
    randomize(*model, 11);
    gradcheck_model(*model, toy_batch(), false);
  }
}

TEST_CASE("gradcheck: talking heads + L0 gates + cross-layer residual logits with a head-count change") {
  // layer 1 mixes layer 0's logits through the `interleave` permutation (same head count, odd layer), layer 2 through
  // a learned cross.map (4 -> 2 heads)
  const char* yaml = R"(
model:
  type: encoder_classifier
  d_model: 8
  max_len: 8
  ffn_dim: 12
  dropout: 0
  pooling: mean
  layers:
    - repeat: 2
      attention: {heads: 4, head_dim: 3, talking_heads: true, gates: {type: l0, lambda: 0.1, init_open: 0.6},
                  cross_layer: residual_logits, permute: interleave}
    - attention: {heads: 2, head_dim: 5, talking_heads: true, gates: {type: l0, lambda: 0.1, init_open: 0.6},
                  cross_layer: residual_logits}
)";
  auto model = model_from_yaml(yaml);
  REQUIRE(model->num_layers() == 3);
  const auto named = model->named_parameters();
  const auto has = [&](const std::string& n) {
    for (const auto& [name, p] : named)
      if (name == n) return true;
    return false;
  };
  CHECK_FALSE(has("layers.0.attn.cross.map"));
  CHECK_FALSE(has("layers.1.attn.cross.map"));  // same head count: fixed permutation
  CHECK(has("layers.2.attn.cross.map"));
  CHECK(has("layers.2.attn.talk.logits"));
  CHECK(has("layers.0.attn.gates.log_alpha"));
  randomize(*model, 21);

  SUBCASE("eval mode: deterministic gates") {
    model->eval();
    gradcheck_model(*model, toy_batch(), true);
  }
  // In train mode a sampled gate can sit within eps of its clamp at 0 or 1, where central differences straddle the
  // kink (seen: layer 0 head 1, z = 7e-4, error 2e-3 against a 5e-3 tolerance); the draws are fixed by the seed.
  SUBCASE("train mode: sampled gates (gradcheck reseeds before every evaluation)") {
    model->train();
    gradcheck_model(*model, toy_batch(), true);
  }
}

TEST_CASE("cross-layer interleave: layer 1 head i sees layer 0 head perm(i) = 0, 2, 1, 3") {
  auto model = model_from_yaml(R"(
model:
  type: encoder_classifier
  d_model: 8
  max_len: 8
  dropout: 0
  layers:
    - repeat: 2
      attention: {heads: 4, head_dim: 2, cross_layer: residual_logits, permute: interleave}
)");
  randomize(*model, 5);
  // with layer 1's queries at zero its own logits vanish: what is left is layer 0's logits, permuted
  for (const char* n : {"layers.1.attn.q.weight", "layers.1.attn.q.bias"}) param(*model, n).fill_(0.f);
  std::vector<Tensor> maps;
  model->forward(toy_batch(), &maps);
  REQUIRE(maps.size() == 2);
  const int64_t B = maps[0].dim(0), H = 4, TT = maps[0].dim(2) * maps[0].dim(3);
  const std::vector<float> p0 = maps[0].to_vector(), p1 = maps[1].to_vector();
  const int64_t perm[] = {0, 2, 1, 3};
  std::vector<float> expected(p1.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < TT; ++i) expected[(b * H + h) * TT + i] = p0[(b * H + perm[h]) * TT + i];
  check_close(p1, expected, "layer 1 attention = layer 0 attention, heads interleaved", 1e-5, 1e-6);
}

TEST_CASE("attention maps are distributions, with talking heads too: the softmax rows before the weight mixing") {
  auto model = model_from_yaml("model:\n  type: encoder_classifier\n  d_model: 8\n  max_len: 8\n  dropout: 0\n"
                               "  layers:\n    - attention: {heads: 3, head_dim: 2, talking_heads: true}\n"
                               "    - attention: {heads: 2, head_dim: 4}\n");
  randomize(*model, 17);  // talk.weights: identity + uniform(-0.5, 0.5), so mixed rows would not sum to 1
  std::vector<Tensor> maps;
  model->forward(toy_batch(), &maps);
  REQUIRE(maps.size() == 2);
  for (const Tensor& m : maps) {
    const int64_t T = m.dim(3), rows = m.numel() / T;
    const std::vector<float> w = m.to_vector();
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = w.begin() + r * T;
      CHECK(std::accumulate(row, row + T, 0.0) == doctest::Approx(1.0).epsilon(1e-5));
      CHECK(*std::min_element(row, row + T) >= 0.f);
    }
  }
}

TEST_CASE("an attention layer without cross_layer breaks the chain of residual logits") {
  // layer 2 must not see layer 0's logits through layer 1 (which mixes logits itself, by talking heads): the model
  // must equal the same one whose layer 0 passes nothing on. Both head-count patterns: equal (silently wrong sums
  // once) and different (a shape mismatch once).
  for (const std::string heads1 : {"4", "2"}) {
    CAPTURE(heads1);
    const auto yaml = [&](const char* first_cross) {
      return std::string("model:\n  type: encoder_classifier\n  d_model: 8\n  max_len: 8\n  dropout: 0\n  layers:\n") +
             "    - attention: {heads: 4, head_dim: 2, cross_layer: " + first_cross + "}\n" +
             "    - attention: {heads: " + heads1 + ", head_dim: 2, talking_heads: true}\n" +
             "    - attention: {heads: 2, head_dim: 2, cross_layer: residual_logits}\n";
    };
    auto chained = model_from_yaml(yaml("residual_logits"));
    auto plain = model_from_yaml(yaml("none"));
    CHECK(chained->num_parameters() == plain->num_parameters());  // layer 2 receives nothing: no cross.map
    randomize(*chained, 8);
    randomize(*plain, 8);
    check_close(chained->forward(toy_batch()).to_vector(), plain->forward(toy_batch()).to_vector(),
                "logits with and without cross_layer on layer 0", 1e-6, 1e-6);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// 4. Padding invariance

TEST_CASE("extra padding does not change the logits of a sequence") {
  const std::vector<int32_t> seq = {2, 7, 4, 9, 3};
  const std::vector<int32_t> longer = {5, 1, 6, 8, 2, 3, 7, 4, 1};  // pads `seq` with 4 pad tokens
  for (const std::string norm : {"pre", "post"}) {
    for (const std::string head : {"cls", "mean", "span"}) {
      CAPTURE(norm);
      CAPTURE(head);
      const bool span = head == "span";
      std::string yaml = std::string("model:\n  type: ") + (span ? "encoder_span_qa" : "encoder_classifier") +
                         "\n  d_model: 8\n  max_len: 12\n  ffn_dim: 16\n  dropout: 0.3\n  norm: " + norm +
                         (span ? "" : std::string("\n  pooling: ") + head) +
                         "\n  layers:\n    - attention: {heads: 2, head_dim: 4, talking_heads: true}\n"
                         "    - attention: {heads: 3, head_dim: 2}\n";
      auto model = model_from_yaml(yaml);
      randomize(*model, 31);
      model->eval();  // dropout off
      const std::vector<std::vector<int32_t>> alone_seg = {std::vector<int32_t>(seq.size(), 1)};
      const std::vector<std::vector<int32_t>> batch_seg = {alone_seg[0], std::vector<int32_t>(longer.size(), 0)};
      const EncoderInput alone = make_encoder_input({seq}, 0, Device::CPU, span ? &alone_seg : nullptr);
      const EncoderInput padded = make_encoder_input({seq, longer}, 0, Device::CPU, span ? &batch_seg : nullptr);
      REQUIRE(padded.ids.dim(1) == 9);
      const std::vector<float> a = model->forward(alone).to_vector();
      const std::vector<float> p = model->forward(padded).to_vector();
      // classifier: row 0 of (2, C); span: positions 0..4 of row 0 of (2, 9, 2)
      check_close(std::vector<float>(p.begin(), p.begin() + static_cast<long>(a.size())), a,
                  "logits of the padded sequence", 1e-5, 1e-5);
    }
  }
}

TEST_CASE("activation_dropout drops the feed-forward's hidden units and nothing else; it defaults to dropout") {
  const std::vector<int32_t> seq = {2, 7, 4, 9, 3};
  // the logits of one training-mode forward pass (eval: dropout off) with the same weights and dropout stream
  const auto logits = [&](const std::string& dropouts, bool training) {
    auto model = model_from_yaml("model:\n  type: encoder_classifier\n  d_model: 8\n  max_len: 8\n  ffn_dim: 32\n" +
                                 dropouts + "  layers:\n    - repeat: 2\n      attention: {heads: 2, head_dim: 4}\n");
    randomize(*model, 5);
    model->train(training);
    manual_seed(9);
    return model->forward(make_encoder_input({seq}, 0, Device::CPU)).to_vector();
  };
  const std::string none = "  dropout: 0.0\n  attention_dropout: 0.0\n";
  CHECK(logits(none, true) == logits(none, false));
  CHECK(logits(none + "  activation_dropout: 0.5\n", true) != logits(none, false));
  CHECK(logits(none + "  activation_dropout: 0.5\n", false) == logits(none, false));
  // unset, it is `dropout`: BERT's layout (import-hf) sets it to 0
  const std::string some = "  dropout: 0.3\n  attention_dropout: 0.0\n";
  CHECK(logits(some, true) == logits(some + "  activation_dropout: 0.3\n", true));
  CHECK(logits(some, true) != logits(some + "  activation_dropout: 0.0\n", true));
}

// ---------------------------------------------------------------------------------------------------------------------
// 5. Parameter counts in closed form

TEST_CASE("num_parameters and layer_stats match the closed-form count") {
  const int64_t V = 50, L = 16, D = 12, F = 20, C = 5;
  struct Spec {
    int64_t H, Dh, F;
    bool talk, gates, cross;
  };
  // layer 2 changes the head count after a cross-layer layer: it owns a (4, 2) cross.map; layer 1 receives no logits
  // (layer 0 passes none on), so it owns none
  const std::vector<Spec> specs = {
      {3, 4, F, false, false, false}, {4, 5, 7, true, true, true}, {2, 6, F, true, false, true}};
  const auto per_layer = [&](const Spec& s, int64_t prev_heads) {
    const int64_t HD = s.H * s.Dh;
    int64_t n = 3 * (D * HD + HD) + HD * D + D;  // q, k, v, o
    n += 4 * D;                                   // two LayerNorms
    n += 2 * D * s.F + s.F + D;                   // FFN
    if (s.talk) n += 2 * s.H * s.H;
    if (s.gates) n += s.H;
    if (s.cross && prev_heads && prev_heads != s.H) n += prev_heads * s.H;
    return n;
  };
  const char* layers = R"(
  layers:
    - attention: {heads: 3, head_dim: 4}
    - attention: {heads: 4, head_dim: 5, talking_heads: true, gates: {type: l0}, cross_layer: residual_logits}
      ffn_dim: 7
    - attention: {heads: 2, head_dim: 6, talking_heads: true, cross_layer: residual_logits}
)";
  for (const std::string type : {"encoder_classifier", "encoder_span_qa"}) {
    for (const std::string norm : {"pre", "post"}) {
      CAPTURE(type);
      CAPTURE(norm);
      const bool span = type == "encoder_span_qa";
      auto model = model_from_yaml(std::string("model:\n  type: ") + type + "\n  norm: " + norm +
                                       "\n  d_model: 12\n  max_len: 16\n  ffn_dim: 20" + layers,
                                   {V, C, span ? 2 : 0});  // the QA task asks for two segments
      const int64_t embeddings = V * D + L * D + 2 * D + (span ? 2 * D : 0);
      const int64_t final_ln = norm == "pre" ? 2 * D : 0;
      const int64_t head = span ? D * 2 + 2 : D * C + C;
      int64_t expected = embeddings + final_ln + head, from_stats = embeddings + final_ln + head;
      const auto stats = model->layer_stats(16);
      REQUIRE(stats.size() == specs.size());
      for (size_t i = 0; i < specs.size(); ++i) {
        const int64_t n = per_layer(specs[i], i > 0 && specs[i - 1].cross ? specs[i - 1].H : 0);
        CHECK(stats[i].parameters == n);
        CHECK(stats[i].heads == specs[i].H);
        CHECK(stats[i].head_dim == specs[i].Dh);
        CHECK(stats[i].ffn_dim == specs[i].F);
        expected += n;
        from_stats += stats[i].parameters;
      }
      CHECK(model->num_parameters() == expected);
      CHECK(from_stats == model->num_parameters());
    }
  }
}

TEST_CASE("a model of shapes counts what the built model counts and allocates no weights") {
  const char* models[] = {
      R"(model:
  type: encoder_classifier
  norm: post
  pooling: cls_pooler
  d_model: 12
  max_len: 16
  layers:
    - attention: {heads: 3, head_dim: 4}
    - attention: {heads: 4, head_dim: 5, talking_heads: true, gates: {type: l0}, cross_layer: residual_logits}
      ffn_dim: 7
    - repeat: 2
      attention: {heads: 4, head_dim: 6, cross_layer: residual_logits, permute: interleave}
    - attention: {heads: 0, head_dim: 6, pruned: true}
)",
      R"(model: {type: encoder_mlm, d_model: 12, max_len: 16, layers: [{attention: {heads: 2, head_dim: 6}}]})",
      R"(model: {type: encoder_span_qa, d_model: 12, max_len: 16, layers: [{attention: {heads: 2, head_dim: 6}}]})"};
  for (const char* yaml : models) {
    CAPTURE(yaml);
    const auto built = build_model(Config::parse(yaml, "test.yaml").child("model"), {50, 5, 2});
    const auto shapes = build_model_shapes(Config::parse(yaml, "test.yaml").child("model"), {50, 5, 2});
    CHECK(shapes->num_parameters() == built->num_parameters());
    const auto a = built->layer_stats(16), b = shapes->layer_stats(16);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(b[i].parameters == a[i].parameters);
      CHECK(b[i].heads == a[i].heads);
      CHECK(b[i].ffn_dim == a[i].ffn_dim);
      CHECK(b[i].attention_flops == a[i].attention_flops);
      CHECK(b[i].ffn_flops == a[i].ffn_flops);
    }
    for (const auto& [name, p] : shapes->named_parameters()) CHECK_MESSAGE(!p.has_values(), name);
  }
  // talking heads start as plain attention: their mixing matrices are identities
  const auto talking = model_from_yaml(models[0], {50, 5, 2});
  CHECK(param(*talking, "layers.1.attn.talk.logits").to_vector() ==
        std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  // 1.6e11 parameters (1.3 TB with their gradients): counted at once, built never
  const auto model_block = [](const std::string& yaml) { return Config::parse(yaml, "test.yaml").child("model"); };
  const std::string huge = "model: {type: encoder_classifier, d_model: 100000, max_len: 16, layers: [{repeat: 2, "
                           "attention: {heads: 2, head_dim: 8}}]}";
  const int64_t D = 100000, F = 4 * D, HD = 16;
  const int64_t layer = 3 * (D * HD + HD) + HD * D + D + 4 * D + 2 * D * F + F + D;
  const int64_t whole = 50 * D + 16 * D + 2 * D + 2 * layer + 2 * D + 5 * D + 5;  // embeddings, final LN, classifier
  CHECK(build_model_shapes(model_block(huge), {50, 5, 0})->num_parameters() == whole);
  CHECK_THROWS_WITH_AS(build_model(model_block(huge), {50, 5, 0}), doctest::Contains("this machine has"), ConfigError);
  // what cannot be counted: refused naming the part
  const std::string deep = "model: {type: encoder_classifier, d_model: 16, max_len: 16, layers: [{repeat: 20000, "
                           "attention: {heads: 2, head_dim: 8}}]}";
  CHECK_THROWS_WITH_AS(build_model_shapes(model_block(deep), {50, 5, 0}),
                       doctest::Contains("model.layers[0]: repeat 20000"), ConfigError);
  // a tensor the estimate leaves out (the MLM head's d_model x d_model) past int64: an error, not an overflow
  const std::string wide = "model: {type: encoder_mlm, d_model: 3037000500, max_len: 1, ffn_dim: 1, layers: "
                           "[{attention: {heads: 1, head_dim: 1}}]}";
  CHECK_THROWS_WITH_AS(build_model_shapes(model_block(wide), {2, 0, 0}),
                       doctest::Contains("more elements than int64 counts"), Error);
}

TEST_CASE("a model too large for the memory there is: a ConfigError naming its keys and the bytes it needs") {
  const auto model_block = [](const std::string& yaml) { return Config::parse(yaml, "test.yaml").child("model"); };
  // past the machine: the largest part and every key that sizes it
  const std::string huge = "model: {type: encoder_classifier, d_model: 100000, max_len: 16, layers: [{repeat: 2, "
                           "attention: {heads: 2, head_dim: 8}, ffn_dim: 300000}]}";
  CHECK_THROWS_WITH_AS(build_model(model_block(huge), {50, 5, 0}),
                       doctest::Contains("960.2 GB for weights and gradients; this machine has"), ConfigError);
  CHECK_THROWS_WITH_AS(build_model(model_block(huge), {50, 5, 0}),
                       doctest::Contains("model.layers[0]: repeat 2 x 60007300056 parameters a layer (model.d_model "
                                         "100000, model.layers[0].ffn_dim 300000, model.layers[0].attention.heads 2 x "
                                         "head_dim 8)"),
                       ConfigError);
  const std::string vocab = "model: {type: encoder_classifier, d_model: 100000, max_len: 16, layers: []}";
  CHECK_THROWS_WITH_AS(build_model(model_block(vocab), {100'000'000, 5, 0}),
                       doctest::Contains("the vocabulary's 100000000 tokens (tokenizer.vocab or tokenizer.vocab_size)"),
                       ConfigError);
  // within the machine, but an allocation fails (here a layer's): the same message, not std::bad_alloc
  register_layer("out_of_memory", [](const Config&, const LayerDefaults&) -> std::unique_ptr<Layer> {
    throw std::bad_alloc();
  });
  const std::string small = "model: {type: encoder_classifier, d_model: 16, max_len: 8, ffn_dim: 32, layers: "
                            "[{repeat: 3, attention: {heads: 2, head_dim: 8}}, {type: out_of_memory}]}";
  CHECK_THROWS_WITH_AS(build_model(model_block(small), {50, 5, 0}),
                       doctest::Contains("parameters, which need 0.1 MB for weights and gradients; allocating them ran "
                                         "out of memory. The largest part is model.layers[0]: repeat 3 x 2232 "
                                         "parameters a layer (model.d_model 16, model.ffn_dim 32"),
                       ConfigError);
}

// ---------------------------------------------------------------------------------------------------------------------
// 9. Reordering heads before the output projection is an equivalence

TEST_CASE("permuting heads (q/k/v rows by head block, o columns) leaves the output unchanged") {
  const int64_t D = 10, H = 4, Dh = 3;
  AttentionOptions a;
  a.heads = H;
  a.head_dim = Dh;
  a.dropout = 0.f;
  EncoderLayer layer(D, 16, a, 0.f, 0.f, true, 1e-5f);
  randomize(layer, 41);
  const Tensor x = hr::testing::rand_tensor({2, 5, D}, 3);
  LayerContext ctx;
  ctx.key_mask = make_encoder_input({{1, 2, 3, 4, 5}, {1, 2, 3}}, 0, Device::CPU).key_mask;
  const std::vector<float> before = layer.forward(x, ctx).to_vector();

  const int64_t perm[H] = {2, 0, 3, 1};  // new head i is old head perm[i]
  const auto permute_rows = [&](Tensor& t) {  // (H*Dh, ...) row blocks
    const std::vector<float> v = t.to_vector();
    const int64_t row = t.numel() / (H * Dh);
    std::vector<float> out(v.size());
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Dh * row; ++i) out[(h * Dh) * row + i] = v[(perm[h] * Dh) * row + i];
    set_values(t, out);
  };
  const auto permute_o_columns = [&]() {  // o.weight (D, H*Dh) column blocks
    Tensor& w = layer.attn.o.weight;
    const std::vector<float> v = w.to_vector();
    std::vector<float> out(v.size());
    for (int64_t r = 0; r < D; ++r)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t j = 0; j < Dh; ++j) out[r * H * Dh + h * Dh + j] = v[r * H * Dh + perm[h] * Dh + j];
    set_values(w, out);
  };

  permute_o_columns();  // alone, this must change the output (else the check below proves nothing)
  const std::vector<float> o_only = layer.forward(x, ctx).to_vector();
  double changed = 0;
  for (size_t i = 0; i < before.size(); ++i) changed = std::max(changed, std::fabs(double(o_only[i]) - before[i]));
  CHECK(changed > 1e-2);

  for (Linear* lin : {layer.attn.q, layer.attn.k, layer.attn.v}) {
    permute_rows(lin->weight);
    permute_rows(lin->bias);
  }
  check_close(layer.forward(x, ctx).to_vector(), before, "output after permuting heads", 1e-5, 1e-6);
}

TEST_CASE("an attention layer pruned to zero heads keeps only the output bias (the residual path)") {
  AttentionOptions a;
  a.heads = 0;
  a.head_dim = 4;
  MultiHeadAttention attn(6, a);
  CHECK(attn.num_parameters() == 6);  // o.bias; o.weight is (6, 0)
  set_values(attn.o.bias, test_values(6, 1));
  LayerContext ctx;
  ctx.prev_logits = Tensor::zeros({2, 2, 3, 3});
  const Tensor y = attn.forward(hr::testing::rand_tensor({2, 3, 6}, 2), ctx);
  const std::vector<float> bias = attn.o.bias.to_vector();
  std::vector<float> expected;
  for (int row = 0; row < 2 * 3; ++row) expected.insert(expected.end(), bias.begin(), bias.end());  // (B*T, D)
  check_close(y.to_vector(), expected, "output of a headless layer", 0, 0);
  CHECK_FALSE(ctx.prev_logits.defined());  // and it passes no logits on
}

// ---------------------------------------------------------------------------------------------------------------------
// 7. A layer type defined here, registered, built from YAML next to encoder layers, and trained

namespace {

// x + sigmoid(gate(LN(x))) * ffn(LN(x)): a gated feed-forward block without attention.
class GatedFfnLayer : public Layer {
 public:
  GatedFfnLayer(int64_t d_model, int64_t ffn_dim)
      : ln(register_module("ln", std::make_unique<LayerNorm>(d_model))),
        gate(register_module("gate", std::make_unique<Linear>(d_model, d_model))),
        ffn(register_module("ffn", std::make_unique<FeedForward>(d_model, ffn_dim, 0.f))) {}
  Tensor forward(const Tensor& x, LayerContext&) override {
    const Tensor h = ln.forward(x);
    return add(x, mul(sigmoid(gate.forward(h)), ffn.forward(h)));
  }
  LayerStats stats(int64_t) const override {
    LayerStats st;
    st.type = "gated_ffn";
    st.ffn_dim = ffn.in.weight.dim(0);
    st.parameters = num_parameters();
    return st;
  }
  LayerNorm& ln;
  Linear& gate;
  FeedForward& ffn;
};

std::unique_ptr<Layer> make_gated_ffn(const Config& block, const LayerDefaults& d) {
  return std::make_unique<GatedFfnLayer>(d.d_model, block.get_positive("ffn_dim", d.ffn_dim));
}

// Mean cross-entropy over a fixed batch after each of `steps` AdamW steps; the first entry is before any update.
std::vector<float> train_losses(EncoderModel& model, const EncoderInput& in, const std::vector<int32_t>& labels,
                                int steps, float lr) {
  const NamedTensors params = model.named_parameters();
  AdamW opt(params, std::vector<bool>(params.size(), false), AdamWOptions{});
  const Tensor y = Tensor::from_ids(labels, {static_cast<int64_t>(labels.size())});
  std::vector<float> losses;
  for (int s = 0; s <= steps; ++s) {
    const Tensor loss = cross_entropy(model.forward(in), y);
    losses.push_back(loss.item());
    if (s == steps) break;
    model.zero_grad();
    backward(loss);
    opt.step(lr);
  }
  return losses;
}

}  // namespace

TEST_CASE("a layer type registered from outside models/ builds from YAML and trains") {
  register_layer("gated_ffn", make_gated_ffn);
  CHECK(layer_registered("gated_ffn"));
  auto model = model_from_yaml(R"(
model:
  type: encoder_classifier
  d_model: 16
  max_len: 8
  dropout: 0
  layers:
    - attention: {heads: 2, head_dim: 8}
    - type: gated_ffn
      ffn_dim: 24
    - attention: {heads: 4, head_dim: 4}
)",
                               {12, 2});
  REQUIRE(model->num_layers() == 3);
  CHECK(dynamic_cast<GatedFfnLayer*>(&model->layer(1)) != nullptr);
  const auto stats = model->layer_stats(8);
  CHECK(stats[1].type == "gated_ffn");
  CHECK(stats[1].ffn_dim == 24);
  CHECK(stats[1].parameters == 2 * 16 + (16 * 16 + 16) + (2 * 16 * 24 + 24 + 16));

  manual_seed(7);
  const EncoderInput in = make_encoder_input({{1, 2, 3}, {4, 5, 6, 7}, {8, 9}, {10, 11, 1, 2}}, 0, Device::CPU);
  const std::vector<float> losses = train_losses(*model, in, {0, 1, 1, 0}, 20, 1e-2f);
  INFO("loss " << losses.front() << " -> " << losses.back());
  CHECK(losses.back() < 0.5f * losses.front());
  // the new layer's parameters were part of the model and received gradients
  for (const auto& [name, p] : model->named_parameters())
    if (name.starts_with("layers.1.")) CHECK_MESSAGE(p.grad().defined(), name);
}

// ---------------------------------------------------------------------------------------------------------------------
// 8. A tiny model learns a synthetic task

namespace {

// n sequences "CLS t1 .. tk" (k in 3..8, tokens 2..9; 0 = pad, 1 = CLS); every other one contains a 3 (label 1).
void token3_task(size_t n, uint64_t seed, std::vector<std::vector<int32_t>>& rows, std::vector<int32_t>& labels) {
  const std::vector<float> r = test_values(static_cast<int64_t>(n) * 10, seed, 0.f, 1.f);
  for (size_t i = 0; i < n; ++i) {
    const float* u = &r[i * 10];
    const size_t len = 3 + static_cast<size_t>(u[0] * 6);
    std::vector<int32_t> row = {1};
    for (size_t t = 0; t < len; ++t) {
      const int32_t tok = 2 + static_cast<int32_t>(u[1 + t] * 8);
      row.push_back(tok == 3 ? 4 : tok);
    }
    const bool positive = i % 2 == 0;
    if (positive) row[1 + static_cast<size_t>(u[9] * static_cast<float>(len))] = 3;
    rows.push_back(row);
    labels.push_back(positive ? 1 : 0);
  }
}

double accuracy(EncoderModel& model, const EncoderInput& in, const std::vector<int32_t>& labels) {
  NoGradGuard ng;
  const std::vector<float> logits = model.forward(in).to_vector();  // (N, 2)
  int correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += (logits[2 * i + 1] > logits[2 * i]) == (labels[i] == 1);
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace

TEST_CASE("a 2-layer classifier learns 'does token 3 appear': >= 95% train, >= 90% held-out accuracy") {
  manual_seed(3);
  auto model = model_from_yaml(R"(
model:
  type: encoder_classifier
  d_model: 16
  max_len: 10
  ffn_dim: 32
  dropout: 0
  pooling: cls
  layers:
    - attention: {heads: 4, head_dim: 4}
    - attention: {heads: 2, head_dim: 8}
)",
                               {10, 2});
  std::vector<std::vector<int32_t>> rows, held_rows;
  std::vector<int32_t> labels, held_labels;
  token3_task(128, 99, rows, labels);
  token3_task(128, 7, held_rows, held_labels);
  const EncoderInput in = make_encoder_input(rows, 0, Device::CPU);
  const EncoderInput held = make_encoder_input(held_rows, 0, Device::CPU);
  CHECK(accuracy(*model, in, labels) < 0.8);  // not solved before training
  const std::vector<float> losses = train_losses(*model, in, labels, 100, 3e-3f);
  INFO("loss " << losses.front() << " -> " << losses.back());
  CHECK(accuracy(*model, in, labels) >= 0.95);
  CHECK(accuracy(*model, held, held_labels) >= 0.90);
}

TEST_CASE("what a training forward pass keeps for backward: bf16 keeps its copies, not the f32 activations besides") {
  // the tape's memory between forward and backward (docs/DESIGN.md, "What the tape keeps"), f32 against bf16
  manual_seed(5);
  auto model = model_from_yaml(R"(
model:
  type: encoder_classifier
  d_model: 64
  max_len: 32
  ffn_dim: 256
  dropout: 0.1
  layers:
    - attention: {heads: 4, head_dim: 16}
    - attention: {heads: 4, head_dim: 16}
)",
                               {50, 3});
  std::vector<std::vector<int32_t>> rows(8, std::vector<int32_t>(32));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t t = 0; t < 32; ++t) rows[i][t] = static_cast<int32_t>((i * 7 + t * 3) % 50);
  const EncoderInput in = make_encoder_input(rows, 0, Device::CPU);
  const Tensor y = Tensor::from_ids({0, 1, 2, 0, 1, 2, 0, 1}, {8});
  Backend& be = backend(Device::CPU);
  std::map<Precision, size_t> kept;
  for (Precision p : {Precision::F32, Precision::BF16, Precision::F32}) {
    model->zero_grad();
    AutocastScope scope(p, model->parameters());
    const size_t base = be.bytes_in_use();
    const Tensor loss = cross_entropy(model->forward(in), y);
    kept[p] = be.bytes_in_use() - base;  // what the tape holds (and, in bf16, the weights' copies)
    backward(loss);
  }
  INFO("f32 " << kept[Precision::F32] << " bytes, bf16 " << kept[Precision::BF16] << " bytes");
  // per layer, in units of (B*T, D) floats: f32 keeps 20 (the attention probabilities twice, q, k, v, the FFN's 4D
  // pre-activation and GELU output, ...), bf16 8 in f32 and 12 in bf16 copies, i.e. 0.7 of f32 plus the weights'
  // copies (0.79 measured). Were the f32 activations kept besides the copies, bf16 would need more than f32.
  CHECK(kept[Precision::BF16] < 0.85 * kept[Precision::F32]);
}

TEST_CASE("the fused kernel serves plain and gated layers; talking heads, cross-layer logits and maps do not") {
  AttentionOptions a;
  a.heads = 2;
  a.head_dim = 4;
  bool maps_asked = false;
  const MultiHeadAttention plain(8, a);
  CHECK(plain.unfused_reason(maps_asked, Device::CPU) == nullptr);
  CHECK(plain.unfused_reason(maps_asked, Device::CUDA) == nullptr);
  {  // CUDA's kernel takes heads of up to 256 dimensions, the CPU's any
    AttentionOptions wide = a;
    wide.head_dim = kCudaFusedAttentionMaxHeadDim;
    CHECK(MultiHeadAttention(8, wide).unfused_reason(maps_asked, Device::CUDA) == nullptr);
    wide.head_dim = kCudaFusedAttentionMaxHeadDim + 1;
    CHECK(std::string(MultiHeadAttention(8, wide).unfused_reason(maps_asked, Device::CUDA)).find("CUDA") !=
          std::string::npos);
    CHECK(MultiHeadAttention(8, wide).unfused_reason(maps_asked, Device::CPU) == nullptr);
  }
  a.gates = true;  // they scale each head's output after the product
  CHECK(MultiHeadAttention(8, a).unfused_reason(maps_asked, Device::CPU) == nullptr);
  a.gates = false;
  a.talking_heads = true;
  CHECK(std::string(MultiHeadAttention(8, a).unfused_reason(maps_asked, Device::CPU)).find("talking heads") != std::string::npos);
  a.talking_heads = false;
  a.cross_layer = true;
  CHECK(std::string(MultiHeadAttention(8, a).unfused_reason(maps_asked, Device::CPU)).find("cross-layer") != std::string::npos);
  maps_asked = true;
  CHECK(std::string(plain.unfused_reason(maps_asked, Device::CPU)).find("attention maps") != std::string::npos);
  maps_asked = false;
  {
    const UnfusedAttention off;
    CHECK(std::string(plain.unfused_reason(maps_asked, Device::CPU)).find("switched off") != std::string::npos);
  }
  CHECK(plain.unfused_reason(maps_asked, Device::CPU) == nullptr);
}

TEST_CASE("attention's three paths train alike: the fused kernel, attention_weights, and softmax then dropout") {
  // a plain layer takes the fused kernel (fused_attention); UnfusedAttention sends it through attention_weights (the
  // weights as a tensor, softmax and dropout in one pass); asking for the attention maps takes softmax then dropout
  // (the maps are the weights before dropout). The last two compute the same values; the kernel sums in blocks.
  const std::vector<Precision> precisions{Precision::F32, Precision::BF16};
  manual_seed(6);
  auto model = model_from_yaml(R"(
model:
  type: encoder_classifier
  d_model: 32
  max_len: 16
  dropout: 0.2
  layers:
    - attention: {heads: 4, head_dim: 8, gates: {type: l0}}
    - attention: {heads: 2, head_dim: 12}
)",
                               {40, 3});
  std::vector<std::vector<int32_t>> rows;
  for (int32_t i = 0; i < 6; ++i) rows.push_back(std::vector<int32_t>(static_cast<size_t>(6 + 2 * i), 1 + 5 * i));
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t t = 0; t < rows[i].size(); ++t) rows[i][t] = static_cast<int32_t>((i * 7 + t * 3) % 40);
  const EncoderInput in = make_encoder_input(rows, 0, Device::CPU);  // padded to 16: the key mask matters
  const Tensor y = Tensor::from_ids({0, 1, 2, 0, 1, 2}, {6});
  for (Precision p : precisions) {
    CAPTURE(precision_name(p));
    std::vector<float> loss[3];
    std::vector<std::vector<float>> grads[3];
    for (int path = 0; path < 3; ++path) {  // fused kernel, attention_weights, softmax then dropout
      model->zero_grad();
      manual_seed(11);
      AutocastScope scope(p, model->parameters());
      std::optional<UnfusedAttention> unfused;
      if (path == 1) unfused.emplace();
      std::vector<Tensor> maps;
      const Tensor l = cross_entropy(model->forward(in, path == 2 ? &maps : nullptr), y);
      CHECK(maps.size() == (path == 2 ? 2u : 0u));
      loss[path] = l.to_vector();
      backward(l);
      for (const Tensor& t : model->parameters()) grads[path].push_back(t.grad().to_vector());
    }
    CHECK(loss[1] == loss[2]);
    for (size_t i = 0; i < grads[1].size(); ++i) check_close(grads[1][i], grads[2][i], "gradient " + std::to_string(i));
    // the kernel: f32 to f32's rounding of different sums; under bf16 the weights are rounded before they are
    // normalised, so to bf16's
    const double tol = p == Precision::F32 ? 1e-4 : 2e-2;
    check_close(loss[0], loss[1], "fused kernel's loss", tol, tol);
    for (size_t i = 0; i < grads[0].size(); ++i)
      check_close(grads[0][i], grads[1][i], "fused kernel's gradient " + std::to_string(i), tol, tol * 1e-1);
  }
}

namespace {

struct PrecisionGap {
  double loss, gradients, worst_tensor;  // relative: |bf16 - f32| / |f32|, of every gradient and of the worst tensor's
  std::string worst_name;
};

// One training forward and backward of `yaml`'s model in f32 and under bf16, with the same dropout and gate draws.
PrecisionGap bf16_gap(const std::string& yaml) {
  auto model = model_from_yaml(yaml, {40, 3});
  randomize(*model, 31);
  model->train();
  std::vector<std::vector<int32_t>> rows;
  for (int32_t i = 0; i < 8; ++i) {
    rows.push_back(std::vector<int32_t>(static_cast<size_t>(5 + i), 0));
    for (size_t t = 0; t < rows.back().size(); ++t) rows.back()[t] = static_cast<int32_t>((i * 11 + t * 7) % 40);
  }
  const EncoderInput in = make_encoder_input(rows, 0, Device::CPU);
  const Tensor y = Tensor::from_ids({0, 1, 2, 0, 1, 2, 0, 1}, {8});
  double loss[2];
  std::vector<std::vector<float>> grads[2];
  for (const Precision p : {Precision::F32, Precision::BF16}) {
    const int k = p == Precision::BF16;
    model->zero_grad();
    manual_seed(12);
    AutocastScope scope(p, model->parameters());
    const Tensor penalty = model->penalty();
    const Tensor ce = cross_entropy(model->forward(in), y);
    const Tensor l = penalty.defined() ? add(ce, penalty) : ce;
    loss[k] = l.item();
    backward(l);
    for (const Tensor& t : model->parameters()) grads[k].push_back(t.grad().to_vector());
  }
  PrecisionGap gap{std::abs(loss[1] - loss[0]) / std::abs(loss[0]), 0, 0, ""};
  double diff = 0, norm = 0;
  const auto named = model->named_parameters();
  for (size_t i = 0; i < grads[0].size(); ++i) {
    double d = 0, n = 0;
    for (size_t j = 0; j < grads[0][i].size(); ++j) {
      const double e = static_cast<double>(grads[1][i][j]) - grads[0][i][j];
      d += e * e;
      n += static_cast<double>(grads[0][i][j]) * grads[0][i][j];
    }
    diff += d;
    norm += n;
    if (n > 1e-8 && std::sqrt(d / n) > gap.worst_tensor) {  // tensors whose f32 gradient is not rounding noise
      gap.worst_tensor = std::sqrt(d / n);
      gap.worst_name = named[i].first;
    }
  }
  gap.gradients = std::sqrt(diff / norm);
  return gap;
}

}  // namespace

TEST_CASE("every attention option trains under bf16: loss and gradients those of f32 to bf16's precision") {
  // talking heads and cross-layer logits (mix_heads, in f32 under bf16), L0 gates, a permutation and a learned map
  // across a head-count change, post-norm, dropout on: the paths test_bf16.cpp's plain model does not take.
  // Measured on an AMD EPYC (Zen 4): loss 3.4e-3, gradients 0.041 as a whole and at worst 0.19 for one tensor (the
  // gates' log_alpha, a sum over heads that cancels); a plain pre-norm model of this size gives 2.2e-3, 0.019 and
  // 0.05, post-norm alone 0.050, talking heads alone 0.022 (0.032 while mix_heads multiplied in bf16). A dropped or
  // misread gradient is off by ~1.
  const PrecisionGap g = bf16_gap(R"(
model:
  type: encoder_classifier
  d_model: 32
  max_len: 16
  ffn_dim: 48
  dropout: 0.1
  norm: post
  layers:
    - repeat: 2
      attention: {heads: 4, head_dim: 8, talking_heads: true, gates: {type: l0, lambda: 0.1},
                  cross_layer: residual_logits, permute: interleave}
    - attention: {heads: 2, head_dim: 12, talking_heads: true, cross_layer: residual_logits}
)");
  INFO("worst tensor: " << g.worst_name);
  // printed for comparison (docs/DESIGN.md): a plain model and one with talking heads alone
  const std::string small = "model: {type: encoder_classifier, d_model: 32, max_len: 16, ffn_dim: 48, dropout: 0.1, "
                            "layers: [{repeat: 2, attention: {heads: 4, head_dim: 8";
  const PrecisionGap plain = bf16_gap(small + "}}, {attention: {heads: 2, head_dim: 12}}]}");
  const PrecisionGap talk = bf16_gap(small + ", talking_heads: true}}, "
                                     "{attention: {heads: 2, head_dim: 12, talking_heads: true}}]}");
  MESSAGE("bf16 against f32, gradients: every option " << g.gradients << ", plain " << plain.gradients
                                                        << ", talking heads " << talk.gradients);
  CHECK(g.loss > 0);  // bf16 did round
  CHECK(g.loss <= 2e-2);
  CHECK(g.gradients <= 0.15);
  CHECK(g.worst_tensor <= 0.5);
}

TEST_CASE("bf16 inference: q, k, v and the FFN's hidden layer straight from their gemms in bf16, as recorded") {
  // without gradients the gemms write bf16 (linear's bf16_for_product); recorded, they write f32 that the products
  // round: the same values but for GELU, an epilogue of the gemm in one and its own loop in the other (~1e-7 apart,
  // which the rounding can turn into a bf16 step), so the logits must agree to bf16's precision (here they are
  // bitwise equal, but another CPU's oneDNN may compute GELU otherwise); test_bf16.cpp checks the bf16 results
  manual_seed(7);
  auto model = model_from_yaml(R"(
model:
  type: encoder_classifier
  d_model: 32
  max_len: 16
  ffn_dim: 64
  dropout: 0.1
  layers:
    - attention: {heads: 4, head_dim: 8}
    - attention: {heads: 2, head_dim: 12}
)",
                               {40, 3});
  std::vector<std::vector<int32_t>> rows;
  for (int32_t i = 0; i < 5; ++i) rows.push_back(std::vector<int32_t>(static_cast<size_t>(6 + 2 * i), 1 + 5 * i));
  const EncoderInput in = make_encoder_input(rows, 0, Device::CPU);
  model->eval();
  const AutocastScope scope(Precision::BF16, model->parameters());
  std::vector<float> fast;
  {
    NoGradGuard no_grad;
    fast = model->forward(in).to_vector();
  }
  const std::vector<float> recorded = model->forward(in).to_vector();
  Tape::current().clear();
  REQUIRE(fast.size() == recorded.size());
  double scale = 0;
  for (float v : recorded) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < fast.size(); ++i) CHECK(std::abs(fast[i] - recorded[i]) <= 2e-2 * scale);
}

TEST_CASE("bench --kernels: every kernel timed on its shape, with the bytes its contract moves") {
  const std::vector<KernelTiming> k = time_kernels(Device::CPU, 24, 16, 64, 2 * 3 * 12, 12, 5000, 3);
  REQUIRE(k.size() == 13);
  for (const KernelTiming& t : k) {
    CAPTURE(t.name);
    CHECK(t.median_us > 0);
    CHECK(t.bytes > 0);
  }
  CHECK(k[0].elements == 24 * 64);        // to_bf16 over (B*T, ffn)
  CHECK(k[4].elements == 24 * 16);        // add over (B*T, D)
  CHECK(k[6].elements == 2 * 3 * 12 * 12);  // softmax over (B*H*T, T)
  CHECK(k[9].elements == 2 * 3 * 12 * 12);  // softmax + dropout (attention_weights)
  CHECK(k[12].elements == 5000);          // adamw over the parameters
}

TEST_CASE("bench --gemm-strides: both operand sides over the narrow widths, copied by default where the rule says") {
  const std::vector<GemmStrideTiming> t = time_gemm_strides(64, 1024, 1);
  REQUIRE(t.size() == 18);
  for (size_t i = 0; i < t.size(); ++i) {
    CAPTURE(i);
    CHECK(t[i].operand == (i < 9 ? "A^T" : "B"));
    CHECK((t[i].in_place_ms > 0 && t[i].padded_layout_ms > 0 && t[i].default_ms > 0));
    // the default copies only on CPUs without AVX-512 (OneDnnMatmul::padded_operands), and only narrow 32-383
    if (t[i].default_copies) CHECK((t[i].narrow >= 32 && t[i].narrow < 384));
  }
  CHECK(t[3].narrow == 64);
}

TEST_CASE("bench timings: steady-state training steps make no new system allocation, classifier and span QA") {
  for (const std::string type : {"encoder_classifier", "encoder_span_qa"}) {
    CAPTURE(type);
    auto model = model_from_yaml("model:\n  type: " + type + "\n  d_model: 16\n  max_len: 12\n  dropout: 0.1\n"
                                 "  layers:\n    - attention: {heads: 2, head_dim: 8, gates: {type: l0}}\n"
                                 "    - attention: {heads: 3, head_dim: 4, talking_heads: true}\n");
    const TrainingTiming t = time_training_steps(*model, 4, 12, 20, 2, 4);
    CHECK(t.step_seconds.size() == 4);
    CHECK(t.system_allocations == 0);
    CHECK(forward_latency_ms(*model, 2, 12, 20, 2) > 0);  // the sweep's timing of a QA run needs segment ids too
  }
}
