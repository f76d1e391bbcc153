// The experiment scripts. The resumable one (scripts/pretrained-heads-experiments.sh) run against a stand-in for
// headroom that records its calls: a finished run is never trained again, an interrupted one is resumed rather than
// restarted, and a later part waits for the runs it builds on. The statistics behind the seed comparisons in docs/
// (scripts/compare_seeds.py) on cases computed by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "tests/tiny_run.h"

using namespace hr::testing;
namespace fs = std::filesystem;

namespace {

// A headroom that appends its arguments to $CALLS, makes the --out directory with a last checkpoint, and fails
// (exit 1, as a killed run) when a --set value names $FAIL_ON, after that checkpoint is written.
constexpr const char* kStub = R"(#!/usr/bin/env bash
echo "$*" >>"$CALLS"
out=
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift ;;
    --resume) out=$2; shift ;;
  esac
  shift
done
[ -n "$out" ] && mkdir -p "$out" && touch "$out/checkpoint-last.safetensors" "$out/checkpoint-best.safetensors"
[ -n "${FAIL_ON:-}" ] && grep -q -- "$FAIL_ON" <(tail -n 1 "$CALLS") && exit 1
exit 0
)";

// The stand-in, as d/headroom.
void write_stub(const TempDir& d) {
  {
    std::ofstream f(d / "headroom");
    f << kStub;
  }
  fs::permissions(d / "headroom", fs::perms::owner_all);
}

std::vector<std::string> calls(const TempDir& d) {
  std::vector<std::string> out;
  std::ifstream f(d / "calls");
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

Result run_script(const TempDir& d, const std::string& parts, const std::string& env = "") {
  fs::remove(d / "calls");
  return shell("CALLS=" + quote(d / "calls") + " HEADROOM=" + quote(d / "headroom") + " SEEDS=0 " + env + " " +
               quote(repo_path("scripts/pretrained-heads-experiments.sh")) + " " + quote(d / "out") + " " + parts);
}

int count(const std::vector<std::string>& lines, const std::string& needle) {
  int n = 0;
  for (const auto& l : lines) n += l.find(needle) != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("experiments: pretraining runs are skipped when complete and resumed when interrupted") {
  TempDir d;
  write_stub(d);

  // the second arm (4 heads) is killed after its first checkpoint: the script stops there
  Result r = run_script(d, "pretrain", "FAIL_ON='heads: 4,'");
  CHECK(r.code != 0);
  std::vector<std::string> c = calls(d);
  REQUIRE(c.size() == 2);
  CHECK(c[0].find("--out " + (d / "out/pretrain/h1")) != std::string::npos);
  CHECK(c[0].find("heads: 1, head_dim: 256") != std::string::npos);
  CHECK(c[0].find("train.precision=f32") != std::string::npos);
  CHECK(fs::exists(d / "out/pretrain/h1/complete"));
  CHECK(!fs::exists(d / "out/pretrain/h4/complete"));

  // again: h1 is not touched, h4 resumes from its checkpoint, the other eight arms start afresh
  r = run_script(d, "pretrain");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  c = calls(d);
  REQUIRE(c.size() == 9);
  CHECK(c[0] == "train --resume " + (d / "out/pretrain/h4") + " --quiet");
  CHECK(count(c, "out/pretrain/h1 ") == 0);
  CHECK(count(c, "--resume") == 1);
  for (const char* arm : {"h8", "h16", "split", "talking", "h8-seed1", "h64", "h64-seed1", "h16-seed1"}) {
    CAPTURE(arm);
    CHECK(count(c, "--out " + (d / "out/pretrain/") + arm + " ") == 1);
    CHECK(fs::exists(d / "out/pretrain/" + arm + "/complete"));
  }
  CHECK(count(c, "train.seed=1") == 3);
  CHECK(count(c, "heads: 16, head_dim: 16") == 2);
  CHECK(count(c, "talking_heads: true") == 1);
  CHECK(count(c, "heads: 64, head_dim: 4") == 2);
  CHECK(count(c, "{repeat: 2, attention: {heads: 8, head_dim: 32}}, {repeat: 2, attention: {heads: 4, head_dim: 64}}") ==
        1);

  // everything complete: nothing runs
  r = run_script(d, "pretrain");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(calls(d).empty());
}

TEST_CASE("experiments: fine-tuning waits for its pretraining run and is not repeated") {
  TempDir d;
  write_stub(d);
  fs::create_directories(d / "out/pretrain/h8");
  std::ofstream(d / "out/pretrain/h8/complete").close();

  Result r = run_script(d, "finetune");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::vector<std::string> c = calls(d);
  REQUIRE(c.size() == 2);  // only h8 is pretrained: CLINC150, then bAbI
  CHECK(c[0].find("configs/clinc150-from-pretrain.yaml") != std::string::npos);
  CHECK(c[0].find("--out " + (d / "out/finetune/h8-0") + " ") != std::string::npos);
  CHECK(c[1].find("configs/babi-qa1-from-pretrain.yaml") != std::string::npos);
  CHECK(c[1].find("--out " + (d / "out/finetune-babi/h8-0") + " ") != std::string::npos);
  for (const auto& call : c) {
    CHECK(call.find("train.init_from=" + (d / "out/pretrain/h8/checkpoint-best.safetensors")) != std::string::npos);
    CHECK(call.find("heads: 8, head_dim: 32") != std::string::npos);
  }
  CHECK(r.output.find("h1 not pretrained yet") != std::string::npos);

  r = run_script(d, "finetune");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(calls(d).empty());

  CHECK(run_script(d, "bogus").code == 2);
}

TEST_CASE("experiments: the scratch baselines fine-tune every layout once, from no checkpoint") {
  TempDir d;
  write_stub(d);
  Result r = run_script(d, "scratch", "QA_SEEDS='0 1'");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  std::vector<std::string> c = calls(d);
  REQUIRE(c.size() == 7 + 2 * 7);  // seven layouts (not the second pretraining seeds): CLINC150 seed 0, bAbI seeds 0 1
  CHECK(count(c, "init_from") == 0);
  CHECK(count(c, "seed1") == 0);
  CHECK(count(c, "configs/clinc150-from-pretrain.yaml") == 7);
  CHECK(count(c, "--out " + (d / "out/scratch-babi/talking-1") + " ") == 1);
  CHECK(count(c, "talking_heads: true") == 3);
  CHECK(fs::exists(d / "out/scratch/h16-0/wall_ms"));
  CHECK(fs::exists(d / "out/scratch/h64-0/wall_ms"));

  r = run_script(d, "scratch", "QA_SEEDS='0 1'");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(calls(d).empty());
}

TEST_CASE("experiments: ARMS picks the pretraining arms and their order; an unknown arm is a usage error") {
  TempDir d;
  write_stub(d);
  Result r = run_script(d, "pretrain", "ARMS='h8 h1'");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::vector<std::string> c = calls(d);
  REQUIRE(c.size() == 2);
  CHECK(c[0].find("--out " + (d / "out/pretrain/h8") + " ") != std::string::npos);
  CHECK(c[1].find("--out " + (d / "out/pretrain/h1") + " ") != std::string::npos);
  CHECK(!fs::exists(d / "out/pretrain/h4"));

  r = run_script(d, "pretrain", "ARMS='h8 h3'");
  CHECK(r.code == 2);
  CHECK(r.output.find("no arm 'h3'") != std::string::npos);

  // the fine-tuning parts take the same arms
  r = run_script(d, "finetune scratch", "ARMS='h8'");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(calls(d).size() == 4);
  CHECK(count(calls(d), "heads: 8, head_dim: 32") == 4);
  CHECK(r.output.find("not pretrained yet") == std::string::npos);
}

namespace {

// d/NAME/metrics.jsonl holding `rows`, one JSON object a line.
void write_run(const TempDir& d, const std::string& name, const std::string& rows) {
  fs::create_directories(d / name);
  write_file(d / (name + "/metrics.jsonl"), rows);
}

Result compare_seeds(const std::string& args) {
  return shell("python3 " + quote(repo_path("scripts/compare_seeds.py")) + " " + args);
}

}  // namespace

TEST_CASE("compare_seeds.py: mean +- sd, Welch's t, the exact permutation p and Fisher's p of hand-computed cases") {
  TempDir d;
  // each run's last row with the metric counts: an earlier value and a later row without it are ignored
  for (int i = 1; i <= 6; ++i)
    write_run(d, std::to_string(i),
              "{\"step\": 1, \"eval\": {\"exact_match\": 99}}\n\n{\"step\": 2, \"eval\": {\"exact_match\": " +
                  std::to_string(i) + "}}\n{\"step\": 3, \"test\": {\"accuracy\": 0.5}}\n");
  const std::string a = quote(d / "1") + " " + quote(d / "2") + " " + quote(d / "3");
  const std::string b = quote(d / "4") + " " + quote(d / "5") + " " + quote(d / "6");

  // 1 2 3 against 4 5 6: sd 1 a side; t = -3 / sqrt(1/3 + 1/3) with 4 degrees of freedom; of the 20 splits only the
  // two that keep the sides apart reach a difference of 3; above 3.5 none of A and all of B: Fisher's p 2/20
  Result r = compare_seeds("eval.exact_match " + a + " -- " + b + " --above 3.5");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("A: 2.00 +- 1.00 over 3 runs: 1.00, 2.00, 3.00") != std::string::npos);
  CHECK(r.output.find("B: 5.00 +- 1.00 over 3 runs: 4.00, 5.00, 6.00") != std::string::npos);
  CHECK(r.output.find("difference of means -3.00, Welch's t -3.67 (4.0 degrees of freedom)") != std::string::npos);
  CHECK(r.output.find("(two-sided, 20 splits) 0.100") != std::string::npos);
  CHECK(r.output.find("above 3.5: 0 of 3 against 3 of 3, Fisher's exact p (two-sided) 0.100") != std::string::npos);

  // interleaved sides: 1 3 5 against 2 4 6, a difference of -1 that 14 of the 20 splits reach or exceed
  r = compare_seeds("eval.exact_match " + quote(d / "1") + " " + quote(d / "3") + " " + quote(d / "5") + " -- " +
                    quote(d / "2") + " " + quote(d / "4") + " " + quote(d / "6"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("difference of means -1.00, Welch's t -0.61 (4.0 degrees of freedom)") != std::string::npos);
  CHECK(r.output.find("(two-sided, 20 splits) 0.700") != std::string::npos);
  CHECK(r.output.find("above") == std::string::npos);

  // another metric: the one row that has it
  r = compare_seeds("test.accuracy " + quote(d / "1") + " " + quote(d / "2") + " -- " + quote(d / "3") + " " +
                    quote(d / "4"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(r.output.find("A: 0.50 +- 0.00 over 2 runs") != std::string::npos);
}

TEST_CASE("compare_seeds.py: bad input is a usage error naming the file") {
  TempDir d;
  write_run(d, "a", "{\"eval\": {\"exact_match\": 1}}\n");
  write_run(d, "b", "{\"eval\": {\"exact_match\": 2}}\n");
  write_run(d, "c", "{\"eval\": {\"exact_match\": 3}}\n");
  write_run(d, "bad", "{\"eval\": {\"exact_match\": 4}}\n{bad\n");
  const std::string ab = quote(d / "a") + " " + quote(d / "b");

  Result r = compare_seeds("eval.f1 " + ab + " -- " + ab);
  CHECK(r.code == 2);
  CHECK(r.output.find(d / "a/metrics.jsonl: no row has eval.f1") != std::string::npos);

  r = compare_seeds("eval.exact_match " + ab + " -- " + quote(d / "c") + " " + quote(d / "missing"));
  CHECK(r.code == 2);
  CHECK(r.output.find(d / "missing/metrics.jsonl: No such file") != std::string::npos);

  r = compare_seeds("eval.exact_match " + ab + " -- " + quote(d / "c") + " " + quote(d / "bad"));
  CHECK(r.code == 2);
  CHECK(r.output.find(d / "bad/metrics.jsonl:2: not JSON") != std::string::npos);

  r = compare_seeds("eval.exact_match " + ab + " -- " + quote(d / "c"));
  CHECK(r.code == 2);
  CHECK(r.output.find("at least two runs a side") != std::string::npos);

  r = compare_seeds("eval.exact_match " + ab + " " + quote(d / "c"));
  CHECK(r.code == 2);
  CHECK(r.output.find("Usage") != std::string::npos);
}
