// `headroom allocate` on a tiny config: the gated search, the allocated config (per-layer heads = what the gates
// keep, attention parameters matched to the uniform model), the compare runs over seeds, reuse on restart, and the
// arguments it refuses; a given split (--allocation) with --match layer. Also the head_dim arithmetic of --match params.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <sstream>

#include "tests/tiny_run.h"
#include "train/tools/allocate.h"

using namespace hr;
using namespace hr::testing;

namespace {

// Per layer, the heads `headroom heads` marks as not pruned (its rows: layer head open_prob gate_z importance pruned).
std::vector<int64_t> open_heads_per_layer(const std::string& heads_output, size_t layers) {
  std::vector<int64_t> open(layers, 0);
  std::istringstream in(heads_output);
  for (std::string line; std::getline(in, line);) {
    std::istringstream row(line);
    std::string layer, head, p, z, imp, pruned;
    if (!(row >> layer >> head >> p >> z >> imp >> pruned) || layer == "layer") continue;
    if (pruned == "no") ++open[std::stoul(layer)];
  }
  return open;
}

int64_t parameters_of(const std::string& run) {
  return nlohmann::json::parse(read_file(run + "/result.json")).at("parameters").get<int64_t>();
}

}  // namespace

TEST_CASE("allocate: matched_head_dim brings the kept heads' width closest to the uniform width") {
  CHECK(matched_head_dim({2, 2}, 32) == 8);   // the uniform model itself
  CHECK(matched_head_dim({1, 1}, 32) == 16);
  CHECK(matched_head_dim({3, 2}, 32) == 6);   // 5 heads: 30 (2 off) beats 35 (3 off)
  CHECK(matched_head_dim({4, 3}, 32) == 5);   // 7 heads: 35 (3 off) beats 28 (4 off)
  CHECK(matched_head_dim({3}, 10) == 3);      // 9 (1 off) beats 12
  CHECK(matched_head_dim({16, 16}, 8) == 1);  // never below 1
  CHECK(matched_head_dim({12, 12, 12, 12}, 4 * 12 * 16) == 16);
}

TEST_CASE("allocate: search, allocated config, compare runs over seeds, reuse on restart") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string out = d / "alloc";
  // a gate learning rate and penalty under which the 40 steps close some, not all, of the 4 heads a layer (a larger
  // lambda or gate_lr closes every head; the checks below hold whatever the gates do)
  const std::string args = "allocate " + quote(cfg) +
                           " --set train.max_steps=40 --set train.gate_lr=0.1 --wide-heads 4 --l0-lambda 0.003 "
                           "--baselines 1 --seeds 2 --out " + quote(out);
  const Result first = headroom(args);
  REQUIRE_MESSAGE(first.code == 0, first.output);

  // the search model: 4 gated heads a layer, head_dim kept from the config
  const std::string search_cfg = read_file(out + "/search/config.yaml");
  CHECK(search_cfg.find("heads: 4") != std::string::npos);
  CHECK(search_cfg.find("head_dim: 8") != std::string::npos);
  CHECK(search_cfg.find("l0") != std::string::npos);
  // --search-from dense (the default): the gates start from the wide model trained without them
  CHECK(search_cfg.find("search-dense/checkpoint-best.safetensors") != std::string::npos);
  const std::string dense_cfg = read_file(out + "/search-dense/config.yaml");
  CHECK(dense_cfg.find("heads: 4") != std::string::npos);
  CHECK(dense_cfg.find("l0") == std::string::npos);

  // allocated.yaml: one group per layer, the heads the gates keep (as `headroom heads` reports them), no gates
  const Result heads =
      headroom("heads --run " + quote(out + "/search") + " --checkpoint last --png " + quote(d / "h.png"));
  REQUIRE_MESSAGE(heads.code == 0, heads.output);
  const std::vector<int64_t> open = open_heads_per_layer(heads.output, 2);
  const YAML::Node allocated = YAML::LoadFile(out + "/allocated.yaml");
  const YAML::Node layers = allocated["model"]["layers"];
  REQUIRE(layers.size() == 2);
  int64_t kept = 0;
  for (size_t l = 0; l < 2; ++l) {
    CHECK(layers[l]["attention"]["heads"].as<int64_t>() == std::max<int64_t>(1, open[l]));
    CHECK(!layers[l]["attention"]["gates"]);
    CHECK(!layers[l]["repeat"]);
    kept += layers[l]["attention"]["heads"].as<int64_t>();
  }
  MESSAGE("kept heads per layer: " << layers[0]["attention"]["heads"] << ", " << layers[1]["attention"]["heads"]);
  // --match params: one head_dim, the attention width within half a head_dim step of the uniform 2 x 2 x 8 = 32
  const int64_t hd = layers[0]["attention"]["head_dim"].as<int64_t>();
  CHECK(layers[1]["attention"]["head_dim"].as<int64_t>() == hd);
  CHECK(std::llabs(hd * kept - 32) * 2 <= kept);
  // so the parameters differ by at most (4 d_model + 3) per unit of width: tolerance (4 * 16 + 3) * kept / 2
  const int64_t diff = parameters_of(out + "/runs/allocated-s0") - parameters_of(out + "/runs/uniform-s0");
  CHECK(std::llabs(diff) * 2 <= (4 * 16 + 3) * kept);

  for (const char* run : {"allocated-s0", "allocated-s1", "uniform-s0", "uniform-s1", "heads1-s0", "heads1-s1"})
    CHECK_MESSAGE(fs::exists(out + "/runs/" + run + "/result.json"), run);
  const std::string md = read_file(out + "/results.md");
  CHECK(md.find("| allocated | ") != std::string::npos);
  CHECK(md.find("| uniform | 2+2 | ") != std::string::npos);
  CHECK(md.find("| heads1 | 1+1 | ") != std::string::npos);
  CHECK(md.find("(2) |") != std::string::npos);  // two seeds a row
  CHECK(md.find("[seed 0](runs/allocated-s0/report.html), [seed 1](runs/allocated-s1/report.html) |") !=
        std::string::npos);
  CHECK(md.find("All runs compared: [report.html](report.html)") != std::string::npos);
  CHECK(read_file(out + "/report.html").find("<a href=\"runs/heads1-s1/report.html\">report</a>") !=
        std::string::npos);
  const std::string csv = read_file(out + "/results.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);  // header + three models
  CHECK(fs::file_size(out + "/metric_vs_parameters.png") > 0);

  // started again: nothing retrained, the same table
  const auto stamp = fs::last_write_time(out + "/runs/allocated-s1/checkpoint-last.safetensors");
  const auto t0 = std::chrono::steady_clock::now();
  const Result again = headroom(args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_MESSAGE(again.code == 0, again.output);
  CHECK(again.output.find("training") == std::string::npos);
  CHECK(again.output.find("reusing") != std::string::npos);
  CHECK(fs::last_write_time(out + "/runs/allocated-s1/checkpoint-last.safetensors") == stamp);
  CHECK(read_file(out + "/results.csv") == csv);
  MESSAGE("rerun took " << seconds << " s");

  // --remeasure: the same runs and metric, only the timings taken again
  const auto result_of = [&](const std::string& run) {
    return nlohmann::json::parse(read_file(out + "/runs/" + run + "/result.json"));
  };
  const nlohmann::json before = result_of("allocated-s0");
  const Result timed = headroom(args + " --remeasure");
  REQUIRE_MESSAGE(timed.code == 0, timed.output);
  CHECK(timed.output.find("training") == std::string::npos);
  CHECK(timed.output.find("allocate: timing " + out + "/runs/heads1-s1") != std::string::npos);
  const nlohmann::json after = result_of("allocated-s0");
  CHECK(after.at("value") == before.at("value"));
  CHECK(after.at("parameters") == before.at("parameters"));
  CHECK(after.at("step_ms").get<double>() > 0);

  // an interrupted compare run (no result.json) is finished, the others reused
  fs::remove(out + "/runs/uniform-s1/result.json");
  const Result resumed = headroom(args);
  REQUIRE_MESSAGE(resumed.code == 0, resumed.output);
  CHECK(resumed.output.find("training uniform, seed 1") != std::string::npos);
  CHECK(resumed.output.find("training allocated") == std::string::npos);
  CHECK(fs::exists(out + "/runs/uniform-s1/result.json"));

  // the same --out with another config is refused before anything runs
  const Result other = headroom("allocate " + quote(cfg) + " --set train.max_steps=41 --set train.gate_lr=0.1 "
                                "--wide-heads 4 --l0-lambda 0.003 --out " + quote(out));
  CHECK(other.code == 2);
  CHECK(other.output.find("holds an allocation made with another config") != std::string::npos);
}

TEST_CASE("allocate: --match none keeps the search model's head_dim (--wide-head-dim); --search-from scratch") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string out = d / "alloc";
  const Result r = headroom("allocate " + quote(cfg) + " --set train.max_steps=10 --wide-heads 3 --wide-head-dim 4 "
                            "--match none --search-from scratch --seeds 1 --out " + quote(out));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(read_file(out + "/search/config.yaml").find("head_dim: 4") != std::string::npos);
  CHECK(read_file(out + "/search/config.yaml").find("init_from") == std::string::npos);
  CHECK(!fs::exists(out + "/search-dense"));  // --search-from scratch
  const YAML::Node layers = YAML::LoadFile(out + "/allocated.yaml")["model"]["layers"];
  REQUIRE(layers.size() == 2);
  for (size_t l = 0; l < 2; ++l) CHECK(layers[l]["attention"]["head_dim"].as<int64_t>() == 4);
  CHECK(fs::exists(out + "/runs/allocated-s0/result.json"));
  CHECK(fs::exists(out + "/runs/uniform-s0/result.json"));
  CHECK(!fs::exists(out + "/runs/uniform-s1"));
}

TEST_CASE("allocate: --allocation compares a given split (no search); --match layer keeps each layer's width") {
  TempDir d;
  const std::string cfg = setup(d);  // 2 layers x 2 heads of 8
  const std::string out = d / "split";
  const std::string args = "allocate " + quote(cfg) + " --set train.max_steps=10 --allocation 4,1 --match layer "
                           "--baselines 1 --seeds 1 --out " + quote(out);
  const Result r = headroom(args);
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(!fs::exists(out + "/search"));
  const YAML::Node layers = YAML::LoadFile(out + "/allocated.yaml")["model"]["layers"];
  REQUIRE(layers.size() == 2);
  CHECK(layers[0]["attention"]["heads"].as<int64_t>() == 4);
  CHECK(layers[0]["attention"]["head_dim"].as<int64_t>() == 4);  // 16 wide, as the uniform layer
  CHECK(layers[1]["attention"]["heads"].as<int64_t>() == 1);
  CHECK(layers[1]["attention"]["head_dim"].as<int64_t>() == 16);
  // every layer as wide as the uniform one: the same parameters, exactly
  CHECK(parameters_of(out + "/runs/allocated-s0") == parameters_of(out + "/runs/uniform-s0"));
  CHECK(read_file(out + "/results.md").find("| allocated | 4+1 | ") != std::string::npos);
  CHECK(fs::exists(out + "/runs/heads1-s0/result.json"));
  // the same --out with another split is refused; a split of the wrong length or with an empty layer is a usage error
  const Result other = headroom("allocate " + quote(cfg) + " --set train.max_steps=10 --allocation 1,4 --match layer "
                                "--out " + quote(out));
  CHECK(other.code == 2);
  CHECK(other.output.find("another allocation") != std::string::npos);
  const Result length = headroom("allocate " + quote(cfg) + " --allocation 4 --out " + quote(d / "b"));
  CHECK(length.code == 2);
  CHECK(length.output.find("--allocation gives 1 head counts") != std::string::npos);
  CHECK(headroom("allocate " + quote(cfg) + " --allocation 0,2 --out " + quote(d / "b")).code == 2);
  CHECK(!fs::exists(d / "b/runs"));
}

TEST_CASE("allocate: bad arguments and configs that cannot be widened exit 2") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string out = quote(d / "a");
  CHECK(headroom("allocate " + quote(cfg) + " --seeds 0 --out " + out).code == 2);
  CHECK(headroom("allocate " + quote(cfg) + " --match all --out " + out).code == 2);
  const Result narrow = headroom("allocate " + quote(cfg) + " --wide-heads 1 --out " + out);
  CHECK(narrow.code == 2);
  CHECK(narrow.output.find("--wide-heads 1 is below the 2 heads") != std::string::npos);
  const Result baseline = headroom("allocate " + quote(cfg) + " --baselines 3 --out " + out);
  CHECK(baseline.code == 2);
  CHECK(baseline.output.find("--baselines 3") != std::string::npos);
  const Result linked = headroom("allocate " + quote(cfg) +
                                 " --set model.layers.0.attention.cross_layer=residual_logits --out " + out);
  CHECK(linked.code == 2);
  CHECK(linked.output.find("model.layers.0.attention.cross_layer") != std::string::npos);
  CHECK(!fs::exists(d / "a/search"));  // nothing trained
}
