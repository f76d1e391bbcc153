// The data layer of masked-language-model pretraining: corpus files into documents. Real input: Wikipedia text
// (tests/fixtures/wiki_en_tiny).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/base/error.h"
#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "train/data/text_corpus.h"

using namespace hr;
using hr::testing::repo_path;
using hr::testing::TempDir;
namespace fs = std::filesystem;

namespace {

std::string write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
  return path;
}

std::string corpus(const std::string& name) { return repo_path("tests/fixtures/wiki_en_tiny/" + name); }

struct Read {
  std::vector<std::string> docs;
  CorpusStats stats;
  std::string log;
};

Read read_all(const std::string& path) {
  Read r;
  std::ostringstream log;
  r.stats = read_documents(path, log, [&](std::string_view d) { r.docs.emplace_back(d); });
  r.log = log.str();
  return r;
}

// doctest's Contains takes its own string type
doctest::Contains has(const std::string& part) { return doctest::Contains(part.c_str()); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ---- text_corpus

TEST_CASE("expand_corpus_paths: files as given, globs sorted, errors name the key and the pattern") {
  TempDir dir;
  write_file(dir / "train-10.txt", "b\n");
  write_file(dir / "train-02.txt", "a\n");
  write_file(dir / "valid.txt", "c\n");
  const auto files = expand_corpus_paths({dir / "valid.txt", dir / "train-*.txt"}, "data.train");
  REQUIRE(files.size() == 3);
  CHECK(files[0] == dir / "valid.txt");
  CHECK(files[1] == dir / "train-02.txt");
  CHECK(files[2] == dir / "train-10.txt");

  CHECK_THROWS_WITH_AS(expand_corpus_paths({dir / "test-*.txt"}, "data.train"),
                       has("data.train: no file matches '" + dir / "test-*.txt" + "'"), ConfigError);
  CHECK_THROWS_WITH_AS(expand_corpus_paths({dir / "missing.txt"}, "data.eval"),
                       has("data.eval: no such file '" + dir / "missing.txt" + "'"), ConfigError);
  fs::create_directory(dir / "shard-dir.txt");
  CHECK_THROWS_WITH_AS(expand_corpus_paths({dir / "shard-*.txt"}, "data.train"),
                       has("is not a regular file (matched by '" + dir / "shard-*.txt" + "')"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(expand_corpus_paths({dir.path.string()}, "data.train"),
                       has("data.train: '" + dir.path.string() + "' is not a regular file"),
                       ConfigError);
}

TEST_CASE("read_documents: empty lines separate documents, else each line is one") {
  TempDir dir;
  SUBCASE("blank-line") {
    // a run of empty (or whitespace-only) lines separates once; '\r\n' and a byte order mark are dropped
    const Read r = read_all(write_file(dir / "a.txt", "\xEF\xBB\xBFTitle one\r\nfirst para\r\nsecond para\r\n\r\n"
                                                      "Title two\nonly para\n \n\t\n\nTitle three\n\n"));
    CHECK(r.stats.rule == "blank-line");
    REQUIRE(r.docs.size() == 3);
    CHECK(r.docs[0] == "Title one\nfirst para\nsecond para");
    CHECK(r.docs[1] == "Title two\nonly para");
    CHECK(r.docs[2] == "Title three");
    CHECK(r.stats.documents == 3);
    CHECK(r.stats.lines == 6);
    CHECK(r.stats.skipped_lines == 0);
  }
  SUBCASE("line: a file with no empty line") {
    const Read r = read_all(write_file(dir / "b.txt", "one document\nanother one\r\nthe last, with no newline"));
    CHECK(r.stats.rule == "line");
    REQUIRE(r.docs.size() == 3);
    CHECK(r.docs[0] == "one document");
    CHECK(r.docs[1] == "another one");
    CHECK(r.docs[2] == "the last, with no newline");
  }
  SUBCASE("an empty line only at the very end makes the file one document") {
    const Read r = read_all(write_file(dir / "c.txt", "a\nb\n\n"));
    CHECK(r.stats.rule == "blank-line");
    REQUIRE(r.docs.size() == 1);
    CHECK(r.docs[0] == "a\nb");
  }
  SUBCASE("lines longer than the read chunk") {
    const std::string long_line(2500000, 'x');
    const Read r = read_all(write_file(dir / "d.txt", "short\n" + long_line + "\n" + long_line + "y"));
    CHECK(r.stats.rule == "line");
    REQUIRE(r.docs.size() == 3);
    CHECK(r.docs[0] == "short");
    CHECK(r.docs[1] == long_line);
    CHECK(r.docs[2] == long_line + "y");
  }
  SUBCASE("the Wikipedia fixture: one article per block") {
    const Read r = read_all(corpus("head.txt"));
    CHECK(r.stats.rule == "blank-line");
    REQUIRE(r.docs.size() == 6);
    CHECK(r.docs[0].rfind("Mouthwash\nMouthwash, mouth rinse", 0) == 0);
    CHECK(r.docs[5].rfind("Amalric of Jerusalem\n", 0) == 0);
    CHECK(r.log.empty());
  }
}

TEST_CASE("read_documents: an invalid UTF-8 line is reported with file:line and skipped") {
  TempDir dir;
  const std::string path = write_file(dir / "bad.txt", "Title\ngood line\nbad \xC3\x28 line\nlast line\n\nNext\n");
  const Read r = read_all(path);
  CHECK(r.stats.skipped_lines == 1);
  CHECK(r.stats.lines == 5);
  CHECK(contains(r.log, path + ":3: invalid UTF-8, line skipped"));
  REQUIRE(r.docs.size() == 2);
  CHECK(r.docs[0] == "Title\ngood line\nlast line");
  CHECK(r.docs[1] == "Next");

  // many: the first 20 reported, then a count
  std::string many;
  for (int i = 0; i < 30; ++i) many += "\xFF\n";
  const Read m = read_all(write_file(dir / "many.txt", many + "fine\n"));
  CHECK(m.stats.skipped_lines == 30);
  CHECK(contains(m.log, ":20: invalid UTF-8"));
  CHECK_FALSE(contains(m.log, ":21: invalid UTF-8"));
  CHECK(contains(m.log, "30 lines of invalid UTF-8 skipped in all"));
  REQUIRE(m.docs.size() == 1);
}
