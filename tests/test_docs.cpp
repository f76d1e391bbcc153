// Docs that stay true: every repository path named in README.md, CONTRIBUTING.md, docs/*.md and code comments exists,
// every relative Markdown link resolves, and every `headroom SUBCOMMAND --flag` shown in the docs and scripts is a
// flag that subcommand's --help lists.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/repo_files.h"

namespace fs = std::filesystem;

namespace {

// Files the docs tell a user to put in place; the repository does not ship them.
const std::set<std::string> kUserSupplied = {"data/squad_v1.1/train-v1.1.json", "data/mnli/"};

// The top-level folders whose paths the docs name.
const std::regex kRepoPath(
    R"((?:framework|models|kernels|train|tests|configs|scripts|docs|data|\.ci)/)"
    R"((?:[A-Za-z0-9_./+-]|\{[A-Za-z0-9_.+-]+(?:,[A-Za-z0-9_.+-]+)+\})*)");

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// "a/b.{h,cpp}" -> a/b.h, a/b.cpp
std::vector<std::string> expand_braces(const std::string& p) {
  const size_t open = p.find('{'), close = p.find('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {p};
  std::vector<std::string> out;
  std::stringstream alternatives(p.substr(open + 1, close - open - 1));
  for (std::string alt; std::getline(alternatives, alt, ',');)
    for (const std::string& rest : expand_braces(p.substr(close + 1))) out.push_back(p.substr(0, open) + alt + rest);
  return out;
}

// An all-capital segment (RUN, TARGET, NAME) stands for something the reader fills in.
bool has_placeholder(const std::string& p) {
  std::stringstream segments(p);
  for (std::string s; std::getline(segments, s, '/');) {
    int upper = 0, lower = 0;
    for (char c : s) upper += std::isupper(static_cast<unsigned char>(c)) != 0, lower += std::islower(c) != 0;
    if (upper >= 3 && lower == 0) return true;
  }
  return false;
}

// The repository paths a text names (a path preceded by a word character, '.', '/', '~' or '-' is part of another
// path, e.g. ../shared/data/ or build/tests/).
std::vector<std::string> repo_paths_in(const std::string& text) {
  std::vector<std::string> paths;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kRepoPath); it != std::sregex_iterator(); ++it) {
    const size_t at = static_cast<size_t>(it->position());
    if (at > 0 && (word_char(text[at - 1]) || std::string("./~-").find(text[at - 1]) != std::string::npos)) continue;
    std::string p = it->str();
    while (!p.empty() && (p.back() == '.' || p.back() == '-')) p.pop_back();
    if (at + it->length() < text.size() && text[at + it->length()] == '*') continue;  // a glob
    if (has_placeholder(p)) continue;
    for (const std::string& e : expand_braces(p)) paths.push_back(e);
  }
  return paths;
}

// Relative Markdown link targets: [text](target)
std::vector<std::string> links_in(const std::string& text) {
  static const std::regex link(R"(\[[^\]\[]+\]\(([^()\s#]+)(#[^()\s]*)?\))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
    const std::string t = (*it)[1];
    if (t.find("://") == std::string::npos && t.rfind("mailto:", 0) != 0) out.push_back(t);
  }
  return out;
}

// (subcommand, flag) pairs of every `headroom SUB ... --flag` in a text; a command ends at a backtick, '#', '|', ';',
// '&&' or ')'; lines continued with a backslash are joined first.
std::vector<std::pair<std::string, std::string>> commands_in(std::string text, const std::set<std::string>& subs) {
  for (size_t at; (at = text.find("\\\n")) != std::string::npos;) text.replace(at, 2, " ");
  static const std::regex command(R"(headroom ([a-z][a-z0-9-]*))"), flag(R"(--[a-z][a-z0-9-]*)"),
      end(R"([`#|;)]|&&)");
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), command); it != std::sregex_iterator(); ++it) {
      const size_t at = static_cast<size_t>(it->position());
      if (at > 0 && (word_char(line[at - 1]) || line[at - 1] == '-')) continue;
      const std::string sub = (*it)[1];
      if (!subs.count(sub)) continue;
      std::string rest = line.substr(at + it->length());
      std::smatch stop;
      if (std::regex_search(rest, stop, end)) rest = rest.substr(0, static_cast<size_t>(stop.position()));
      for (auto f = std::sregex_iterator(rest.begin(), rest.end(), flag); f != std::sregex_iterator(); ++f) {
        const size_t fa = static_cast<size_t>(f->position());
        if (fa > 0 && (word_char(rest[fa - 1]) || rest[fa - 1] == '-')) continue;
        out.emplace_back(sub, f->str());
      }
    }
  }
  return out;
}

bool lists_flag(const std::string& help, const std::string& flag) {
  return std::regex_search(help, std::regex(flag + "(?![a-z0-9-])"));
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0;) out.append(buf.data(), n);
  return out;
}

// The comment parts of a source or script file: after // in C++ and CUDA, after # elsewhere.
std::string comments_of(const fs::path& p) {
  const std::string ext = p.extension().string();
  const bool cpp = ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh";
  std::stringstream in(read_file(p));
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(cpp ? "//" : "#");
    if (at != std::string::npos) out += line.substr(at) + "\n";
  }
  return out;
}

struct Docs {
  fs::path root = hr::testing::repo_path("");
  std::vector<fs::path> markdown, code, scripts;
  Docs() {
    markdown = {root / "README.md", root / "CONTRIBUTING.md"};
    for (const auto& e : fs::directory_iterator(root / "docs"))
      if (e.path().extension() == ".md") markdown.push_back(e.path());
    for (const char* dir : {"framework", "models", "kernels", "train", "tests", "scripts", "configs", ".ci"}) {
      for (auto it = fs::recursive_directory_iterator(root / dir); it != fs::recursive_directory_iterator(); ++it) {
        const fs::path rel = fs::relative(it->path(), root);
        if (it->is_directory() && (rel == "tests/fixtures" || rel == "tests/fuzz/corpus" ||
                                   rel == "tests/fuzz/regressions" || it->path().filename() == "__pycache__")) {
          it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file()) continue;
        const std::string ext = it->path().extension().string(), name = it->path().filename().string();
        if (ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh" || ext == ".sh" || ext == ".py" ||
            ext == ".yaml" || name == "meson.build" || name == "run")
          code.push_back(it->path());
        if (ext == ".sh") scripts.push_back(it->path());
      }
    }
  }
  bool exists(const std::string& rel) const {
    const char* build = std::getenv("HR_BUILD_ROOT");
    return fs::exists(root / rel) || (build && fs::exists(fs::path(build) / rel)) || kUserSupplied.count(rel);
  }
};

}  // namespace

TEST_CASE("the docs checker finds paths, links and flags, and reports what is wrong") {
  const std::string text =
      "See framework/tensor.h, train/run/run_config.{h,cpp} and tests/fuzz/regressions/TARGET/ (a placeholder),\n"
      "not ../shared/data/wiki_en/ nor build/tests/test_ops; configs/*.yaml is a glob; docs/nope.md is missing.\n"
      "[the design](DESIGN.md), [a site](https://example.org), `build/headroom eval --run R --json` and\n"
      "`headroom train configs/clinc150.yaml \\\n  --resume R` | `headroom predict --text t` # --not-this\n";
  const std::vector<std::string> want = {"framework/tensor.h", "train/run/run_config.h", "train/run/run_config.cpp",
                                         "docs/nope.md", "configs/clinc150.yaml"};
  CHECK(repo_paths_in(text) == want);
  CHECK(links_in(text) == std::vector<std::string>{"DESIGN.md"});
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"eval", "--run"}, {"eval", "--json"}, {"train", "--resume"}, {"predict", "--text"}};
  CHECK(commands_in(text, {"eval", "train", "predict"}) == flags);
  CHECK(lists_flag("  --run TEXT  the run\n  --json", "--json"));
  CHECK_FALSE(lists_flag("  --json-lines  ...", "--json"));
  const Docs docs;
  CHECK(docs.exists("framework/tensor.h"));
  CHECK_FALSE(docs.exists("docs/nope.md"));
}

TEST_CASE("every repository path named in the docs and in code comments exists") {
  const Docs docs;
  int checked = 0;
  auto check = [&](const fs::path& file, const std::string& text) {
    for (const std::string& p : repo_paths_in(text)) {
      ++checked;
      CHECK_MESSAGE(docs.exists(p),
                    fs::relative(file, docs.root).string() << " names " << p << ", which does not exist");
    }
  };
  for (const fs::path& f : docs.markdown) {
    const std::string text = read_file(f);
    check(f, text);
    for (const std::string& link : links_in(text)) {
      ++checked;
      CHECK_MESSAGE(fs::exists(f.parent_path() / link),
                    fs::relative(f, docs.root).string() << " links " << link << ", which does not exist");
    }
  }
  for (const fs::path& f : docs.code) check(f, comments_of(f));
  MESSAGE(checked << " paths and links checked in " << docs.markdown.size() << " docs and " << docs.code.size()
                  << " source files");
  CHECK(checked > 300);
}

TEST_CASE("every `headroom SUBCOMMAND --flag` in the docs and scripts is a flag of that subcommand") {
  const char* build = std::getenv("HR_BUILD_ROOT");
  REQUIRE_MESSAGE(build != nullptr, "HR_BUILD_ROOT is not set (run the tests through meson test)");
  const std::string bin = std::string(build) + "/headroom";
  std::set<std::string> subs;
  static const std::regex listed(R"(\n  ([a-z][a-z0-9-]*)\s)");
  const std::string top = run("'" + bin + "' --help 2>&1");
  for (auto it = std::sregex_iterator(top.begin(), top.end(), listed); it != std::sregex_iterator(); ++it)
    subs.insert((*it)[1]);
  REQUIRE(subs.count("train"));
  REQUIRE(subs.count("predict"));
  const Docs docs;
  std::vector<fs::path> files = docs.markdown;
  files.insert(files.end(), docs.scripts.begin(), docs.scripts.end());
  std::map<std::string, std::string> help;
  int checked = 0;
  for (const fs::path& f : files) {
    for (const auto& [sub, flag] : commands_in(read_file(f), subs)) {
      if (!help.count(sub)) help[sub] = run("'" + bin + "' " + sub + " --help 2>&1");
      ++checked;
      CHECK_MESSAGE(lists_flag(help[sub], flag), fs::relative(f, docs.root).string()
                                                     << " shows `headroom " << sub << " " << flag
                                                     << "`, which `headroom " << sub << " --help` does not list");
    }
  }
  MESSAGE(checked << " flags checked");
  CHECK(checked > 100);
}

TEST_CASE("docs/README.md indexes every doc") {
  const Docs docs;
  const std::vector<std::string> listed = links_in(read_file(docs.root / "docs/README.md"));
  for (const fs::path& f : docs.markdown) {
    if (f.parent_path().filename() != "docs" || f.filename() == "README.md") continue;
    CHECK_MESSAGE(std::find(listed.begin(), listed.end(), f.filename().string()) != listed.end(),
                  "docs/README.md does not link " << f.filename().string());
  }
}
