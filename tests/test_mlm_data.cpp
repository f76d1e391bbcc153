// The data layer of masked-language-model pretraining: corpus files into documents, the token cache (built once,
// reused, rebuilt when stale or corrupt), packing into [CLS] ... [SEP] rows, and BERT's masking, checked against its
// probabilities over many draws. Real inputs: the BERT uncased vocabulary and Wikipedia text
// (tests/fixtures/wiki_en_tiny).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "tests/fuzz/token_cache_checksums.h"
#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "train/data/mlm_masking.h"
#include "train/data/text_corpus.h"
#include "train/data/token_cache.h"
#include "train/tokenizer/tokenizer.h"

using namespace hr;
using hr::testing::data_file;
using hr::testing::repo_path;
using hr::testing::TempDir;
using hr::testing::write_file;
namespace fs = std::filesystem;

namespace {

std::string corpus(const std::string& name) { return repo_path("tests/fixtures/wiki_en_tiny/" + name); }

const Vocab& bert_vocab() {
  static const Vocab v = Vocab::load(data_file("bert_vocab/bert-base-uncased-vocab.txt"));
  return v;
}

const Tokenizer& bert() {
  static const Tokenizer t(bert_vocab());
  return t;
}

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

// The stream a token cache of these documents must hold: their ids with one [SEP] between documents.
std::vector<int32_t> expected_stream(const std::vector<std::string>& docs, const Tokenizer& tok) {
  std::vector<int32_t> s;
  for (size_t d = 0; d < docs.size(); ++d) {
    if (d > 0) s.push_back(tok.vocab().sep_id());
    for (int32_t id : tok.encode(docs[d]).ids) s.push_back(id);
  }
  return s;
}

std::vector<int32_t> stream_of(const TokenCache& c) {
  std::vector<int32_t> s(static_cast<size_t>(c.size()));
  c.copy(0, c.size(), s.data());
  return s;
}

struct Opened {
  TokenCache cache;
  std::string log;
};

Opened open_cache(const std::vector<std::string>& files, const Tokenizer& tok, const std::string& dir) {
  std::ostringstream log;
  TokenCache c = TokenCache::open(files, tok, dir, log);
  return {std::move(c), log.str()};
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

// ---- token cache and packing

TEST_CASE("token cache: the documents' ids with one [SEP] between documents; packed rows [CLS] ... [SEP]") {
  TempDir dir;
  const std::vector<std::string> docs_a = {"The quick brown fox.\nIt jumps.", "Over the lazy dog"};
  const std::vector<std::string> docs_b = {"Hello world", "Good morning", "unbelievably tokenised"};
  const std::string a = write_file(dir / "a.txt", docs_a[0] + "\n\n" + docs_a[1] + "\n");
  const std::string b = write_file(dir / "b.txt", docs_b[0] + "\n" + docs_b[1] + "\n" + docs_b[2] + "\n");
  const Opened o = open_cache({a, b}, bert(), dir / "cache");
  std::vector<std::string> docs = docs_a;
  docs.insert(docs.end(), docs_b.begin(), docs_b.end());
  const std::vector<int32_t> expected = expected_stream(docs, bert());
  CHECK(stream_of(o.cache) == expected);
  CHECK(o.cache.documents() == 5);
  CHECK(o.cache.rules() == "mixed");
  CHECK(o.cache.bytes_per_token() == 2);
  CHECK(o.cache.at(o.cache.size() - 1) != bert_vocab().sep_id());  // no [SEP] after the last document
  CHECK(o.cache.at(0) == expected[0]);
  CHECK_THROWS_AS(o.cache.at(o.cache.size()), Error);
  CHECK(fs::path(o.cache.path()).parent_path() == fs::path(dir / "cache"));

  const int64_t n = o.cache.size();
  REQUIRE(n >= 20);
  const int64_t T = 8;  // 6 stream tokens a row
  CHECK(packed_rows(n, T) == n / 6);
  const int32_t cls = bert_vocab().cls_id(), sep = bert_vocab().sep_id();
  for (int64_t row = 0; row < packed_rows(n, T); ++row) {
    std::vector<int32_t> out(T + 1, -7);  // one past the row: must stay untouched
    packed_row(o.cache, row, T, cls, sep, out.data());
    CHECK(out[0] == cls);
    CHECK(out[T - 1] == sep);
    CHECK(out[T] == -7);
    for (int64_t t = 0; t < T - 2; ++t) CHECK(out[1 + t] == expected[row * 6 + t]);
  }
  std::vector<int32_t> out(T);
  CHECK_THROWS_AS(packed_row(o.cache, packed_rows(n, T), T, cls, sep, out.data()), Error);  // the remainder is dropped
  CHECK(packed_rows(n, n + 2) == 1);      // exactly one full row
  CHECK(packed_rows(n, n + 3) == 0);      // the stream fills no row
  CHECK(packed_rows(0, 128) == 0);
  CHECK(packed_rows(1000, 2) == 0);       // no room for a token
}

TEST_CASE("token cache: reused when fresh, rebuilt with a note when stale or corrupt") {
  TempDir dir;
  const std::string text = "First article\nsome text here.\n\nSecond article\nmore words, and more.\n";
  const std::string file = write_file(dir / "corpus.txt", text);
  const std::string cache_dir = dir / "cache";
  const std::vector<int32_t> expected = expected_stream(read_all(file).docs, bert());

  const Opened first = open_cache({file}, bert(), cache_dir);
  CHECK(first.cache.built());
  CHECK(contains(first.log, "tokenising 1 file"));
  const std::string path = first.cache.path();
  CHECK(stream_of(first.cache) == expected);

  SUBCASE("a second open maps it without tokenising") {
    const Opened second = open_cache({file}, bert(), cache_dir);
    CHECK_FALSE(second.cache.built());
    CHECK(second.log.empty());
    CHECK(second.cache.path() == path);
    CHECK(stream_of(second.cache) == expected);
    CHECK(second.cache.rules() == "blank-line");
  }
  SUBCASE("another vocabulary gets its own cache") {
    std::vector<std::string> tokens = bert_vocab().tokens();
    tokens.push_back("headroomtoken");
    const Tokenizer other{Vocab(tokens)};
    const Opened o = open_cache({file}, other, cache_dir);
    CHECK(o.cache.built());
    CHECK(o.cache.path() != path);
    // a cache of the other vocabulary found under this name (a hash collision) is stale, not used
    fs::copy_file(path, o.cache.path(), fs::copy_options::overwrite_existing);
    const Opened again = open_cache({file}, other, cache_dir);
    CHECK(again.cache.built());
    CHECK(contains(again.log, "is stale (tokenised with another vocabulary), rebuilding"));
    // the tokenizer's lower-casing is part of the vocabulary's identity
    const Tokenizer cased{bert_vocab(), BasicTokenizer(false)};
    CHECK(open_cache({file}, cased, cache_dir).cache.path() != path);
  }
  SUBCASE("a touched corpus file") {
    fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(5));
    const Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(o.cache.built());
    CHECK(contains(o.log, "token cache " + path + " is stale (" + fs::absolute(file).string() +
                              " was modified (mtime changed)), rebuilding"));
    CHECK(stream_of(o.cache) == expected);
    CHECK_FALSE(open_cache({file}, bert(), cache_dir).cache.built());
  }
  SUBCASE("a rewritten corpus file") {
    write_file(file, text + "\nThird article\nnew.\n");
    const Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(o.cache.built());
    CHECK(contains(o.log, "is stale ("));
    CHECK(contains(o.log, "changed size"));
    CHECK(o.cache.documents() == 3);
    CHECK(stream_of(o.cache) == expected_stream(read_all(file).docs, bert()));
  }
  SUBCASE("a flipped byte in the token data fails the checksum") {
    std::string bytes = read_file_bytes(path);
    bytes[bytes.size() - 1] ^= 0x01;
    write_file(path, bytes);
    const Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(o.cache.built());
    CHECK(contains(o.log, "token cache " + path + " is corrupt (token data checksum mismatch), rebuilding"));
    CHECK(stream_of(o.cache) == expected);
  }
  SUBCASE("a flipped byte in the header") {
    std::string bytes = read_file_bytes(path);
    bytes[17] ^= 0x01;  // the token count
    write_file(path, bytes);
    const Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(contains(o.log, "is corrupt (header checksum mismatch), rebuilding"));
    CHECK(stream_of(o.cache) == expected);
  }
  SUBCASE("a forged token count whose byte size wraps around to the file's, checksums made to match") {
    std::string bytes = read_file_bytes(path);
    uint64_t tokens;
    std::memcpy(&tokens, bytes.data() + 16, 8);
    tokens += uint64_t{1} << 63;  // twice it is the true byte size modulo 2^64
    std::memcpy(bytes.data() + 16, &tokens, 8);
    hr::fuzz::forge_token_cache_checksums(bytes);
    write_file(path, bytes);
    const Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(o.cache.built());
    CHECK(contains(o.log, "is corrupt (a count of " + std::to_string(tokens) + " tokens, more than any file holds), "
                          "rebuilding"));
    CHECK(stream_of(o.cache) == expected);
  }
  SUBCASE("a truncated cache") {
    fs::resize_file(path, fs::file_size(path) - 1);
    Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(o.cache.built());
    CHECK(contains(o.log, "is corrupt ("));
    CHECK(contains(o.log, "(truncated)), rebuilding"));
    CHECK(stream_of(o.cache) == expected);
    fs::resize_file(path, 10);
    o = open_cache({file}, bert(), cache_dir);
    CHECK(contains(o.log, "is corrupt (truncated to 10 bytes), rebuilding"));
    CHECK(stream_of(o.cache) == expected);
  }
  SUBCASE("another file's bytes") {
    write_file(path, std::string(200, 'z'));
    const Opened o = open_cache({file}, bert(), cache_dir);
    CHECK(contains(o.log, "is corrupt (bad magic), rebuilding"));
    CHECK(stream_of(o.cache) == expected);
  }
  SUBCASE("a killed build's temp file is removed, a live one's is kept") {
    const std::string dead = path + ".tmp-999999999";  // above any pid_max
    const std::string live = path + ".tmp-" + std::to_string(::getppid());
    write_file(dead, "half");
    write_file(live, "half");
    fs::remove(path);
    CHECK(open_cache({file}, bert(), cache_dir).cache.built());
    CHECK_FALSE(fs::exists(dead));
    CHECK(fs::exists(live));
  }
}

TEST_CASE("token cache: beside the first file by default; distinct corpora never share a cache") {
  TempDir dir;
  const std::string a = write_file(dir / "a.txt", "alpha beta\n");
  const std::string b = write_file(dir / "b.txt", "gamma delta\n");
  const Opened ab = open_cache({a, b}, bert(), "");
  CHECK(fs::path(ab.cache.path()).parent_path() == dir.path);
  const Opened ba = open_cache({b, a}, bert(), "");
  const Opened only_a = open_cache({a}, bert(), "");
  CHECK(ab.cache.path() != ba.cache.path());
  CHECK(ab.cache.path() != only_a.cache.path());
  CHECK(stream_of(ba.cache) == expected_stream({"gamma delta", "alpha beta"}, bert()));
  CHECK(ab.cache.rules() == "line");
}

TEST_CASE("token cache: in $XDG_CACHE_HOME/headroom when the first file's directory is read-only") {
  if (::geteuid() == 0) {
    MESSAGE("skipped: root writes into read-only directories");
    return;
  }
  TempDir dir;
  fs::create_directory(dir / "ro");
  const std::string file = write_file(dir / "ro/corpus.txt", "some text\n");
  fs::permissions(dir / "ro", fs::perms::owner_write, fs::perm_options::remove);
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", (dir / "xdg").c_str(), 1);
  const Opened o = open_cache({file}, bert(), "");
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
  fs::permissions(dir / "ro", fs::perms::owner_write, fs::perm_options::add);
  CHECK(fs::path(o.cache.path()).parent_path() == fs::path(dir / "xdg/headroom"));
  CHECK(stream_of(o.cache) == expected_stream({"some text"}, bert()));
}

TEST_CASE("token cache: uint32 storage for a vocabulary of more than 65536 tokens") {
  TempDir dir;
  std::vector<std::string> tokens = bert_vocab().tokens();
  for (int i = 0; tokens.size() < 70000; ++i) tokens.push_back("xq" + std::to_string(i));
  const Tokenizer big{Vocab(tokens)};
  const std::string file = write_file(dir / "big.txt", "xq39000 hello xq39477\nxq12 world\n");
  const Opened o = open_cache({file}, big, dir / "cache");
  CHECK(o.cache.bytes_per_token() == 4);
  const std::vector<int32_t> expected = expected_stream({"xq39000 hello xq39477", "xq12 world"}, big);
  CHECK(std::count_if(expected.begin(), expected.end(), [](int32_t id) { return id > 65535; }) == 2);
  CHECK(stream_of(o.cache) == expected);
  const Opened again = open_cache({file}, big, dir / "cache");
  CHECK_FALSE(again.cache.built());
  CHECK(stream_of(again.cache) == expected);
}

TEST_CASE("token cache: the Wikipedia fixture, and the build rate of tiny.txt") {
  TempDir dir;
  const Opened head = open_cache({corpus("head.txt")}, bert(), dir.path.string());
  CHECK(head.cache.documents() == 6);
  CHECK(head.cache.rules() == "blank-line");
  CHECK(stream_of(head.cache) == expected_stream(read_all(corpus("head.txt")).docs, bert()));

  const auto start = std::chrono::steady_clock::now();
  const Opened tiny = open_cache({corpus("tiny.txt")}, bert(), dir.path.string());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(tiny.cache.documents() == 25);
  MESSAGE("token cache of tiny.txt (" << fs::file_size(corpus("tiny.txt")) << " bytes): " << tiny.cache.size()
                                      << " tokens in " << s << " s, " << static_cast<int64_t>(tiny.cache.size() / s)
                                      << " tokens/s");
}

// ---- masking

namespace {

MlmVocabInfo bert_info(bool whole_word = false) { return MlmVocabInfo::from(bert_vocab(), whole_word, "model.vocab"); }

// Rows of real text: the fixture's stream packed at T = 128.
std::vector<std::vector<int32_t>> fixture_rows(int64_t T) {
  static TempDir dir;
  std::ostringstream log;
  const TokenCache c = TokenCache::open({corpus("head.txt")}, bert(), dir.path.string(), log);
  std::vector<std::vector<int32_t>> rows;
  for (int64_t r = 0; r < packed_rows(c.size(), T); ++r) {
    rows.emplace_back(T);
    packed_row(c, r, T, bert_vocab().cls_id(), bert_vocab().sep_id(), rows.back().data());
  }
  return rows;
}

// |observed - expected| within 5 binomial standard deviations
void check_rate(int64_t hits, int64_t trials, double p, const char* what) {
  const double sd = std::sqrt(p * (1 - p) / static_cast<double>(trials));
  const double rate = static_cast<double>(hits) / static_cast<double>(trials);
  INFO(what << ": " << hits << " of " << trials << " = " << rate << ", expected " << p << " +- 5 x " << sd);
  CHECK(std::abs(rate - p) <= 5 * sd);
}

}  // namespace

TEST_CASE("mlm_mask_row: the chosen fraction and the 80/10/10 split over many draws") {
  const MlmVocabInfo info = bert_info();
  CHECK(info.mask_id == 103);
  CHECK(info.vocab_size == 30522);
  for (int32_t id : {0, 100, 101, 102, 103}) CHECK(info.special[id] == 1);
  CHECK(info.special[1996] == 0);  // "the"
  CHECK(info.continuation[bert_vocab().id("##s")] == 1);
  CHECK(info.continuation[bert_vocab().id("#")] == 0);

  const int64_t T = 128;
  const auto rows = fixture_rows(T);
  REQUIRE(rows.size() > 100);
  for (const MlmMaskOptions o : {MlmMaskOptions{}, MlmMaskOptions{0.3f, 0.5f, 0.3f, false}}) {
    int64_t candidates = 0, chosen = 0, masked = 0, randomised = 0, kept = 0, specials = 0;
    double random_id_sum = 0;
    uint64_t draw = 0;
    for (int pass = 0; pass < 8; ++pass) {
      for (const auto& row : rows) {
        std::vector<int32_t> ids = row, labels(T, 7);
        const int64_t n = mlm_mask_row(o, info, 1234, draw++, ids.data(), labels.data(), T);
        int64_t labelled = 0;
        for (int64_t t = 0; t < T; ++t) {
          if (info.special[row[t]]) {
            ++specials;
            CHECK(labels[t] == -100);  // never chosen
            CHECK(ids[t] == row[t]);
            continue;
          }
          ++candidates;
          if (labels[t] == -100) {
            CHECK(ids[t] == row[t]);  // not chosen: untouched
            continue;
          }
          ++labelled;
          CHECK(labels[t] == row[t]);
          if (ids[t] == info.mask_id) ++masked;
          else if (ids[t] == row[t]) ++kept;
          else ++randomised, random_id_sum += ids[t];
        }
        CHECK(n == labelled);
        chosen += labelled;
      }
    }
    CHECK(specials >= static_cast<int64_t>(2 * rows.size() * 8));
    check_rate(chosen, candidates, o.probability, "chosen");
    // a random draw lands on [MASK] or on the original id with probability 1/V each
    const double r = o.random, V = info.vocab_size;
    check_rate(masked, chosen, o.mask + r / V, "[MASK]");
    check_rate(randomised, chosen, r * (1 - 2 / V), "random");
    check_rate(kept, chosen, 1 - o.mask - r + r / V, "unchanged");
    const double mean = random_id_sum / static_cast<double>(randomised);
    const double sd = V / std::sqrt(12.0 * static_cast<double>(randomised));
    INFO("mean random id " << mean);
    CHECK(std::abs(mean - (V - 1) / 2) <= 5 * sd);  // uniform over [0, V)
  }
}

TEST_CASE("mlm_mask_row: a pure function of (seed, draw index, position)") {
  const MlmVocabInfo info = bert_info();
  const MlmMaskOptions o;
  const auto rows = fixture_rows(128);
  const auto masked = [&](uint64_t seed, uint64_t draw, int64_t T = 128) {
    std::vector<int32_t> ids(rows[3].begin(), rows[3].begin() + T), labels(T);
    mlm_mask_row(o, info, seed, draw, ids.data(), labels.data(), T);
    return std::make_pair(ids, labels);
  };
  CHECK(masked(7, 42) == masked(7, 42));
  CHECK(masked(7, 42).second != masked(7, 43).second);
  CHECK(masked(7, 42).second != masked(8, 42).second);
  // a position's draws do not depend on the row's length
  const auto whole = masked(7, 42), half = masked(7, 42, 64);
  CHECK(std::vector<int32_t>(whole.first.begin(), whole.first.begin() + 64) == half.first);
  CHECK(std::vector<int32_t>(whole.second.begin(), whole.second.begin() + 64) == half.second);
  // a known draw: pins the counter scheme, so a change to it (which would change resumed runs) is seen
  std::vector<int32_t> ids = {101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102};
  std::vector<int32_t> labels(ids.size());
  const int64_t n = mlm_mask_row(MlmMaskOptions{0.5f, 0.8f, 0.1f, false}, info, 1, 0, ids.data(), labels.data(),
                                 static_cast<int64_t>(ids.size()));
  CHECK(n == 4);
  CHECK(ids == std::vector<int32_t>{101, 1996, 4248, 103, 4419, 14523, 2058, 11977, 3277, 103, 1012, 102});
  CHECK(labels == std::vector<int32_t>{-100, -100, -100, 2829, -100, -100, -100, 1996, 13971, 3899, -100, -100});
}

TEST_CASE("mlm_mask_row: whole-word masking never splits a word") {
  const MlmVocabInfo info = bert_info(true);
  MlmMaskOptions o;
  o.whole_word = true;
  const int64_t T = 128;
  const auto rows = fixture_rows(T);
  int64_t words = 0, chosen_words = 0, multi_piece_chosen = 0, masked = 0, chosen_tokens = 0;
  uint64_t draw = 0;
  for (int pass = 0; pass < 4; ++pass) {
    for (const auto& row : rows) {
      std::vector<int32_t> ids = row, labels(T);
      const int64_t n = mlm_mask_row(o, info, 99, draw++, ids.data(), labels.data(), T);
      int64_t labelled = 0;
      for (int64_t t = 0; t < T;) {
        if (info.special[row[t]]) {
          CHECK(labels[t] == -100);
          ++t;
          continue;
        }
        int64_t end = t + 1;  // the word: this token and the "##" pieces after it
        while (end < T && !info.special[row[end]] && info.continuation[row[end]]) ++end;
        const bool chosen = labels[t] != -100;
        for (int64_t k = t; k < end; ++k) {
          CHECK((labels[k] != -100) == chosen);
          if (labels[k] != -100) {
            CHECK(labels[k] == row[k]);
            ++labelled;
            masked += ids[k] == info.mask_id;
          }
        }
        ++words;
        chosen_words += chosen;
        chosen_tokens += chosen ? end - t : 0;
        multi_piece_chosen += chosen && end - t > 1;
        t = end;
      }
      CHECK(n == labelled);
    }
  }
  check_rate(chosen_words, words, o.probability, "chosen words");
  CHECK(multi_piece_chosen > 50);
  check_rate(masked, chosen_tokens, o.mask + o.random / info.vocab_size, "[MASK] of chosen tokens");  // per token
}

TEST_CASE("MLM options and vocabulary: errors name their keys") {
  CHECK_NOTHROW(check_mlm_options(MlmMaskOptions{}));
  CHECK_NOTHROW(check_mlm_options(MlmMaskOptions{0.15f, 1.f, 0.f, false}));
  CHECK_NOTHROW(check_mlm_options(MlmMaskOptions{0.15f, 0.f, 1.f, false}));
  CHECK_THROWS_WITH_AS(check_mlm_options(MlmMaskOptions{0.f, 0.8f, 0.1f, false}),
                       "data.mlm.probability: must be in (0, 1), got 0", ConfigError);
  CHECK_THROWS_WITH_AS(check_mlm_options(MlmMaskOptions{1.f, 0.8f, 0.1f, false}),
                       "data.mlm.probability: must be in (0, 1), got 1", ConfigError);
  CHECK_THROWS_WITH_AS(check_mlm_options(MlmMaskOptions{NAN, 0.8f, 0.1f, false}),
                       has("data.mlm.probability: must be in (0, 1)"), ConfigError);
  CHECK_THROWS_WITH_AS(check_mlm_options(MlmMaskOptions{0.15f, -0.1f, 0.1f, false}),
                       "data.mlm.mask: must be in [0, 1], got -0.1", ConfigError);
  CHECK_THROWS_WITH_AS(check_mlm_options(MlmMaskOptions{0.15f, 0.8f, 1.5f, false}),
                       "data.mlm.random: must be in [0, 1], got 1.5", ConfigError);
  CHECK_THROWS_WITH_AS(check_mlm_options(MlmMaskOptions{0.15f, 0.8f, 0.3f, false}),
                       has("data.mlm.mask + data.mlm.random: must be at most 1"), ConfigError);

  const Vocab no_mask({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "##s"});
  CHECK_THROWS_WITH_AS(MlmVocabInfo::from(no_mask, false, "model.vocab"),
                       has("model.vocab: the vocabulary (6 tokens) has no [MASK] token"), ConfigError);
  const Vocab no_pieces({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##"});
  CHECK_NOTHROW(MlmVocabInfo::from(no_pieces, false, "model.vocab"));
  CHECK_THROWS_WITH_AS(MlmVocabInfo::from(no_pieces, true, "data.mlm.whole_word"),
                       has("data.mlm.whole_word: whole-word masking needs \"##\" continuation pieces"),
                       ConfigError);
  // an id outside the vocabulary is a clear error, not a read past the tables
  const MlmVocabInfo info = bert_info();
  std::vector<int32_t> ids = {101, 40000, 102}, labels(3);
  CHECK_THROWS_WITH_AS(mlm_mask_row(MlmMaskOptions{}, info, 0, 0, ids.data(), labels.data(), 3),
                       has("token id 40000 at position 1 outside the vocabulary of 30522"), Error);
}
