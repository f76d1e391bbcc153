// The `model:` block: mistakes in it are ConfigErrors naming the file, line and key; the shipped configs/*.yaml build
// the models they describe.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "framework/config.h"
#include "models/encoder_model.h"
#include "tests/error_message.h"
#include "tests/repo_files.h"

using namespace hr;

namespace {

// The message of the ConfigError that building `yaml`'s model block throws ("" when it builds).
std::string build_error(const std::string& yaml) {
  return hr::testing::error_message<ConfigError>(
      [&] { build_model(Config::parse(yaml, "model.yaml").child("model"), {1000, 10}); });
}

void expect_error(const std::string& yaml, std::initializer_list<const char*> parts) {
  const std::string message = build_error(yaml);
  INFO("message: " << message);
  REQUIRE_FALSE(message.empty());
  for (const char* part : parts) CHECK_MESSAGE(message.find(part) != std::string::npos, "missing: " << part);
}

// Line numbers matter: line 1 is `model:`, line 8 the first layer's `attention:`.
std::string model_with_layer(const std::string& attention, const std::string& extra = "") {
  return "model:\n"
         "  type: encoder_classifier\n"
         "  d_model: 16\n"
         "  max_len: 8\n"
         "  ffn_dim: 32\n"
         "  layers:\n"
         "    - repeat: 2\n"
         "      attention: " + attention + "\n" + extra;
}

}  // namespace

TEST_CASE("a valid block builds (the error cases below differ from it in one place)") {
  CHECK(build_error(model_with_layer("{heads: 2, head_dim: 8}")) == "");
}

TEST_CASE("unknown keys are named with their line and a suggestion") {
  expect_error(model_with_layer("{heads: 2, head_dim: 8, talking_head: true}"),
               {"model.yaml:8:", "model.layers[0].attention.talking_head", "unknown key", "talking_heads"});
  expect_error(model_with_layer("{heads: 2, head_dim: 8}", "  dropuot: 0.1\n"),
               {"model.yaml:9:", "model.dropuot", "unknown key", "dropout"});
  // a misspelt required block: named before the unknown-key check could run
  expect_error(model_with_layer("{heads: 2, head_dim: 8}", "    - atention: {heads: 2, head_dim: 8}\n"),
               {"model.yaml:9:", "model.layers[1]", "missing required key 'attention'", "'atention'"});
}

TEST_CASE("wrong types and out-of-range values") {
  expect_error(model_with_layer("{heads: eight, head_dim: 8}"),
               {"model.yaml:8:", "model.layers[0].attention.heads", "positive integer", "eight"});
  expect_error(model_with_layer("{heads: 0, head_dim: 8}"),
               {"model.yaml:8:", "model.layers[0].attention.heads", "positive integer", "0"});
  expect_error(model_with_layer("{heads: 2, head_dim: -1}"),
               {"model.yaml:8:", "model.layers[0].attention.head_dim", "positive integer", "-1"});
  expect_error(model_with_layer("{heads: 2, head_dim: 8, talking_heads: maybe}"),
               {"model.yaml:8:", "model.layers[0].attention.talking_heads", "true or false"});
  expect_error(model_with_layer("{heads: 2, head_dim: 8, gates: {type: l0, init_open: 1.5}}"),
               {"model.yaml:8:", "model.layers[0].attention.gates.init_open", "(0, 1)"});
  expect_error(model_with_layer("{heads: 2, head_dim: 8, cross_layer: residual}"),
               {"model.yaml:8:", "model.layers[0].attention.cross_layer", "residual_logits"});
  expect_error(model_with_layer("{heads: 2, head_dim: 8}", "  activation_dropout: 1.5\n"),
               {"model.yaml:9:", "model.activation_dropout", "[0, 1)"});
  // the model-wide default is checked where it is written, not in the first layer that inherits it
  expect_error(model_with_layer("{heads: 2, head_dim: 8}", "  attention_dropout: -0.1\n"),
               {"model.yaml:9:", "model.attention_dropout", "[0, 1)"});
  expect_error(model_with_layer("{heads: 2, head_dim: 8, dropout: 1}"),
               {"model.yaml:8:", "model.layers[0].attention.dropout", "[0, 1)"});
}

TEST_CASE("a missing required key names the block that lacks it") {
  expect_error("model:\n  type: encoder_classifier\n  max_len: 8\n  layers:\n"
               "    - attention: {heads: 2, head_dim: 8}\n",
               {"model.yaml:1:", "model", "missing required key 'd_model'"});
  expect_error(model_with_layer("{heads: 2}"),
               {"model.yaml:8:", "model.layers[0].attention", "missing required key 'head_dim'"});
}

TEST_CASE("a layer type nobody registered lists the registered ones") {
  expect_error(model_with_layer("{heads: 2, head_dim: 8}", "    - type: nosuch\n"),
               {"model.yaml:9:", "model.layers[1].type", "unknown layer type 'nosuch'", "registered: encoder"});
}

TEST_CASE("a YAML syntax error names the file, line and column") {
  expect_error(model_with_layer("{heads: 2, head_dim: 8"), {"model.yaml:", "YAML syntax error"});
  // an unclosed flow mapping is only detected at the end of the input; a bad indentation where it is
  const std::string bad_indent = "model:\n  type: encoder_classifier\n  d_model: 16\n   max_len: 8\n";
  expect_error(bad_indent, {"model.yaml:4:", "YAML syntax error"});
}

// ---------------------------------------------------------------------------------------------------------------------
// The shipped configs

namespace {

std::unique_ptr<EncoderModel> build_shipped(const std::string& name) {
  const Config config = Config::load_file(hr::testing::repo_path("configs/" + name));
  return build_model(config.child("model"), {1000, 10});
}

struct LayerShape {
  int64_t heads, head_dim, ffn_dim;
};

void check_layers(const EncoderModel& m, const std::vector<LayerShape>& expected) {
  const auto stats = m.layer_stats(m.max_len());
  REQUIRE(stats.size() == expected.size());
  for (size_t i = 0; i < stats.size(); ++i) {
    CAPTURE(i);
    CHECK(stats[i].type == "encoder");
    CHECK(stats[i].heads == expected[i].heads);
    CHECK(stats[i].head_dim == expected[i].head_dim);
    CHECK(stats[i].ffn_dim == expected[i].ffn_dim);
  }
}

}  // namespace

TEST_CASE("configs/baseline.yaml and layered.yaml: same width, heads halved in the upper half") {
  const auto baseline = build_shipped("baseline.yaml");
  const auto layered = build_shipped("layered.yaml");
  CHECK(baseline->d_model() == 256);
  check_layers(*baseline, std::vector<LayerShape>(6, {8, 32, 1024}));
  std::vector<LayerShape> halves(3, {8, 32, 1024});
  halves.insert(halves.end(), 3, {4, 64, 1024});
  check_layers(*layered, halves);
  CHECK(layered->num_parameters() == baseline->num_parameters());
}

TEST_CASE("configs/bench-cpu.yaml: 4 layers, d_model 256, 8 heads of 32") {
  const auto m = build_shipped("bench-cpu.yaml");
  CHECK(m->d_model() == 256);
  CHECK(m->max_len() == 64);
  check_layers(*m, std::vector<LayerShape>(4, {8, 32, 1024}));
}

TEST_CASE("configs/bert-base.yaml: BERT-base's shape and parameter count") {
  const auto m = build_shipped("bert-base.yaml");
  CHECK(m->d_model() == 768);
  CHECK(m->max_len() == 512);
  check_layers(*m, std::vector<LayerShape>(12, {12, 64, 3072}));
  // BERT-base's 12 layers hold 7,087,872 parameters each; embeddings (no segments here) and the head come on top
  const int64_t D = 768;
  CHECK(m->num_parameters() == 12 * 7087872 + 1000 * D + 512 * D + 2 * D + D * 10 + 10);
}
