// Tiny end-to-end runs for tests: a temp dir, three-intent JSONL data, a 2-layer d_model 16 config, and a runner for
// the headroom binary (popen; HR_BUILD_ROOT is set by meson).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"

namespace hr::testing {

namespace fs = std::filesystem;

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A SQuAD v1.1 file: one paragraph per (question, context, answer), the answer found in the context.
inline void write_squad(const std::string& path, const std::vector<std::array<std::string, 3>>& qa) {
  nlohmann::json paragraphs = nlohmann::json::array();
  for (size_t i = 0; i < qa.size(); ++i) {
    const auto& [q, c, a] = qa[i];
    paragraphs.push_back({{"context", c},
                          {"qas", {{{"id", std::to_string(i)}, {"question", q},
                                    {"answers", {{{"text", a}, {"answer_start", c.find(a)}}}}}}}});
  }
  write_file(path, nlohmann::json{{"version", "1.1"}, {"data", {{{"title", "t"}, {"paragraphs", paragraphs}}}}}.dump());
}

// Three intents, each with its own words plus shared filler, so a tiny model can learn them in a few steps.
inline std::vector<std::pair<std::string, std::string>> tiny_rows(int n, int salt) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> intents = {
      {"weather", {"weather", "rain", "sunny", "forecast", "cold"}},
      {"music", {"play", "song", "music", "album", "volume"}},
      {"alarm", {"alarm", "wake", "morning", "set", "clock"}}};
  const std::vector<std::string> filler = {"please", "the", "me", "now", "today", "can", "you"};
  std::vector<std::pair<std::string, std::string>> rows;
  for (int i = 0; i < n; ++i) {
    const auto& [label, words] = intents[static_cast<size_t>(i % 3)];
    const int k = i * 7 + salt;
    std::string text = filler[static_cast<size_t>(k % 7)] + " " + words[static_cast<size_t>(k % 5)] + " " +
                       filler[static_cast<size_t>((k / 7) % 7)] + " " + words[static_cast<size_t>((k / 5 + 1) % 5)];
    rows.emplace_back(text, label);
  }
  return rows;
}

inline void write_jsonl(const std::string& path, const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string s;
  for (const auto& [text, label] : rows) s += nlohmann::json{{"text", text}, {"label", label}}.dump() + "\n";
  write_file(path, s);
}

// A 2-layer d_model 16 classifier with dropout, a learned 60-token vocabulary, 20 steps of 8 rows (60 rows: 8 batches
// an epoch, so 20 steps cross two epoch boundaries). The schedule is constant after a 3-step warm-up so that a run cut
// short by max_steps follows the same learning rates as the full one (linear decay depends on the total).
inline std::string tiny_config(const TempDir& d, const std::string& train_extra = "") {
  return "model:\n"
         "  type: encoder_classifier\n"
         "  d_model: 16\n"
         "  ffn_dim: 32\n"
         "  max_len: 16\n"
         "  dropout: 0.2\n"
         "  pooling: mean\n"
         "  layers:\n"
         "    - repeat: 2\n"
         "      attention: {heads: 2, head_dim: 8}\n"
         "tokenizer:\n"
         "  vocab_size: 60\n"
         "data:\n"
         "  task: classification\n"
         "  format: jsonl\n"
         "  train_path: " + (d / "train.jsonl") + "\n"
         "  eval_path: " + (d / "eval.jsonl") + "\n"
         "train:\n"
         "  max_steps: 20\n"
         "  batch_size: 8\n"
         "  lr: 3e-3\n"
         "  warmup: 3\n"
         "  schedule: constant\n"
         "  seed: 1\n"
         "  log_every: 1\n"
         "  eval_every: 5\n" + train_extra;
}

// Writes the data and the config into a fresh temp dir; returns the config path.
inline std::string setup(const TempDir& d, const std::string& train_extra = "") {
  write_jsonl(d / "train.jsonl", tiny_rows(60, 0));
  write_jsonl(d / "eval.jsonl", tiny_rows(15, 3));
  write_file(d / "tiny.yaml", tiny_config(d, train_extra));
  return d / "tiny.yaml";
}

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

inline std::string quote(const std::string& s) { return "'" + s + "'"; }

// Runs a shell command line, stdout and stderr together.
inline Result shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  Result r{0, ""};
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs the headroom binary with `args` (already quoted where needed).
inline Result headroom(const std::string& args) {
  const char* build = std::getenv("HR_BUILD_ROOT");
  REQUIRE(build != nullptr);
  return shell(quote(std::string(build) + "/headroom") + " " + args);
}

// The rows of a run's metrics.jsonl, and its logged training losses by step.
inline std::vector<nlohmann::json> metrics_rows(const std::string& run) {
  std::vector<nlohmann::json> rows;
  std::ifstream f(run + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline std::map<int64_t, double> losses(const std::string& run) {
  std::map<int64_t, double> m;
  for (const auto& r : metrics_rows(run))
    if (r.contains("loss")) m[r["step"].get<int64_t>()] = r["loss"].get<double>();
  return m;
}

}  // namespace hr::testing
