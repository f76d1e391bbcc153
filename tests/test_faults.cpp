// Faults and misuse a user meets, each test named after what it guards: signals during training, kill -9 during a step
// or a save, an unwritable metrics file, an --out that holds a run, predict without input or with the wrong flags or
// bad stdin lines, run directories used from elsewhere, resume bookkeeping (overrides, metrics rows, temp files).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "framework/safetensors.h"
#include "tests/repo_files.h"
#include "tests/tiny_run.h"

using namespace hr;
using namespace hr::testing;

extern char** environ;

namespace {

// headroom in the background, its output into a file.
struct Background {
  pid_t pid = -1;
  std::string log;
  Background(const std::string& args, std::string log_path) : log(std::move(log_path)) {
    const std::string cmd = "exec " + quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom") + " " + args +
                            " > " + quote(log) + " 2>&1";
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    REQUIRE(posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) == 0);
  }
  // Waits until the log holds `text` (false after 60 s or when the process ended).
  bool wait_for(const std::string& text) {
    for (int i = 0; i < 600; ++i) {
      if (read_file(log).find(text) != std::string::npos) return true;
      if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  int wait_exit() {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

std::string one_line_predictions(const std::string& out) {  // the JSON lines of predict's output
  std::string s;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') s += line + "\n";
  return s;
}

// A tiny run training into d/run until it is stopped (10^5 steps, no evaluation), in the background, past step 20.
Background endless_run_past_step_20(const TempDir& d) {
  Background bg("train " + quote(setup(d)) + " --set train.max_steps=100000 --set train.eval_every=100000 --out " +
                    quote(d / "run"),
                d / "log");
  REQUIRE_MESSAGE(bg.wait_for("step 20/"), read_file(d / "log"));
  return bg;
}

// A trained tiny run (30 steps) in d/run.
std::string trained_run(const TempDir& d, const std::string& sets = "") {
  const std::string cfg = setup(d);
  const std::string run = d / "run";
  const Result r = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=30" + sets + " --out " + quote(run));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  return run;
}

}  // namespace

TEST_CASE("sigterm_and_sigint_save_a_checkpoint_at_the_step_boundary_and_the_run_resumes_identically") {
  for (const int sig : {SIGTERM, SIGINT}) {
    CAPTURE(sig);
    TempDir d;
    const std::string cfg = setup(d);
    const std::string steps = " --set train.max_steps=400 --set train.eval_every=1000";
    const Result full = headroom("train --quiet " + quote(cfg) + steps + " --out " + quote(d / "full"));
    REQUIRE_MESSAGE(full.code == 0, full.output);

    Background bg("train " + quote(cfg) + steps + " --out " + quote(d / "cut"), d / "log");
    REQUIRE_MESSAGE(bg.wait_for("step 20/"), read_file(d / "log"));
    kill(bg.pid, sig);
    CHECK(bg.wait_exit() == 128 + sig);
    const std::string log = read_file(d / "log");
    INFO(log);
    CHECK(log.find(std::string("stopped by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT")) != std::string::npos);
    REQUIRE(fs::exists(d / "cut/checkpoint-last.safetensors"));

    const Result resumed = headroom("train --quiet --resume " + quote(d / "cut"));
    REQUIRE_MESSAGE(resumed.code == 0, resumed.output);
    const auto a = losses(d / "full"), b = losses(d / "cut");
    REQUIRE(b.size() == 400);  // every step once: none lost, none logged twice
    for (const auto& [step, loss] : a) CHECK(b.at(step) == doctest::Approx(loss).epsilon(1e-6));
  }
}

TEST_CASE("a_run_directory_has_one_writer_a_second_train_or_resume_is_refused_naming_the_pid") {
  TempDir d;
  Background bg = endless_run_past_step_20(d);
  const std::string config_before = read_file(d / "run/config.yaml");
  const Result second = headroom("train --quiet --resume " + quote(d / "run") + " --set train.lr=1e-4");
  CHECK(second.code == 2);
  CHECK_MESSAGE(second.output.find("in use by another headroom process (pid " + std::to_string(bg.pid) + ")") !=
                    std::string::npos,
                second.output);
  // a new run into it: refused as a directory that holds a run (two new runs racing for one --out meet the lock)
  CHECK(headroom("train --quiet " + quote(d / "tiny.yaml") + " --out " + quote(d / "run")).code == 2);
  CHECK(read_file(d / "run/config.yaml") == config_before);  // the refused resume wrote nothing
  kill(bg.pid, SIGKILL);  // the kernel drops the lock with its holder: the run resumes
  bg.wait_exit();
  const Result resumed = headroom("train --quiet --resume " + quote(d / "run") + " --set train.max_steps=25");
  CHECK_MESSAGE(resumed.code == 0, resumed.output);
}

TEST_CASE("kill_9_during_a_step_resumes_from_the_last_checkpoint_without_duplicate_metrics_or_temp_files") {
  TempDir d;
  const std::string cfg = setup(d);
  Background bg("train " + quote(cfg) + " --set train.max_steps=2000 --out " + quote(d / "run"), d / "log");
  REQUIRE_MESSAGE(bg.wait_for("step 13/"), read_file(d / "log"));  // checkpoints at 5 and 10 (eval_every 5)
  kill(bg.pid, SIGKILL);
  bg.wait_exit();
  const int64_t saved = std::stoll(read_safetensors(d / "run/checkpoint-last.safetensors").metadata.at("step"));
  const size_t logged = losses(d / "run").size();  // steps after the checkpoint were logged before the kill
  INFO("checkpoint at step " << saved << ", " << logged << " steps logged before the kill");
  // a save killed half way leaves its temp file; the resumed run removes it
  write_file(d / "run/checkpoint-last.safetensors.tmp-999999", "half a checkpoint");
  const Result r = headroom("train --quiet --resume " + quote(d / "run") + " --set train.max_steps=" +
                            std::to_string(saved + 5));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK_FALSE(fs::exists(d / "run/checkpoint-last.safetensors.tmp-999999"));
  std::map<int64_t, int> seen;
  for (const auto& row : metrics_rows(d / "run"))
    if (row.contains("loss")) ++seen[row["step"].get<int64_t>()];
  CHECK(seen.size() == static_cast<size_t>(saved + 5));
  for (const auto& [step_, n_] : seen) {
    const auto& step = step_;
    const auto& n = n_;  // CAPTURE's lambda cannot capture a binding (clang 14)
    CHECK_MESSAGE(n == 1, "step " << step << " logged " << n << " times");
  }
}

TEST_CASE("resume_writes_its_set_overrides_back_to_config_yaml") {
  TempDir d;
  const std::string run = trained_run(d);
  const Result r = headroom("train --quiet --resume " + quote(run) + " --set train.max_steps=35");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  CHECK(read_file(run + "/config.yaml").find("max_steps: 35") != std::string::npos);
  const Result again = headroom("train --quiet --resume " + quote(run));  // nothing left to do: not back to 30
  CHECK(again.code == 0);
  CHECK(losses(run).size() == 35);
}

TEST_CASE("resuming_a_finished_run_writes_nothing_and_says_so") {
  TempDir d;
  const std::string run = trained_run(d);
  auto files = [&] {
    std::string all;
    for (const char* f : {"metrics.jsonl", "config.yaml", "checkpoint-last.safetensors", "checkpoint-best.safetensors"})
      all += read_file(run + "/" + f);
    return all;
  };
  const std::string before = files();
  CHECK(before.find("\"done\":true") != std::string::npos);
  const Result r = headroom("train --resume " + quote(run));
  CHECK(r.code == 0);
  CHECK_MESSAGE(r.output.find("finished at step 30 of 30: nothing to resume") != std::string::npos, r.output);
  CHECK(files() == before);  // no second evaluation, test or session row
  // a run killed after its last step but before its end (no "done" or test row: the tiny run has no test split)
  // finishes it when resumed
  std::string cut;
  std::istringstream rows(read_file(run + "/metrics.jsonl"));
  for (std::string row; std::getline(rows, row);)
    if (row.find("\"done\"") == std::string::npos && row.find("\"test\"") == std::string::npos) cut += row + "\n";
  write_file(run + "/metrics.jsonl", cut);
  REQUIRE(headroom("train --quiet --resume " + quote(run)).code == 0);
  CHECK(read_file(run + "/metrics.jsonl").find("\"done\":true") != std::string::npos);
}

TEST_CASE("train_refuses_an_out_that_holds_a_run_and_keeps_it") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string before = read_file(run + "/checkpoint-last.safetensors");
  const Result r = headroom("train --quiet " + quote(d / "tiny.yaml") + " --out " + quote(run));
  CHECK(r.code == 2);
  CHECK(r.output.find("already holds a run") != std::string::npos);
  CHECK(read_file(run + "/checkpoint-last.safetensors") == before);
}

TEST_CASE("an_unwritable_metrics_file_stops_the_run_before_any_step") {
  TempDir d;
  const std::string cfg = setup(d);
  fs::create_directories(d / "run/metrics.jsonl");  // a directory where the file should go
  const Result r = headroom("train --quiet " + quote(cfg) + " --out " + quote(d / "run"));
  CHECK(r.code == 1);
  CHECK(r.output.find("metrics.jsonl") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "run/checkpoint-last.safetensors"));
}

TEST_CASE("predict_without_input_or_with_the_wrong_flags_is_a_usage_error") {
  TempDir d;
  const std::string run = trained_run(d);
  const Result none = headroom("predict --run " + quote(run) + " < /dev/null");
  CHECK(none.code == 2);
  CHECK(none.output.find("no input") != std::string::npos);
  const Result qa = headroom("predict --run " + quote(run) + " --question q --context c");
  CHECK(qa.code == 2);
  CHECK(qa.output.find("give --text") != std::string::npos);
}

TEST_CASE("predict_stdin_reports_bad_lines_in_place_and_answers_the_rest") {
  TempDir d;
  const std::string run = trained_run(d);
  write_file(d / "in.jsonl", "{\"text\": \"play a song\"}\n"
                             "{\"text\": \"bad \xff\xfe bytes\"}\n"
                             "set an alarm\n"
                             "{\"text\": \"rain tomorrow\"}\n");
  const Result r = headroom("predict --run " + quote(run) + " < " + quote(d / "in.jsonl"));
  CHECK(r.code == 1);
  std::vector<nlohmann::json> lines;
  std::istringstream in(one_line_predictions(r.output));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].contains("label"));
  CHECK(lines[1]["line"] == 2);
  CHECK(lines[2]["line"] == 3);  // plain text is not taken for a request
  CHECK(lines[3]["text"] == "rain tomorrow");
}

TEST_CASE("a_run_directory_serves_predict_from_another_directory_and_needs_its_vocab") {
  TempDir d;
  write_jsonl(d / "train.jsonl", tiny_rows(60, 0));
  write_jsonl(d / "eval.jsonl", tiny_rows(15, 3));
  std::string cfg = tiny_config(d);  // data paths relative to the training directory
  for (const char* f : {"train.jsonl", "eval.jsonl"}) cfg.replace(cfg.find(d / f), (d / f).size(), f);
  write_file(d / "tiny.yaml", cfg);
  const std::string bin = quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom");
  auto sh = [](const std::string& cmd) {
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    return Result{WEXITSTATUS(status), out};
  };
  const Result t = sh("cd " + quote(d.path.string()) + " && " + bin + " train --quiet tiny.yaml --out run");
  REQUIRE_MESSAGE(t.code == 0, t.output);
  const Result p = sh("cd / && " + bin + " predict --run " + quote(d / "run") + " --text 'play some music'");
  CHECK_MESSAGE(p.code == 0, p.output);
  fs::remove(d / "run/vocab.txt");
  const Result e = sh("cd " + quote(d.path.string()) + " && " + bin + " eval --run run");
  CHECK(e.code == 1);
  CHECK(e.output.find("vocab.txt is missing") != std::string::npos);
}

TEST_CASE("eval_data_takes_the_requested_split_from_the_file") {
  TempDir d;
  const std::string run = trained_run(d);
  write_jsonl(d / "one.jsonl", tiny_rows(1, 7));
  const Result r = headroom("eval --run " + quote(run) + " --split eval --json --data " + quote(d / "one.jsonl"));
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["split"] == "eval");
  const double acc = j["eval"]["accuracy"].get<double>();
  CHECK((acc == 0.0 || acc == 1.0));  // one row: not the 15-row eval file of the config
}

TEST_CASE("a_missing_config_or_run_directory_exits_2") {
  TempDir d;
  CHECK(headroom("train " + quote(d / "nope.yaml")).code == 2);
  CHECK(headroom("eval --run " + quote(d / "nope")).code == 2);
}

TEST_CASE("a_full_disk_during_a_save_fails_the_run_with_a_message_and_keeps_the_last_checkpoint") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string last = run + "/checkpoint-last.safetensors";
  const std::string before = read_file(last);
  // RLIMIT_FSIZE below a checkpoint's size: its writes fail as on a full disk (EFBIG; SIGXFSZ ignored)
  const std::string limit_kb = std::to_string(before.size() / 1024 / 2);
  const std::string cmd = "trap '' XFSZ; ulimit -f " + limit_kb + "; exec " +
                          quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom") + " train --quiet --resume " +
                          quote(run) + " --set train.max_steps=40 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  INFO(out);
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(out.find("checkpoint") != std::string::npos);
  CHECK(read_file(last) == before);
  for (const auto& e : fs::directory_iterator(run)) CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
  const Result resumed = headroom("train --quiet --resume " + quote(run) + " --set train.max_steps=40");
  CHECK_MESSAGE(resumed.code == 0, resumed.output);
}

TEST_CASE("grad_accum_larger_than_an_epoch_is_a_config_error") {
  TempDir d;
  const std::string cfg = setup(d);  // 60 rows of batch 8: 8 batches an epoch
  const Result r = headroom("train --quiet " + quote(cfg) + " --set train.grad_accum=9 --out " + quote(d / "run"));
  CHECK(r.code == 2);
  CHECK(r.output.find("grad_accum") != std::string::npos);
  CHECK(headroom("train --quiet " + quote(cfg) + " --set train.grad_accum=8 --set train.max_steps=1 --out " +
                 quote(d / "ok")).code == 0);
}

// #38 class 1: a run directory is only ever changed by the run that owns it.
TEST_SUITE("a_run_directory_is_changed_only_by_its_own_run") {

TEST_CASE("export_hf_refuses_a_non_empty_out_without_force_and_a_run_directory_always") {
  TempDir d;
  const std::string run = d / "run", other = d / "other";
  for (const std::string& out : {run, other})
    REQUIRE(headroom("import-hf " + quote(repo_path("tests/fixtures/hf_bert/bert_tiny_cls")) + " --out " + quote(out))
                .code == 0);
  const std::string export_run = "export-hf --run " + quote(run) + " --out ";
  // a folder holding a user's vocabulary: refused, untouched
  fs::create_directories(d / "mine");
  write_file(d / "mine/vocab.txt", "my words\n");
  write_file(d / "mine/notes.txt", "keep me\n");
  Result r = headroom(export_run + quote(d / "mine"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("not empty") != std::string::npos, r.output);
  CHECK(r.output.find("--force") != std::string::npos);
  CHECK(read_file(d / "mine/vocab.txt") == "my words\n");
  CHECK_FALSE(fs::exists(d / "mine/config.json"));
  // --force replaces the export's files and leaves the others
  r = headroom(export_run + quote(d / "mine") + " --force");
  CHECK_MESSAGE(r.code == 0, r.output);
  CHECK(fs::exists(d / "mine/config.json"));
  CHECK(read_file(d / "mine/vocab.txt") == read_file(run + "/vocab.txt"));
  CHECK(read_file(d / "mine/notes.txt") == "keep me\n");
  // a run directory, the exported one or another: refused even with --force, every file as it was
  for (const std::string& out : {run, other}) {
    const std::string config = read_file(out + "/config.yaml"), vocab = read_file(out + "/vocab.txt");
    r = headroom(export_run + quote(out) + " --force");
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find("run directory") != std::string::npos, r.output);
    CHECK(read_file(out + "/config.yaml") == config);
    CHECK(read_file(out + "/vocab.txt") == vocab);
    CHECK_FALSE(fs::exists(out + "/config.json"));
  }
  // a new directory, then the same again: the second export finds it not empty
  CHECK(headroom(export_run + quote(d / "hf")).code == 0);
  CHECK(headroom(export_run + quote(d / "hf")).code == 2);
}

TEST_CASE("import_hf_and_prune_refuse_an_out_that_is_not_a_new_or_empty_directory_and_touch_nothing_in_it") {
  TempDir d;
  const std::string hf = quote(repo_path("tests/fixtures/hf_bert/bert_tiny_cls")), run = d / "run";
  REQUIRE(headroom("import-hf " + hf + " --out " + quote(run)).code == 0);
  // a folder holding a user's files, and a file: refused by both, as they were
  fs::create_directories(d / "mine");
  write_file(d / "mine/vocab.txt", "my words\n");
  write_file(d / "notes.txt", "keep me\n");
  const std::pair<std::string, std::string> outs[] = {{d / "mine", "is not empty (it holds 'vocab.txt')"},
                                                      {d / "notes.txt", "is a file, not a directory"},
                                                      {run, "already holds a run"}};
  const std::string run_config = read_file(run + "/config.yaml");
  for (const std::string& command : {"import-hf " + hf, "prune --run " + quote(run) + " --keep 1"}) {
    for (const auto& [out_, why_] : outs) {
      const auto& out = out_;
      const auto& why = why_;  // CAPTURE's lambda cannot capture a binding (clang 14)
      CAPTURE(command);
      CAPTURE(out);
      const Result r = headroom(command + " --out " + quote(out));
      CHECK(r.code == 2);
      CHECK_MESSAGE(r.output.find(out + " " + why) != std::string::npos, r.output);
    }
  }
  CHECK(read_file(d / "mine/vocab.txt") == "my words\n");
  CHECK(std::distance(fs::directory_iterator(d / "mine"), fs::directory_iterator()) == 1);
  CHECK(read_file(d / "notes.txt") == "keep me\n");
  CHECK(read_file(run + "/config.yaml") == run_config);
  // an empty directory is as good as a new one
  fs::create_directories(d / "empty");
  CHECK(headroom("import-hf " + hf + " --out " + quote(d / "empty")).code == 0);
}

TEST_CASE("resume_set_is_validated_against_the_checkpoint_before_config_yaml_is_written") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string config = read_file(run + "/config.yaml"), metrics = read_file(run + "/metrics.jsonl");
  // a shape the checkpoint does not have, and a grad_accum the data cannot fill: both refused, nothing written
  for (const std::string set : {"model.d_model=32", "train.grad_accum=9"}) {
    CAPTURE(set);
    const Result r = headroom("train --quiet --resume " + quote(run) + " --set " + set);
    CHECK(r.code != 0);
    CHECK(read_file(run + "/config.yaml") == config);
    CHECK(read_file(run + "/metrics.jsonl") == metrics);
  }
  // the run still resumes, predicts and evaluates
  const Result resumed = headroom("train --quiet --resume " + quote(run) + " --set train.max_steps=35");
  CHECK_MESSAGE(resumed.code == 0, resumed.output);
  CHECK(headroom("eval --split eval --run " + quote(run)).code == 0);
}

TEST_CASE("resume_with_out_is_refused_and_advances_neither_run") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string last = read_file(run + "/checkpoint-last.safetensors");
  const Result r = headroom("train --quiet --resume " + quote(run) + " --out " + quote(d / "copy") +
                            " --set train.max_steps=35");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("takes no --out") != std::string::npos, r.output);
  CHECK(read_file(run + "/checkpoint-last.safetensors") == last);
  CHECK_FALSE(fs::exists(d / "copy"));
}

}  // TEST_SUITE

// #38 class 6: a closed terminal or ssh session (SIGHUP) saves and exits as SIGTERM does.
TEST_SUITE("sighup_saves_and_exits_like_sigterm") {

TEST_CASE("sighup_saves_checkpoint_last_at_the_step_boundary_and_the_run_resumes") {
  TempDir d;
  Background bg = endless_run_past_step_20(d);
  kill(bg.pid, SIGHUP);
  CHECK(bg.wait_exit() == 128 + SIGHUP);
  INFO(read_file(d / "log"));
  CHECK(read_file(d / "log").find("stopped by SIGHUP") != std::string::npos);
  REQUIRE(fs::exists(d / "run/checkpoint-last.safetensors"));
  const int64_t saved = std::stoll(read_safetensors(d / "run/checkpoint-last.safetensors").metadata.at("step"));
  CHECK(saved >= 20);
  const Result resumed = headroom("train --quiet --resume " + quote(d / "run") + " --set train.max_steps=" +
                                  std::to_string(saved + 3));
  CHECK_MESSAGE(resumed.code == 0, resumed.output);
}

}  // TEST_SUITE

// #38 class 4: no value is silently replaced or ignored.
TEST_SUITE("no_value_is_silently_replaced_or_ignored") {

TEST_CASE("nan_zero_and_negative_option_values_are_refused_naming_the_option_and_the_bound") {
  TempDir d;
  const std::string cfg = quote(setup(d)), dir = quote(d.path.string());
  const std::pair<std::string, std::string> refused[] = {
      {"prune --run " + dir + " --threshold nan", "--threshold"},
      {"heads --run " + dir + " --threshold inf", "--threshold"},
      {"allocate " + cfg + " --l0-lambda nan", "--l0-lambda"},
      {"allocate " + cfg + " --allocation 2,0", "--allocation"},
      {"sweep " + cfg + " --heads 2 --head-dim 0", "--head-dim"},
      {"sweep " + cfg + " --heads 0,2", "--heads"},
      {"bench " + cfg + " --seq-len 0", "--seq-len"},
      {"bench " + cfg + " --seq-len -5", "--seq-len"},
      {"bench " + cfg + " --warmup -3", "--warmup"},
      {"bench " + cfg + " --batch 0", "--batch"},
      {"info " + cfg + " --seq-len -1", "--seq-len"},
      {"attention --run " + dir + " --text a --layer -1 --head 0", "--layer"},
  };
  for (const auto& [args_, option_] : refused) {
    const auto& args = args_;
    const auto& option = option_;  // CAPTURE's lambda cannot capture a binding (clang 14)
    CAPTURE(args);
    const Result r = headroom(args);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find(option) != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("must be a") != std::string::npos, r.output);  // the bound, in words
    CHECK_MESSAGE(r.output.size() < 300, r.output);                            // not CLI11's 300-digit double
  }
}

TEST_CASE("sweep_refuses_a_head_count_given_twice") {
  TempDir d;
  const Result r = headroom("sweep " + quote(setup(d)) + " --heads 2,2 --out " + quote(d / "sweep"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("lists 2 twice") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(d / "sweep"));
}

TEST_CASE("info_and_bench_refuse_the_unknown_keys_train_refuses") {
  TempDir d;
  const std::string cfg = setup(d);
  write_file(cfg, read_file(cfg) + "  lerning_rate: 1\n");  // in the train: block, the config's last
  for (const std::string command : {"info ", "bench ", "train --quiet "}) {
    CAPTURE(command);
    const Result r = headroom(command + quote(cfg));
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find("train.lerning_rate: unknown key") != std::string::npos, r.output);
  }
}

TEST_CASE("a_config_with_a_second_yaml_document_is_an_error_naming_its_line") {
  TempDir d;
  const std::string cfg = setup(d);
  const std::string first = read_file(cfg);
  const auto lines = std::count(first.begin(), first.end(), '\n');
  write_file(cfg, first + "---\ntrain:\n  lr: 1\n");
  for (const std::string command : {"info ", "train --quiet "}) {
    const Result r = headroom(command + quote(cfg));
    CHECK(r.code == 2);
    // the '---' line that starts the second document
    const std::string where = "tiny.yaml:" + std::to_string(lines + 1) + ": a second YAML document";
    CHECK_MESSAGE(r.output.find(where) != std::string::npos, r.output);
  }
}

}  // TEST_SUITE

// #38 class 3: no input can hang or crash it; every size has a bound that names its key.
TEST_SUITE("no_input_hangs_or_crashes_it_and_every_size_names_its_key") {

// headroom under a time limit: a hang fails the test (exit 124) instead of stopping the suite
Result headroom_within(int seconds, const std::string& args) {
  return shell("timeout " + std::to_string(seconds) + " " + quote(std::string(std::getenv("HR_BUILD_ROOT")) +
               "/headroom") + " " + args);
}

TEST_CASE("a_yaml_alias_bomb_is_refused_in_under_a_second") {
  TempDir d;
  // 1 KB of aliases of aliases: 10^9 values when expanded
  std::string yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n", previous = "a";
  for (const std::string name : {"b", "c", "d", "e", "f", "g", "h", "i"}) {
    yaml += name + ": &" + name + " [";
    for (int i = 0; i < 10; ++i) yaml += (i ? ", *" : "*") + previous;
    yaml += "]\n";
    previous = name;
  }
  write_file(d / "lol.yaml", yaml + "model: {d_model: 16}\n");
  const auto start = std::chrono::steady_clock::now();
  const Result r = headroom_within(20, "info " + quote(d / "lol.yaml"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("aliases of aliases") != std::string::npos, r.output);
#ifdef __SANITIZE_ADDRESS__
  const double limit = 5.0;  // the process alone takes most of a second to start under ASan; unbounded, it hangs
#else
  const double limit = 1.0;
#endif
  CHECK(seconds < limit);
}

TEST_CASE("a_predict_line_nesting_a_million_arrays_is_answered_with_an_error_and_the_next_line_is_served") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  write_file(d / "in.jsonl", "{\"text\": \"a\", \"x\": " + deep + "}\n{\"text\": \"play a song\"}\n");
  const Result r = headroom_within(60, "predict --run " + quote(run) + " < " + quote(d / "in.jsonl"));
  CHECK(r.code == 1);  // a bad line: answered in place, exit 1
  std::istringstream in(one_line_predictions(r.output));
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  REQUIRE_MESSAGE(lines.size() == 2, r.output.substr(0, 500));
  CHECK(lines[0]["line"] == 1);
  CHECK(lines[0]["error"].get<std::string>().find("nested deeper than 100") != std::string::npos);
  CHECK(lines[1]["text"] == "play a song");
}

TEST_CASE("json_files_nesting_100000_arrays_are_refused_at_once_naming_the_file") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
#ifdef __SANITIZE_ADDRESS__
  const double limit = 10.0;  // the process alone takes most of a second to start under ASan
#else
  const double limit = 3.0;
#endif
  const auto within_limit = [&](const std::string& args) {
    const auto start = std::chrono::steady_clock::now();
    const Result r = headroom_within(20, args);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < limit);
    return r;
  };
  // a Hugging Face config.json
  fs::copy(repo_path("tests/fixtures/hf_bert/bert_tiny_cls"), d / "hf", fs::copy_options::recursive);
  write_file(d / "hf/config.json", deep);
  Result r = within_limit("import-hf " + quote(d / "hf") + " --out " + quote(d / "imported"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find(d / "hf/config.json" + ": invalid JSON: nested deeper than 100 levels") !=
                    std::string::npos,
                r.output);
  CHECK_FALSE(fs::exists(d / "imported"));
  // a checkpoint's header: the length, then the JSON
  const std::string header = "{\"a\": " + deep + "}";
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  const std::string checkpoint = read_file(run + "/checkpoint-best.safetensors");
  write_file(run + "/checkpoint-best.safetensors", bytes + header);
  r = within_limit("eval --run " + quote(run) + " --checkpoint best");
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("checkpoint-best.safetensors") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("header is not valid JSON: nested deeper than 100 levels") != std::string::npos,
                r.output);
  write_file(run + "/checkpoint-best.safetensors", checkpoint);
  // a metrics.jsonl line: not a metrics row, named by its line
  const std::string metrics = read_file(run + "/metrics.jsonl");
  write_file(run + "/metrics.jsonl", deep + "\n" + metrics);
  r = within_limit("report " + quote(run) + " --out " + quote(d / "report.html"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("metrics.jsonl:1: not a metrics row") != std::string::npos, r.output);
}

TEST_CASE("devices_and_links_to_them_are_refused_as_not_regular_files_naming_the_key_or_file") {
  TempDir d;
  const std::string run = trained_run(d);
  Result r = headroom_within(20, "info /dev/zero");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("/dev/zero is not a regular file") != std::string::npos, r.output);
  r = headroom_within(20, "train --quiet " + quote(d / "tiny.yaml") + " --set tokenizer.vocab=/dev/zero --out " +
                              quote(d / "other"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("tokenizer.vocab=/dev/zero: '/dev/zero' is not a regular file") != std::string::npos,
                r.output);
  // a metrics.jsonl that is a link to /dev/full (reads as endless zeros): the resume refuses it, the link stays
  fs::remove(run + "/metrics.jsonl");
  fs::create_symlink("/dev/full", run + "/metrics.jsonl");
  r = headroom_within(20, "train --quiet --resume " + quote(run) + " --set train.max_steps=35");
  CHECK(r.code == 1);
  CHECK_MESSAGE(r.output.find("metrics.jsonl is not a regular file") != std::string::npos, r.output);
  CHECK(fs::is_symlink(run + "/metrics.jsonl"));
}

TEST_CASE("model_sizes_past_the_machine_are_refused_before_allocating_naming_the_key") {
  TempDir d;
  const std::string cfg = quote(setup(d));
  const std::pair<std::string, std::string> refused[] = {
      {"train --quiet " + cfg + " --set model.d_model=4611686018427387904 --out " + quote(d / "run"),
       "model.d_model 4.61e+18"},
      {"train --quiet " + cfg + " --set model.max_len=100000000000 --out " + quote(d / "run"),
       "model.max_len 100000000000"},
      {"train --quiet " + cfg + " --set model.layers.0.repeat=1000000000 --out " + quote(d / "run"),
       "model.layers[0]: repeat 1000000000"},
      {"bench " + cfg + " --batch 1000000000", "bench --batch 1000000000"},
  };
  for (const auto& [args_, key_] : refused) {
    const auto& args = args_;
    const auto& key = key_;  // CAPTURE's lambda cannot capture a binding (clang 14)
    CAPTURE(args);
    const Result r = headroom_within(20, args);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find(key) != std::string::npos, r.output);
    CHECK_MESSAGE(r.output.find("this machine has") != std::string::npos, r.output);
  }
  CHECK_FALSE(fs::exists(d / "run/config.yaml"));
  // an imported config.json: refused before its per-layer plan is allocated
  fs::copy(repo_path("tests/fixtures/hf_bert/bert_tiny_cls"), d / "hf", fs::copy_options::recursive);
  auto config = nlohmann::json::parse(read_file(d / "hf/config.json"));
  config["num_hidden_layers"] = 1'000'000'000;
  write_file(d / "hf/config.json", config.dump());
  const Result r = headroom_within(20, "import-hf " + quote(d / "hf") + " --out " + quote(d / "imported"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("'num_hidden_layers': num_hidden_layers 1000000000") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(d / "imported"));
}

#ifndef __SANITIZE_ADDRESS__  // ASan reserves terabytes of address space: it cannot start under a ulimit -v
TEST_CASE("a_model_whose_allocation_runs_out_of_memory_is_a_config_error_naming_its_keys_and_bytes") {
  TempDir d;
  // 4.8e8 parameters (3.8 GB with gradients): within the machine, past an address space of 2 GB
  const std::string bin = quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom");
  const Result r = shell("ulimit -v 2000000; exec " + bin + " train --quiet " + quote(setup(d)) +
                         " --set model.max_len=30000000 --out " + quote(d / "run"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("GB for weights and gradients; allocating them ran out of memory") != std::string::npos,
                r.output);
  CHECK_MESSAGE(r.output.find("model.d_model 16 x (model.max_len 30000000") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(d / "run/config.yaml"));
}
#endif

TEST_CASE("info_describes_a_model_past_the_machine_without_allocating_it_and_refuses_what_it_cannot_count") {
  TempDir d;
  const std::string cfg = quote(setup(d));
  // d_model 10^5, ffn_dim 4 x 10^5: 1.6e11 parameters, 1.3 TB with their gradients
  const std::string huge = cfg + " --set model.d_model=100000 --set model.ffn_dim=400000";
  const auto start = std::chrono::steady_clock::now();
  Result r = headroom_within(20, "info " + huge);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const size_t total = r.output.find("total: ");
  REQUIRE_MESSAGE(total != std::string::npos, r.output);
  CHECK(std::stod(r.output.substr(total + 7)) > 1.6e11);
  CHECK(seconds < 10);  // no weight is allocated or drawn (1.6e11 normal draws would take minutes)
  r = headroom_within(20, "train --quiet " + huge + " --out " + quote(d / "run"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("this machine has") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("ffn_dim 400000") != std::string::npos, r.output);
  CHECK_FALSE(fs::exists(d / "run/config.yaml"));
  // what info cannot count or list is refused naming the part
  const std::pair<std::string, std::string> refused[] = {
      {" --set model.layers.0.repeat=1000000000", "model.layers[0]: repeat 1000000000"},
      {" --set model.d_model=4611686018427387904", "model.d_model 4.61e+18"},
  };
  for (const auto& [set_, key_] : refused) {
    const auto& set = set_;
    const auto& key = key_;  // CAPTURE's lambda cannot capture a binding (clang 14)
    CAPTURE(set);
    r = headroom_within(20, "info " + cfg + set);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find(key) != std::string::npos, r.output);
  }
}

}  // TEST_SUITE

// #38 class 2: a run directory is self-contained, for every command, from any working directory.
TEST_SUITE("a_run_directory_is_self_contained_from_any_working_directory") {

TEST_CASE("eval_and_predict_from_another_directory_use_the_runs_own_vocab_and_absolute_paths") {
  TempDir d;
  write_jsonl(d / "train.jsonl", tiny_rows(60, 0));
  write_jsonl(d / "eval.jsonl", tiny_rows(15, 3));
  write_jsonl(d / "one.jsonl", tiny_rows(1, 7));
  // a first run learns a vocabulary; the second names it and its data relative to the directory it is started in
  std::string cfg = tiny_config(d);
  for (const char* f : {"train.jsonl", "eval.jsonl"}) cfg.replace(cfg.find(d / f), (d / f).size(), f);
  write_file(d / "learn.yaml", cfg);
  const std::string in_d = "cd " + quote(d.path.string()) + " && ";
  const std::string bin = quote(std::string(std::getenv("HR_BUILD_ROOT")) + "/headroom");
  Result r = shell(in_d + bin + " train --quiet learn.yaml --set train.max_steps=2 --out first");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  fs::copy_file(d / "first/vocab.txt", d / "words.txt");
  cfg.replace(cfg.find("  vocab_size: 60"), 16, "  vocab: words.txt");
  write_file(d / "tiny.yaml", cfg);
  r = shell(in_d + bin + " train --quiet tiny.yaml --set train.max_steps=5 --out run");
  REQUIRE_MESSAGE(r.code == 0, r.output);
  const std::string stored = read_file(d / "run/config.yaml");
  CHECK_MESSAGE(stored.find("vocab: " + (d / "words.txt")) != std::string::npos, stored);
  CHECK(stored.find("eval_path: " + (d / "eval.jsonl")) != std::string::npos);
  for (const std::string& args : {"eval --split eval --run " + quote(d / "run"),
                                  "eval --run " + quote(d / "run") + " --data " + quote(d / "one.jsonl"),
                                  "predict --run " + quote(d / "run") + " --text 'play some music'"}) {
    CAPTURE(args);
    r = shell("cd / && " + bin + " " + args);
    CHECK_MESSAGE(r.code == 0, r.output);
  }
  // the run's vocab.txt, not tokenizer.vocab, is its vocabulary: a changed words.txt changes nothing
  write_file(d / "words.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
  r = shell("cd / && " + bin + " eval --split eval --run " + quote(d / "run"));
  CHECK_MESSAGE(r.code == 0, r.output);
}

TEST_CASE("resume_without_vocab_txt_is_an_error_naming_the_file_and_relearns_nothing") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string config = read_file(run + "/config.yaml");
  fs::remove(run + "/vocab.txt");
  const Result r = headroom("train --quiet --resume " + quote(run) + " --set train.max_steps=35");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find(run + "/vocab.txt is missing") != std::string::npos, r.output);
  CHECK(r.output.find("learning a WordPiece vocabulary") == std::string::npos);
  CHECK_FALSE(fs::exists(run + "/vocab.txt"));
  CHECK(read_file(run + "/config.yaml") == config);
}

TEST_CASE("a_run_without_checkpoint_best_serves_predict_and_eval_from_checkpoint_last") {
  TempDir d;
  const std::string cfg = setup(d);
  std::string text = read_file(cfg);
  text.erase(text.find("  eval_path:"), text.find('\n', text.find("  eval_path:")) - text.find("  eval_path:") + 1);
  write_file(cfg, text);  // no eval split: no evaluation, so no checkpoint-best
  const Result t = headroom("train --quiet " + quote(cfg) + " --set train.max_steps=3 --out " + quote(d / "run"));
  REQUIRE_MESSAGE(t.code == 0, t.output);
  REQUIRE_FALSE(fs::exists(d / "run/checkpoint-best.safetensors"));
  const Result p = headroom("predict --run " + quote(d / "run") + " --text 'play some music'");
  CHECK_MESSAGE(p.code == 0, p.output);
  CHECK(p.output.find("using checkpoint-last") != std::string::npos);
  write_jsonl(d / "one.jsonl", tiny_rows(3, 7));
  const Result e = headroom("eval --run " + quote(d / "run") + " --data " + quote(d / "one.jsonl"));
  CHECK_MESSAGE(e.code == 0, e.output);
}

TEST_CASE("checkpoint_metadata_out_of_range_is_refused_on_load") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string last = run + "/checkpoint-last.safetensors";
  const SafeTensorsFile good = read_safetensors(last);
  for (const auto& [key_, value_] : {std::pair{"step", "-5"}, {"epoch", "999"}, {"best_step", "31"}}) {
    const auto& key = key_;
    const auto& value = value_;  // CAPTURE's lambda cannot capture a binding (clang 14)
    CAPTURE(key);
    SafeTensorsFile f = good;
    f.metadata[key] = value;
    write_safetensors(last, f);
    const Result r = headroom("train --quiet --resume " + quote(run) + " --set train.max_steps=35");
    CHECK(r.code == 1);
    CHECK_MESSAGE(r.output.find("out of range") != std::string::npos, r.output);
    CHECK(r.output.find(std::string(key) + " " + value) != std::string::npos);
    CHECK(headroom("predict --run " + quote(run) + " --checkpoint last --text 'play'").code == 1);
  }
}

TEST_CASE("a_checkpoint_records_its_model_and_labels_and_a_load_names_what_differs") {
  TempDir d;
  const std::string run = trained_run(d);
  const std::string config = read_file(run + "/config.yaml"), labels = read_file(run + "/labels.txt");
  const std::string predict = "predict --run " + quote(run) + " --text 'play some music'";
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string c = config;
    REQUIRE(c.find(from) != std::string::npos);
    write_file(run + "/config.yaml", c.replace(c.find(from), from.size(), to));
  };
  // the same tensor shapes, another model: each refused, naming the key and both values
  const std::pair<std::pair<std::string, std::string>, std::string> changes[] = {
      {{"{heads: 2, head_dim: 8}", "{heads: 4, head_dim: 4}"},
       "model.layers[0].attention.heads: 2 in the checkpoint, 4 now"},
      {{"  pooling: mean\n", "  pooling: mean\n  norm: post\n"}, "model.norm: absent in the checkpoint, post now"},
  };
  for (const auto& [edit_, named_] : changes) {
    const auto& edit = edit_;
    const auto& named = named_;  // CAPTURE's lambda cannot capture a binding (clang 14)
    CAPTURE(named);
    edited(edit.first, edit.second);
    const Result r = headroom(predict);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.output.find(named) != std::string::npos, r.output);
  }
  write_file(run + "/config.yaml", config);
  write_file(run + "/labels.txt", "music\nalarm\nweather\n");  // the classifier's rows in another order
  Result r = headroom(predict);
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("labels.txt: other labels or another order") != std::string::npos, r.output);
  write_file(run + "/labels.txt", labels);
  // dropout does not change what the weights compute: it loads, and a resume may change it
  edited("  dropout: 0.2", "  dropout: 0.3");
  CHECK(headroom(predict).code == 0);
  write_file(run + "/config.yaml", config);
  r = headroom("train --quiet --resume " + quote(run) + " --set model.layers.0.attention.heads=4 --set "
               "model.layers.0.attention.head_dim=4");
  CHECK(r.code == 2);
  CHECK(read_file(run + "/config.yaml") == config);
  r = headroom("train --quiet --resume " + quote(run) + " --set model.dropout=0.1 --set train.max_steps=32");
  CHECK_MESSAGE(r.code == 0, r.output);
}

}  // TEST_SUITE

// #38 class 5: every message names the file, line or key, and says what to do.
TEST_SUITE("every_message_names_the_file_line_or_key") {

TEST_CASE("messages_name_the_command_file_range_or_labels_txt") {
  TempDir d;
  const std::string run = trained_run(d);
  Result r = headroom("trian " + quote(d / "tiny.yaml"));
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("unknown command 'trian' (did you mean 'train'?)") != std::string::npos, r.output);
  // a vocabulary saved with a byte order mark
  write_file(d / "bom.txt", "\xEF\xBB\xBF" + read_file(run + "/vocab.txt"));
  r = headroom("train --quiet " + quote(d / "tiny.yaml") + " --set tokenizer.vocab=" + quote(d / "bom.txt") +
               " --out " + quote(d / "bom"));
  CHECK(r.code != 0);
  CHECK_MESSAGE(r.output.find("bom.txt: starts with a UTF-8 byte order mark (BOM)") != std::string::npos, r.output);
  // a training file whose rows are all unusable
  write_file(d / "bad.jsonl", "{\"text\": 1}\n{\"label\": \"x\"}\n");
  r = headroom("train --quiet " + quote(d / "tiny.yaml") + " --set data.train_path=" + quote(d / "bad.jsonl") +
               " --out " + quote(d / "bad"));
  CHECK(r.code != 0);
  CHECK_MESSAGE(r.output.find("no training examples were loaded from " + (d / "bad.jsonl")) != std::string::npos,
                r.output);
  r = headroom("attention --run " + quote(run) + " --text 'play music' --layer 5 --head 0 --out " + quote(d / "a.png"));
  CHECK(r.code != 0);
  CHECK_MESSAGE(r.output.find("layers are numbered 0 to 1") != std::string::npos, r.output);
  r = headroom("attention --run " + quote(run) + " --text 'play music' --layer 1 --head 7 --out " + quote(d / "a.png"));
  CHECK(r.code != 0);
  CHECK_MESSAGE(r.output.find("layer 1 has 2 heads, numbered 0 to 1") != std::string::npos, r.output);
  // labels.txt with a label more than the classifier has rows
  write_file(run + "/labels.txt", read_file(run + "/labels.txt") + "timer\n");
  r = headroom("predict --run " + quote(run) + " --text 'play music'");
  CHECK(r.code == 2);
  CHECK_MESSAGE(r.output.find("labels.txt") != std::string::npos, r.output);
}

}  // TEST_SUITE
