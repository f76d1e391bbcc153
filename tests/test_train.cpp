// The training binary end to end on tiny data made in a temp dir: resume equals an uninterrupted run, a seed fixes a
// run, broken checkpoints / configs / data rows fail with the right exit code and a message naming the culprit,
// non-finite losses are skipped and stop the run, and the run directory holds what eval / predict / init_from need.
#include <doctest/doctest.h>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/atomic_file.h"
#include "framework/config.h"
#include "framework/safetensors.h"
#include "models/encoder_model.h"
#include "train/run/checkpoint.h"
#include "train/tasks/classification_task.h"
#include "tests/tiny_run.h"

namespace fs = std::filesystem;
using namespace hr;
using namespace hr::testing;

namespace {

// Every tensor (weights and AdamW state) of a checkpoint.
std::map<std::string, std::vector<float>> checkpoint_tensors(const std::string& path) {
  std::map<std::string, std::vector<float>> m;
  for (const auto& [name, t] : read_safetensors(path).tensors) m[name] = to_f32(t);
  return m;
}

}  // namespace

// A run cut at step 10 and resumed reaches step 20 with the losses and weights of the uninterrupted run; `sets` picks
// the optimizer (its state must come back from the checkpoint, or the weights diverge).
static void check_resume_matches_uninterrupted(const std::string& sets) {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string full = d / "full", cut = d / "cut";
  const Result a = headroom("train --quiet " + quote(cfg) + sets + " --out " + quote(full));
  REQUIRE_MESSAGE(a.code == 0, a.output);
  const Result b1 = headroom("train --quiet " + quote(cfg) + sets + " --set train.max_steps=10 --out " + quote(cut));
  REQUIRE_MESSAGE(b1.code == 0, b1.output);
  const Result b2 = headroom("train --quiet --resume " + quote(cut) + " --set train.max_steps=20");
  REQUIRE_MESSAGE(b2.code == 0, b2.output);
  CHECK(b2.output.find("at step 10") != std::string::npos);

  const auto la = losses(full), lb = losses(cut);
  REQUIRE(la.size() == 20);
  REQUIRE(lb.size() == 20);
  for (int64_t s = 1; s <= 20; ++s) {
    INFO("step " << s);
    REQUIRE(lb.count(s));
    CHECK(lb.at(s) == doctest::Approx(la.at(s)).epsilon(1e-6));
  }
  // dropout is on: the losses are not all equal, and training moves them
  CHECK(la.at(1) != la.at(2));

  const auto wa = checkpoint_tensors(full + "/checkpoint-last.safetensors");
  const auto wb = checkpoint_tensors(cut + "/checkpoint-last.safetensors");
  REQUIRE(wa.size() == wb.size());
  for (const auto& [name, va] : wa) {
    INFO(name);
    REQUIRE(wb.count(name));
    const auto& vb = wb.at(name);
    REQUIRE(va.size() == vb.size());
    float worst = 0;
    for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(va[i] - vb[i]));
    CHECK(worst <= 1e-6f);
  }
}

TEST_CASE("resume from checkpoint-last continues exactly like an uninterrupted run (AdamW)") {
  check_resume_matches_uninterrupted("");
}

TEST_CASE("an SGD run checkpoints its momentum and resumes exactly like an uninterrupted run") {
  check_resume_matches_uninterrupted(" --set train.optimizer=sgd --set train.lr=0.05");
}

TEST_CASE("the same seed gives the same losses; another seed does not") {
  TempDir d;
  const std::string cfg = setup(d, "");
  for (const char* run : {"r1", "r2"}) {
    const Result r = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=8 --out " + quote(d / run));
    REQUIRE_MESSAGE(r.code == 0, r.output);
  }
  const Result r3 =
      headroom("train --quiet " + quote(cfg) + " --set train.max_steps=8 --set train.seed=2 --out " + quote(d / "r3"));
  REQUIRE_MESSAGE(r3.code == 0, r3.output);
  const auto l1 = losses(d / "r1"), l2 = losses(d / "r2"), l3 = losses(d / "r3");
  REQUIRE(l1.size() == 8);
  CHECK(l1 == l2);
  CHECK(l1 != l3);
}

TEST_CASE("a broken checkpoint fails eval and resume with exit code 1 naming the file") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string run = d / "run";
  const Result r = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=5 --out " + quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::string last = run + "/checkpoint-last.safetensors";
  const std::string good = read_file(last);
  REQUIRE(good.size() > 1000);

  const std::string png = std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0", 29);
  const std::vector<std::pair<const char*, std::string>> broken = {
      {"truncated", good.substr(0, good.size() / 2)},
      {"png", png},
      {"text", "this is not a checkpoint\n"},
      {"empty", ""}};
  for (const auto& [what, bytes] : broken) {
    INFO(std::string(what));
    write_file(last, bytes);
    const Result e = headroom("eval --run " + quote(run) + " --checkpoint last --split eval");
    CHECK(e.code == 1);
    CHECK(e.output.find(last) != std::string::npos);
    const Result t = headroom("train --quiet --resume " + quote(run));
    CHECK(t.code == 1);
    CHECK(t.output.find(last) != std::string::npos);
  }
}

TEST_CASE("a failed checkpoint write leaves the previous checkpoint intact") {
  Config cfg = Config::parse(
      "type: encoder_classifier\nd_model: 8\nmax_len: 8\nlayers:\n  - attention: {heads: 2, head_dim: 4}\n", "m");
  auto model = build_model(cfg, ModelDims{20, 3});
  TempDir d;
  const std::string path = d / "ckpt.safetensors";
  TrainState st;
  st.step = 7;
  save_checkpoint(path, *model, nullptr, st);
  const std::string before = read_file(path);
  // checkpoints go through write_file_atomically (safetensors.cpp): a writer that dies half-way changes nothing
  CHECK_THROWS_AS(write_file_atomically(path,
                                        [&](std::ostream& out) {
                                          out << before.substr(0, before.size() / 2);
                                          throw std::runtime_error("killed while saving");
                                        }),
                  std::runtime_error);
  CHECK(read_file(path) == before);
  CHECK(load_checkpoint(path, *model, nullptr).step == 7);
  for (const auto& e : fs::directory_iterator(d.path)) CHECK(e.path().filename() == "ckpt.safetensors");
}

TEST_CASE("config errors exit with code 2 and name file, line and key") {
  TempDir d;
  setup(d);
  const std::string base = tiny_config(d);
  const std::string next_line = std::to_string(std::count(base.begin(), base.end(), '\n') + 1);
  struct Case {
    const char* what;
    std::string yaml, args;
    std::vector<std::string> expect;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {"unknown top-level key", base + "trian:\n  lr: 1\n", "", {"bad.yaml:" + next_line, "trian"}},
      {"unknown train key", base + "  lrr: 1\n", "", {"bad.yaml:" + next_line, "train.lrr"}},
      {"bad --set value", base, "--set train.lr=abc", {"--set", "train.lr"}},
      {"zero heads", base, "--set model.layers.0.attention.heads=0", {"--set", "heads"}},
      {"unknown layer type", base, "--set model.layers.0.type=transformr", {"--set", "type", "transformr"}},
  };
  const std::string cfg = d / "bad.yaml";
  for (const auto& c : cases) {
    INFO(std::string(c.what));
    write_file(cfg, c.yaml);
    const Result r = headroom("train --quiet " + quote(cfg) + " " + c.args + " --out " + quote(d / "run"));
    INFO(r.output);
    CHECK(r.code == 2);
    for (const auto& e : c.expect) CHECK(r.output.find(e) != std::string::npos);
    CHECK(!fs::exists(d / "run"));
  }
}

TEST_CASE("non-finite losses are skipped by step; repeated ones stop the run with code 3, checkpoint intact") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string run = d / "run";
  const Result r = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=5 --out " + quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::string last = run + "/checkpoint-last.safetensors";
  const std::string good = read_file(last);

  // SGD with lr 1e30 and no clipping: the first step blows the weights up to ~1e30, so every later forward overflows
  // (LayerNorm squares the activations) and the loss is inf/NaN. Steps 7..9 are skipped, and 9 is the third in a row.
  // Step 8 ends epoch 0: no checkpoint may be written in the middle of the streak.
  const Result bad = headroom("train --resume " + quote(run) +
                              " --set train.max_steps=20 --set train.optimizer=sgd --set train.lr=1e30"
                              " --set train.clip=0 --set train.max_bad_steps=3");
  INFO(bad.output);
  CHECK(bad.code == 3);
  CHECK(bad.output.find("step 7: non-finite") != std::string::npos);
  CHECK(bad.output.find("step 9: non-finite") != std::string::npos);
  CHECK(bad.output.find("stopping: 3 consecutive steps") != std::string::npos);
  CHECK(bad.output.find(last) != std::string::npos);
  std::vector<int64_t> skipped;
  for (const auto& row : metrics_rows(run))
    if (row.contains("skipped")) skipped.push_back(row["step"].get<int64_t>());
  CHECK(skipped == std::vector<int64_t>{7, 8, 9});

  // the checkpoint from step 5 is untouched and still loads
  CHECK(read_file(last) == good);
  const Result e = headroom("eval --run " + quote(run) + " --checkpoint last --split eval");
  CHECK_MESSAGE(e.code == 0, e.output);
}

TEST_CASE("a checkpoint killed while being saved leaves the previous file whole") {
  TempDir d;
  const std::string path = d / "ckpt.safetensors";
  std::vector<float> big(1 << 21, 1.f);  // 8 MB: a save takes long enough to be interrupted
  SafeTensorsFile f;
  f.tensors["w"] = from_f32({static_cast<int64_t>(big.size())}, big.data());
  write_safetensors(path, f);
  for (int attempt = 0; attempt < 5; ++attempt) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // save over and over until killed
      for (;;) write_safetensors(path, f);
    }
    usleep(static_cast<useconds_t>(20000 + 17000 * attempt));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    const SafeTensorsFile back = read_safetensors(path);  // never a torn file
    CHECK(to_f32(back.tensors.at("w")) == big);
  }
}

TEST_CASE("a malformed data row is reported with file:line; skip continues, fail stops") {
  TempDir d;
  const std::string cfg = setup(d);
  std::string rows = read_file(d / "train.jsonl");
  // line 4 of the file becomes broken JSON
  size_t at = 0;
  for (int i = 0; i < 3; ++i) at = rows.find('\n', at) + 1;
  rows.insert(at, "{\"text\": \"play a song\", \"label\": \n");
  write_file(d / "train.jsonl", rows);

  const Result skip = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=2 --out " + quote(d / "a"));
  INFO(skip.output);
  CHECK(skip.code == 0);
  CHECK(skip.output.find("train.jsonl:4") != std::string::npos);

  const Result fail = headroom("train --quiet " + quote(cfg) +
                               " --set train.max_steps=2 --set data.on_error=fail --out " + quote(d / "b"));
  INFO(fail.output);
  CHECK(fail.code == 1);
  CHECK(fail.output.find("train.jsonl:4") != std::string::npos);
  CHECK(!fs::exists(d / "b/checkpoint-last.safetensors"));

  // CSV: a row with a column too many
  std::string csv = "text,label\n";
  for (const auto& [text, label] : tiny_rows(30, 0)) csv += text + "," + label + "\n";
  csv += "set an alarm,alarm,extra\n";
  write_file(d / "train.csv", csv);
  const Result c = headroom("train --quiet " + quote(cfg) + " --set data.format=csv --set data.train_path=" +
                            quote(d / "train.csv") + " --set data.eval_path=" + quote(d / "train.csv") +
                            " --set train.max_steps=2 --out " + quote(d / "c"));
  INFO(c.output);
  CHECK(c.code == 0);
  CHECK(c.output.find("train.csv:32") != std::string::npos);
}

TEST_CASE("the run directory, metrics.jsonl, predict and init_from") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string run = d / "run";
  const Result r = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=30 --set train.lr=1e-2 --out " +
                            quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  for (const char* f : {"config.yaml", "vocab.txt", "labels.txt", "checkpoint-best.safetensors",
                        "checkpoint-last.safetensors", "metrics.jsonl"})
    CHECK_MESSAGE(fs::exists(run + "/" + f), f);
  CHECK(read_file(run + "/labels.txt") == "alarm\nmusic\nweather\n");

  // what the run report reads: a session row first, then per logged step the loss, lr, speed, tokens seen so far,
  // gradient norms and wall time; evaluations with their own time
  int train_rows = 0, eval_rows = 0;
  int64_t last_tokens = 0;
  const auto rows = metrics_rows(run);
  REQUIRE(!rows.empty());
  REQUIRE(rows[0].contains("session"));
  CHECK(rows[0]["step"] == 0);
  for (const char* k : {"host", "cpu", "threads", "device", "precision", "ranks", "started"})
    CHECK_MESSAGE(rows[0]["session"].contains(k), k);
  CHECK(rows[0]["session"]["device"] == "cpu");
  CHECK(rows[0]["session"]["resumed"] == false);
  for (const auto& row : rows) {
    if (row.contains("loss")) {
      ++train_rows;
      for (const char* k : {"step", "loss", "lr", "tokens_per_s", "tokens", "grad_norm", "grad_norm_max", "elapsed_s"})
        CHECK_MESSAGE(row.contains(k), k);
      CHECK(std::isfinite(row["loss"].get<double>()));
      CHECK(row["tokens_per_s"].get<double>() > 0);
      CHECK(row["tokens"].get<int64_t>() > last_tokens);  // 8 rows of a few tokens a step
      last_tokens = row["tokens"].get<int64_t>();
      CHECK(row["grad_norm"].get<double>() > 0);
      CHECK(row["grad_norm_max"].get<double>() >= row["grad_norm"].get<double>());
    }
    if (row.contains("eval")) {
      ++eval_rows;
      for (const char* k : {"accuracy", "macro_f1"}) CHECK_MESSAGE(row["eval"].contains(k), k);
      CHECK(row["eval_s"].get<double>() > 0);
      CHECK(row["elapsed_s"].get<double>() > 0);
    }
  }
  CHECK(train_rows == 30);
  CHECK(eval_rows == 6);

  // a resume writes its own session row and counts tokens on from the last kept row
  const Result more = headroom("train --quiet --resume " + quote(run) + " --set train.max_steps=32");
  REQUIRE_MESSAGE(more.code == 0, more.output);
  const auto resumed = metrics_rows(run);
  int sessions = 0;
  for (const auto& row : resumed) sessions += row.contains("session");
  CHECK(sessions == 2);
  CHECK(resumed[rows.size()]["session"]["resumed"] == true);
  CHECK(resumed[rows.size()]["step"] == 30);
  CHECK(resumed[rows.size() + 1]["step"] == 31);
  CHECK(resumed[rows.size() + 1]["tokens"].get<int64_t>() > last_tokens);

  const Result p = headroom("predict --run " + quote(run) + " --text 'what is the weather forecast today'");
  REQUIRE_MESSAGE(p.code == 0, p.output);
  const std::string json_line = p.output.substr(p.output.rfind('{', p.output.find("\"label\"")));
  const auto j = nlohmann::json::parse(json_line.substr(0, json_line.find('\n')));
  CHECK(j["label"] == "weather");
  CHECK(j["top"].size() == 3);

  // JSONL on stdin, one JSON line out per input
  const Result pj = headroom("predict --run " + quote(run) + " --top 2 < " + quote(d / "eval.jsonl"));
  REQUIRE_MESSAGE(pj.code == 0, pj.output);
  CHECK(std::count(pj.output.begin(), pj.output.end(), '\n') == 15);
  CHECK(nlohmann::json::parse(pj.output.substr(0, pj.output.find('\n')))["top"].size() == 2);

  // eval --json: one object with the metrics under the split's name; --data evaluates another file as the test split
  const Result ej = headroom("eval --run " + quote(run) + " --split eval --json");
  REQUIRE_MESSAGE(ej.code == 0, ej.output);
  const auto ev = nlohmann::json::parse(ej.output);
  CHECK(ev["eval"]["accuracy"].get<double>() >= 0.0);
  write_jsonl(d / "other.jsonl", tiny_rows(9, 5));
  const Result ed = headroom("eval --run " + quote(run) + " --json --data " + quote(d / "other.jsonl"));
  REQUIRE_MESSAGE(ed.code == 0, ed.output);
  CHECK(nlohmann::json::parse(ed.output)["split"] == "test");

  // fine-tuning from the last checkpoint starts where that run ended, well below a fresh start (~ln 3); the best
  // checkpoint may be an early one, since 15 eval rows often tie on accuracy
  const auto scratch = losses(run);
  const Result f = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=1 --set train.init_from=" +
                            quote(run + "/checkpoint-last.safetensors") + " --out " + quote(d / "ft"));
  REQUIRE_MESSAGE(f.code == 0, f.output);
  const double first = losses(d / "ft").at(1);
  INFO("scratch " << scratch.at(1) << ", init_from " << first);
  CHECK(first < scratch.at(1) - 0.2);
}

TEST_CASE("classification_metrics on a hand-made case") {
  // labels 0, 1, 2; 2 is oos
  const std::vector<int32_t> gold = {0, 0, 0, 1, 1, 2, 2, 2};
  const std::vector<int32_t> pred = {0, 0, 1, 1, 2, 2, 2, 0};
  const auto m = classification_metrics(gold, pred, 4, 2);  // label 3: neither gold nor predicted, not averaged
  CHECK(m.at("accuracy") == doctest::Approx(5.0 / 8));
  // F1: class 0 tp 2 fp 1 fn 1 -> 4/6; class 1 tp 1 fp 1 fn 1 -> 2/4; class 2 tp 2 fp 1 fn 1 -> 4/6
  CHECK(m.at("macro_f1") == doctest::Approx((4.0 / 6 + 2.0 / 4 + 4.0 / 6) / 3));
  CHECK(m.at("oos_recall") == doctest::Approx(2.0 / 3));
  CHECK(m.at("in_scope_accuracy") == doctest::Approx(3.0 / 5));
  const auto no_oos = classification_metrics(gold, pred, 3, -1);
  CHECK(no_oos.count("oos_recall") == 0);
  CHECK(no_oos.at("macro_f1") == doctest::Approx(m.at("macro_f1")));
}

TEST_CASE("a run that max_steps ends mid-epoch is evaluated at its last step, once; one ending with an epoch too") {
  TempDir d;
  const std::string cfg = setup(d);
  const auto eval_steps = [&](const std::string& name, int64_t max_steps) {
    const std::string run = d / name;
    const Result r = headroom("train --quiet " + quote(cfg) + " --set train.eval_every=0 --set train.max_steps=" +
                              std::to_string(max_steps) + " --out " + quote(run));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    CHECK(fs::exists(run + "/checkpoint-best.safetensors"));
    std::vector<int64_t> steps;
    for (const auto& row : metrics_rows(run))
      if (row.contains("eval")) steps.push_back(row["step"].get<int64_t>());
    return steps;
  };
  // 60 rows in batches of 8: an epoch's end is evaluated (eval_every 0), and so is step 10, mid-epoch
  const std::vector<int64_t> cut = eval_steps("cut", 10);
  REQUIRE(cut.size() == 2);
  CHECK(cut[0] < 10);
  CHECK(cut[1] == 10);
  // a run whose last step ends an epoch is evaluated there once
  CHECK(eval_steps("whole", cut[0]) == std::vector<int64_t>{cut[0]});
}

TEST_CASE("train.gate_lr: the L0 gates learn at their own rate, the weights at lr") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string gated = " --set model.layers.0.attention.gates.type=l0 --set model.layers.0.attention.gates.lambda=0.5"
                            " --set train.max_steps=5 --set train.eval_every=5";
  // how far the gates' open probabilities moved from init_open (0.9), at the last evaluation
  auto gate_travel = [&](const std::string& extra, const std::string& name) {
    const std::string run = d / name;
    const Result r = headroom("train --quiet " + quote(cfg) + gated + extra + " --out " + quote(run));
    REQUIRE_MESSAGE(r.code == 0, r.output);
    double travel = 0;
    for (const auto& row : metrics_rows(run))
      if (row.contains("gates"))
        for (const auto& layer : row["gates"]["open_probability"])
          for (const auto& p : layer) travel = std::max(travel, std::fabs(p.get<double>() - 0.9));
    return travel;
  };
  const double same = gate_travel("", "same"), fast = gate_travel(" --set train.gate_lr=0.3", "fast");
  CHECK(same > 0);
  CHECK(fast > 20 * same);
  const Result bad = headroom("train --quiet " + quote(cfg) + " --set train.gate_lr=-1 --out " + quote(d / "bad"));
  CHECK(bad.code == 2);
  CHECK(bad.output.find("gate_lr") != std::string::npos);
}
