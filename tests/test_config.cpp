#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "framework/config.h"
#include "tests/error_message.h"
#include "tests/temp_dir.h"

using hr::Config;
using hr::ConfigError;

namespace {

// Line numbers matter: the tests check that messages point at them.
const char* kBase = R"(# headroom test config
# (line 3 holds `model:`)
model:
  d_model: 64
  activation: gelu
  layers:
    - attention:
        heads: 4
      ffn: 256
    - attention:
        heads: 2
      ffn: 128
train:
  lr: 3e-4
  steps: 100
  shuffle: true
  tags: [intent, qa]
  dims: [1, 2, 3]
)";

const char* kName = "configs/base.yaml";

struct Layer {
  int64_t heads, ffn;
};

struct Model {
  int64_t d_model;
  std::string activation;
  std::vector<Layer> layers;
};

// Reads the model block the way a model factory would.
Model read_model(const Config& model) {
  Model m{model.get_positive("d_model"), model.get_choice("activation", {"gelu", "relu"}), {}};
  for (const Config& layer : model.child("layers").items())
    m.layers.push_back({layer.child("attention").get_positive("heads"), layer.get_positive("ffn")});
  return m;
}

// Reads the train block the way the trainer would.
void read_train(const Config& train) {
  train.get<double>("lr");
  train.get_positive("steps");
  train.get<bool>("shuffle", false);
  train.get<std::vector<std::string>>("tags");
  train.get<std::vector<int64_t>>("dims");
}

void read_all(const Config& root) {
  read_model(root.child("model"));
  read_train(root.child("train"));
}

// The message of the ConfigError that `f` throws; fails the test if it throws none.
std::string error_of(const std::function<void()>& f) {
  const std::string message = hr::testing::error_message<ConfigError>(f);
  if (message.empty()) FAIL("expected a ConfigError");
  return message;
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

Config base_with(const std::string& from, const std::string& to) {
  return Config::parse(replace(kBase, from, to), kName);
}

}  // namespace

TEST_CASE("reads typed values, and check_all_read passes when every key was read") {
  const Config root = Config::parse(kBase, kName);
  const Config model = root.child("model");
  const Model m = read_model(model);
  CHECK(m.d_model == 64);
  CHECK(m.activation == "gelu");
  REQUIRE(m.layers.size() == 2);
  CHECK(m.layers[1].heads == 2);
  CHECK(m.layers[1].ffn == 128);

  const Config train = root.child("train");
  CHECK(train.get<double>("lr") == doctest::Approx(3e-4).epsilon(1e-12));
  CHECK(train.get<float>("lr") == doctest::Approx(3e-4f));
  CHECK(train.get<int>("steps") == 100);
  CHECK(train.get<bool>("shuffle"));
  CHECK(train.get<std::vector<std::string>>("tags") == std::vector<std::string>{"intent", "qa"});
  CHECK(train.get<std::vector<int64_t>>("dims") == std::vector<int64_t>{1, 2, 3});
  CHECK(train.get<double>("warmup", 0.25) == 0.25);
  CHECK(train.get<std::string>("steps") == "100");
  CHECK_FALSE(train.has("warmup"));
  CHECK(root.keys() == std::vector<std::string>{"model", "train"});
  CHECK_FALSE(root.optional_child("eval"));

  const Config layer = model.child("layers").items()[1];
  CHECK(layer.path() == "model.layers[1]");
  CHECK(layer.line() == 10);
  CHECK(layer.file() == kName);
  CHECK_NOTHROW(root.check_all_read());
}

TEST_CASE("an integer is accepted where a number is expected") {
  const Config root = base_with("lr: 3e-4", "lr: 1");
  CHECK(root.child("train").get<double>("lr") == 1.0);
}

TEST_CASE("unknown keys are reported with file, line, path and the closest key that was read") {
  const Config root = base_with("\ntrain:", "\ntrian:");
  read_model(root.child("model"));
  root.optional_child("train");
  CHECK(error_of([&] { root.check_all_read(); }) == "configs/base.yaml:13: trian: unknown key (did you mean 'train'?)");
}

TEST_CASE("an unknown key in a sequence element, and one with no close match") {
  const Config root =
      Config::parse(replace(replace(kBase, "- attention:\n        heads: 4", "- atention:\n        heads: 4"),
                            "  dims: [1, 2, 3]\n", "  dims: [1, 2, 3]\n  zzzzz: 1\n"),
                    kName);
  const Config model = root.child("model");
  model.get_positive("d_model");
  model.get_choice("activation", {"gelu", "relu"});
  for (const Config& layer : model.child("layers").items()) {
    if (auto attention = layer.optional_child("attention")) attention->get_positive("heads");
    layer.get_positive("ffn");
  }
  read_train(root.child("train"));
  const std::string message = error_of([&] { root.check_all_read(); });
  CHECK(message ==
        "configs/base.yaml:7: model.layers[0].atention: unknown key (did you mean 'attention'?)\n"
        "configs/base.yaml:19: train.zzzzz: unknown key");
}

TEST_CASE("a block that was never read is unknown as a whole") {
  const Config root = Config::parse(kBase, kName);
  read_model(root.child("model"));
  CHECK(error_of([&] { root.check_all_read(); }) == "configs/base.yaml:13: train: unknown key");
}

TEST_CASE("wrong types name the file, line and path") {
  CHECK(error_of([] { read_all(base_with("d_model: 64", "d_model: eight")); }) ==
        "configs/base.yaml:4: model.d_model: expected a positive integer, got 'eight'");
  CHECK(error_of([] { base_with("d_model: 64", "d_model: 8.0").child("model").get<int64_t>("d_model"); }) ==
        "configs/base.yaml:4: model.d_model: expected an integer, got '8.0'");
  CHECK(error_of([] { base_with("steps: 100", "steps: 3000000000").child("train").get<int>("steps"); }) ==
        "configs/base.yaml:15: train.steps: expected an integer from -2147483648 to 2147483647, got '3000000000'");
  CHECK(error_of([] { base_with("lr: 3e-4", "lr: fast").child("train").get<double>("lr"); }) ==
        "configs/base.yaml:14: train.lr: expected a number, got 'fast'");
  CHECK(error_of([] { base_with("shuffle: true", "shuffle: maybe").child("train").get<bool>("shuffle"); }) ==
        "configs/base.yaml:16: train.shuffle: expected true or false, got 'maybe'");
  CHECK(error_of([] {
          base_with("dims: [1, 2, 3]", "dims: [1, two, 3]").child("train").get<std::vector<int64_t>>("dims");
        }) == "configs/base.yaml:18: train.dims[1]: expected an integer, got 'two'");
  CHECK(error_of([] { Config::parse(kBase, kName).get<std::string>("model"); }) ==
        "configs/base.yaml:3: model: expected a string, got a mapping");
  CHECK(error_of([] { base_with("train:\n", "train: 5\nold_train:\n").child("train"); }) ==
        "configs/base.yaml:13: train: expected a mapping or a sequence, got '5'");
  CHECK(error_of([] { Config::parse(kBase, kName).child("model").child("layers").get<int64_t>("x"); }) ==
        "configs/base.yaml:6: model.layers: expected a mapping, got a sequence");
  CHECK(error_of([] { Config::parse(kBase, kName).child("model").items(); }) ==
        "configs/base.yaml:3: model: expected a sequence, got a mapping");
  CHECK(error_of([] { Config::parse("- 1\n- 2\n", "list.yaml"); }) ==
        "list.yaml:1: expected a mapping of settings at the top level, got a sequence");
}

TEST_CASE("missing required keys name the block they are missing from") {
  CHECK(error_of([] { read_all(base_with("  d_model: 64\n", "")); }) ==
        "configs/base.yaml:3: model: missing required key 'd_model'");
  CHECK(error_of([] { Config::parse("a: 1\n", "x.yaml").get<int64_t>("b"); }) == "x.yaml:1: missing required key 'b'");
}

TEST_CASE("a missing key is reported with the unknown keys beside it that look renamed or misspelt") {
  CHECK(error_of([] { read_all(base_with("  d_model: 64\n", "  d_modle: 64\n")); }) ==
        "configs/base.yaml:3: model: missing required key 'd_model'; unknown key 'd_modle' (line 4) may be meant for "
        "it");
  CHECK(error_of([] { read_all(base_with("  steps: 100\n", "  max_steps: 100\n  shuffle_steps: 1\n")); }) ==
        "configs/base.yaml:13: train: missing required key 'steps'; unknown key 'max_steps' (line 15), "
        "'shuffle_steps' (line 16) may be meant for it");
  // a key that was read is no candidate, nor one unlike the missing key
  const Config steps = Config::parse("steps: 1\nzzz: 2\n", "x.yaml");
  steps.get<int64_t>("steps");
  CHECK(error_of([&] { steps.get<int64_t>("step"); }) == "x.yaml:1: missing required key 'step'");
}

TEST_CASE("a huge value is quoted shortened, with its length") {
  const std::string huge(1000000, 'x');
  const Config model = base_with("activation: gelu", "activation: " + huge).child("model");
  CHECK(error_of([&] { model.get_choice("activation", {"gelu", "relu"}); }) ==
        "configs/base.yaml:5: model.activation: expected one of 'gelu', 'relu', got '" + std::string(60, 'x') +
            "...' (1000000 bytes)");
  CHECK(error_of([&] { base_with("d_model: 64", "d_model: " + huge).child("model").get_positive("d_model"); }).size() <
        200);
  Config config = Config::parse(kBase, kName);
  config.apply_override("train.lr=" + huge);
  CHECK(error_of([&] { config.child("train").get<double>("lr"); }) ==
        "--set train.lr='" + std::string(60, 'x') + "...' (1000000 bytes): expected a number, got '" +
            std::string(60, 'x') + "...' (1000000 bytes)");
  // cut at a character boundary: 59 ASCII bytes then 3-byte characters
  const std::string cjk = std::string(59, 'a') + [] {
    std::string s;
    for (int i = 0; i < 20; ++i) s += "\xe4\xb8\xad";
    return s;
  }();
  const Config cjk_model = base_with("activation: gelu", "activation: " + cjk).child("model");
  CHECK(error_of([&] { cjk_model.get_positive("activation"); })
            .find("got '" + std::string(59, 'a') + "...' (119 bytes)") != std::string::npos);
}

TEST_CASE("non-positive values are rejected") {
  CHECK(error_of([] { read_all(base_with("heads: 2", "heads: 0")); }) ==
        "configs/base.yaml:11: model.layers[1].attention.heads: expected a positive integer, got '0'");
  CHECK(error_of([] { read_all(base_with("ffn: 128", "ffn: -3")); }) ==
        "configs/base.yaml:12: model.layers[1].ffn: expected a positive integer, got '-3'");
  CHECK(Config::parse(kBase, kName).child("train").get_positive("epochs", 3) == 3);
}

TEST_CASE("a bad choice lists the allowed ones") {
  CHECK(error_of([] { read_all(base_with("activation: gelu", "activation: gleu")); }) ==
        "configs/base.yaml:5: model.activation: expected one of 'gelu', 'relu', got 'gleu' (did you mean 'gelu'?)");
  const Config model = base_with("  activation: gelu\n", "").child("model");
  CHECK(model.get_choice("activation", {"gelu", "relu"}, "relu") == "relu");
  CHECK_THROWS_AS(model.get_choice("activation", {"gelu", "relu"}), ConfigError);
}

TEST_CASE("fail() lets a consumer report its own checks at the key's line") {
  const Config train = Config::parse(kBase, kName).child("train");
  CHECK(error_of([&] { train.fail("lr", "must be below 1e-4"); }) ==
        "configs/base.yaml:14: train.lr: must be below 1e-4");
  CHECK(error_of([&] { train.fail("too long"); }) == "configs/base.yaml:13: train: too long");
}

TEST_CASE("YAML syntax errors carry yaml-cpp's line and column") {
  const std::string message =
      error_of([] { Config::parse("model:\n  d_model: 64\n  layers: [1, 2\ntrain:\n  lr: 1\n", "configs/bad.yaml"); });
  CHECK(message.starts_with("configs/bad.yaml:4:"));
  CHECK(message.find("YAML syntax error: end of sequence flow not found") != std::string::npos);
}

TEST_CASE("a stray comma is a syntax error, not a hang") {
  // yaml-cpp 0.7's LoadAll returns no more on these, allocating until memory runs out
  CHECK(error_of([] { Config::parse(",", "configs/comma.yaml"); }) ==
        "configs/comma.yaml:1:1: YAML syntax error: unexpected ','");
  CHECK(error_of([] { Config::parse("model: {d_model: 64}\n, train", "configs/comma.yaml"); }) ==
        "configs/comma.yaml:2:1: YAML syntax error: end of map not found");
  CHECK(error_of([] { Config::parse("model: {d_model: 64}\n---\n,", "configs/comma.yaml"); }) ==
        "configs/comma.yaml:2: a second YAML document (after '---'): a config is one document; remove the '---' line");
}

TEST_CASE("a duplicate key is an error") {
  CHECK(error_of([] { base_with("  steps: 100\n", "  steps: 100\n  lr: 1\n"); }) ==
        "configs/base.yaml:16: train.lr: duplicate key (first given on line 14)");
}

TEST_CASE("nesting beyond 32 levels, or an alias inside its own anchor, is an error, not a stack overflow") {
  // yaml-cpp parses up to 498 levels, and an alias inside its own anchor is a cycle: the key check recursed until the
  // stack ran out (the fuzzer's find)
  const std::string deep = "a: " + std::string(400, '[') + std::string(400, ']') + "\n";
  CHECK(error_of([&] { Config::parse(deep, "configs/deep.yaml"); }) ==
        "configs/deep.yaml:1: a" + [] {
          std::string path;
          for (int i = 0; i < 32; ++i) path += "[0]";
          return path;
        }() + ": nested more than 32 levels deep; a config nests a few (model.layers[0].attention.heads), and an alias "
        "inside its own anchor ('&a [*a]') nests forever");
  std::string ok = "a: " + std::string(32, '[') + std::string(32, ']') + "\n";  // a level below the limit parses
  CHECK_NOTHROW(Config::parse(ok, "configs/deep.yaml"));
  CHECK(error_of([] { Config::parse("a: &x {b: *x}\n", "configs/cycle.yaml"); })
            .starts_with("configs/cycle.yaml:1: a.b.b.b"));
  Config root = Config::parse(kBase, kName);
  CHECK(error_of([&] { root.apply_override("train.a=&x [*x]"); }).find("nests forever") != std::string::npos);
  std::string key = "train";
  for (int i = 0; i < 32; ++i) key += ".a";
  CHECK(error_of([&] { root.apply_override(key + "=1"); }) ==
        "--set " + key + "=1: the key has 33 parts; a config nests at most 32 levels");
  CHECK(error_of([&] { root.apply_override("train.a=" + std::string(40, '[') + std::string(40, ']')); })
            .find("nested more than 32 levels deep") != std::string::npos);
}

TEST_CASE("load_file: contents, an empty file, a missing file") {
  const hr::testing::TempDir d;
  const std::string path = hr::testing::write_file(d / "base.yaml", kBase);
  CHECK(Config::load_file(path).child("model").get<int64_t>("d_model") == 64);
  const std::string empty = hr::testing::write_file(d / "empty.yaml", "");
  CHECK(error_of([&] { Config::load_file(empty); }) == empty + ":1: the file is empty");
  const std::string comments = hr::testing::write_file(d / "comments.yaml", "# nothing here\n");
  CHECK(error_of([&] { Config::load_file(comments); }) == comments + ":1: the file is empty");
  CHECK(error_of([] { Config::load_file("/nonexistent/x.yaml"); }) == "cannot open config file '/nonexistent/x.yaml'");
}

TEST_CASE("overrides: scalars, nested keys, sequence elements, whole sequences") {
  Config root = Config::parse(kBase, kName);
  root.apply_override("train.lr=1e-3");
  root.apply_override("train.shuffle=false");
  root.apply_override("model.layers.1.attention.heads=8");
  root.apply_override("train.tags=[qa]");
  const Config train = root.child("train");
  CHECK(train.get<double>("lr") == doctest::Approx(1e-3).epsilon(1e-12));
  CHECK_FALSE(train.get<bool>("shuffle"));
  CHECK(train.get<std::vector<std::string>>("tags") == std::vector<std::string>{"qa"});
  CHECK(read_model(root.child("model")).layers[1].heads == 8);

  root.apply_override("model.layers=[{attention: {heads: 3}, ffn: 16}]");
  const Model m = read_model(root.child("model"));
  REQUIRE(m.layers.size() == 1);
  CHECK(m.layers[0].heads == 3);
  CHECK(m.layers[0].ffn == 16);
  read_train(root.child("train"));
  CHECK_NOTHROW(root.check_all_read());
}

TEST_CASE("errors in overridden values name the override") {
  Config root = Config::parse(kBase, kName);
  root.apply_override("train.lr=abc");
  CHECK(error_of([&] { root.child("train").get<double>("lr"); }) == "--set train.lr=abc: expected a number, got 'abc'");
  // A sibling of an overridden key still points at its file line.
  CHECK(error_of([&] { root.child("train").fail("steps", "bad"); }) == "configs/base.yaml:15: train.steps: bad");
  CHECK(error_of([&] { root.child("train").fail("lr_scale", "bad"); }) == "configs/base.yaml:13: train.lr_scale: bad");

  root.apply_override("model.layers=[{attention: {heads: 0}, ffn: 16}]");
  CHECK(error_of([&] { read_model(root.child("model")); }) ==
        "--set model.layers=[{attention: {heads: 0}, ffn: 16}]: model.layers[0].attention.heads: "
        "expected a positive integer, got '0'");

  // A later override of a subtree replaces an earlier one inside it.
  root.apply_override("model.layers.0.ffn=-1");
  root.apply_override("model.layers=[{attention: {heads: 1}, ffn: 0}]");
  CHECK(error_of([&] { read_model(root.child("model")); }) ==
        "--set model.layers=[{attention: {heads: 1}, ffn: 0}]: model.layers[0].ffn: "
        "expected a positive integer, got '0'");
}

TEST_CASE("an override that creates a key nobody reads is reported as unknown") {
  Config root = Config::parse(kBase, kName);
  root.apply_override("train.setps=5");
  root.apply_override("eval.every=10");
  read_all(root);
  CHECK(error_of([&] { root.check_all_read(); }) ==
        "--set train.setps=5: unknown key (did you mean 'steps'?)\n"
        "--set eval.every=10: eval: unknown key");
}

TEST_CASE("malformed overrides") {
  Config root = Config::parse(kBase, kName);
  CHECK(error_of([&] { root.apply_override("train.lr"); }) == "--set train.lr: expected KEY=VALUE, e.g. train.lr=3e-4");
  CHECK(error_of([&] { root.apply_override("train..lr=1"); }) ==
        "--set train..lr=1: the key must be dot-separated names, e.g. train.lr=3e-4");
  CHECK(error_of([&] { root.apply_override("=1"); }) ==
        "--set =1: the key must be dot-separated names, e.g. train.lr=3e-4");
  CHECK(error_of([&] { root.apply_override("train.lr.warmup=1"); }) ==
        "--set train.lr.warmup=1: train.lr is '3e-4', not a mapping or a sequence");
  CHECK(error_of([&] { root.apply_override("model.layers.2.ffn=1"); }) ==
        "--set model.layers.2.ffn=1: model.layers has no element '2' (it has 2)");
  CHECK(error_of([&] { root.apply_override("model.layers.first.ffn=1"); }) ==
        "--set model.layers.first.ffn=1: model.layers has no element 'first' (it has 2)");
  CHECK(error_of([&] {
          root.apply_override("train.tags=[a, b");
        }).starts_with("--set train.tags=[a, b: YAML syntax error"));
  CHECK(error_of([&] { root.apply_override("train={a: 1, a: 2}"); }) ==
        "--set train={a: 1, a: 2}: train.a: duplicate key (first given on line 1)");
}

TEST_CASE("dump round-trips the resolved configuration") {
  Config root = Config::parse(kBase, kName);
  root.apply_override("model.layers.0.ffn=512");
  root.apply_override("train.note='quoted: text'");
  const std::string dumped = root.dump();
  const Config again = Config::parse(dumped, "run/config.yaml");
  CHECK(again.dump() == dumped);
  const Model m = read_model(again.child("model"));
  CHECK(m.layers[0].ffn == 512);
  CHECK(m.layers[1].heads == 2);
  const Config train = again.child("train");
  CHECK(train.get<double>("lr") == doctest::Approx(3e-4).epsilon(1e-12));
  CHECK(train.get<std::string>("note") == "quoted: text");
  CHECK(train.get<std::vector<int64_t>>("dims") == std::vector<int64_t>{1, 2, 3});
  CHECK(root.child("model").child("layers").items()[0].dump() == "attention:\n  heads: 4\nffn: 512\n");
}

TEST_CASE("did_you_mean suggests only close candidates") {
  CHECK(hr::did_you_mean("atention", {"ffn", "attention", "heads"}) == "attention");
  CHECK(hr::did_you_mean("lr", {"lz", "steps"}) == "lz");
  CHECK(hr::did_you_mean("dropout", {"d_model", "attention"}).empty());
  CHECK(hr::did_you_mean("x", {}).empty());
}
