// Tokenizer tests. Expected tokenisations come from HuggingFace transformers' BertTokenizer (BasicTokenizer +
// WordpieceTokenizer) run on the same vocab files; ids are looked up in the files here with std::getline, independent
// of Vocab::load.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/error_message.h"
#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "kernels/base/error.h"
#include "train/tokenizer/tokenizer.h"
#include "train/tokenizer/unicode_case.h"
#include "train/tokenizer/utf8.h"
#include "train/tokenizer/wordpiece_trainer.h"

using namespace hr;
using hr::testing::error_message;
using hr::testing::repo_path;

// Readable failure messages for the vectors compared below.
namespace doctest {
template <typename T>
struct StringMaker<std::vector<T>> {
  static String convert(const std::vector<T>& v) {
    std::ostringstream out;
    out << "{";
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, Offset>) {
        out << (i ? ", " : "") << "[" << v[i].first << ", " << v[i].second << ")";
      } else {
        out << (i ? ", " : "") << v[i];
      }
    }
    out << "}";
    return out.str().c_str();
  }
};
}  // namespace doctest

namespace {


const std::string kUncased = "data/bert_vocab/bert-base-uncased-vocab.txt";
const std::string kChinese = "data/bert_vocab/bert-base-chinese-vocab.txt";

// The id of `token`: its 0-based line number, found by reading the file line by line.
int32_t line_of(const std::string& rel, const std::string& token) {
  std::ifstream in(repo_path(rel), std::ios::binary);
  std::string line;
  for (int32_t i = 0; std::getline(in, line); ++i) {
    if (line == token) return i;
  }
  FAIL("token not in " << rel << ": " << token);
  return -1;
}

std::vector<int32_t> lines_of(const std::string& rel, const std::vector<std::string>& tokens) {
  std::vector<int32_t> ids;
  for (const std::string& t : tokens) ids.push_back(line_of(rel, t));
  return ids;
}

const Tokenizer& uncased() {
  static const Tokenizer t(Vocab::load(repo_path(kUncased)), BasicTokenizer(true));
  return t;
}

const Tokenizer& chinese() {
  static const Tokenizer t(Vocab::load(repo_path(kChinese)), BasicTokenizer(true));
  return t;
}

// A path in this executable's temporary directory, and a file written there
std::filesystem::path temp_path(const std::string& name) {
  static const hr::testing::TempDir dir;
  return dir / name;
}
std::filesystem::path temp_file(const std::string& name, const std::string& content) {
  return hr::testing::write_file(temp_path(name), content);
}

using Offsets = std::vector<Offset>;

// The WordPiece learner written the slow, obvious way: recount every pair and symbol after each merge.
std::vector<std::string> naive_wordpiece_vocab(const std::vector<std::string>& texts, size_t vocab_size) {
  std::map<std::string, int64_t> freq;
  std::set<std::string> chars;
  std::map<std::string, std::vector<std::string>> splits;
  for (const std::string& text : texts) {
    for (const Word& w : BasicTokenizer(true).split(text)) {
      ++freq[w.utf8()];
      std::vector<std::string> split;
      for (size_t i = 0; i < w.text.size(); ++i) {
        chars.insert(utf8::encode(w.text.substr(i, 1)));
        split.push_back((i ? "##" : "") + utf8::encode(w.text.substr(i, 1)));
      }
      splits[w.utf8()] = split;
    }
  }
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const std::string& c : chars) vocab.push_back(c);
  for (const std::string& c : chars) vocab.push_back("##" + c);
  while (vocab.size() < vocab_size) {
    std::map<std::string, int64_t> count;
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [word, split] : splits) {
      for (size_t i = 0; i < split.size(); ++i) {
        count[split[i]] += freq[word];
        if (i + 1 < split.size()) pairs[{split[i], split[i + 1]}] += freq[word];
      }
    }
    if (pairs.empty()) break;
    std::pair<std::string, std::string> best;
    double best_score = -1;
    for (const auto& [p, n] : pairs) {  // std::map visits pairs in lexicographic order: first best wins ties
      const double score = static_cast<double>(n) / (static_cast<double>(count[p.first]) * count[p.second]);
      if (score > best_score) best_score = score, best = p;
    }
    const std::string merged = best.first + best.second.substr(2);
    for (auto& [word, split] : splits) {
      std::vector<std::string> out;
      for (size_t i = 0; i < split.size(); ++i) {
        if (i + 1 < split.size() && split[i] == best.first && split[i + 1] == best.second) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(split[i]);
        }
      }
      split = out;
    }
    if (std::find(vocab.begin(), vocab.end(), merged) == vocab.end()) vocab.push_back(merged);
  }
  return vocab;
}

}  // namespace

TEST_CASE("utf8: decode replaces each maximal ill-formed subpart like Python's errors='replace'") {
  const auto cps = [](std::string_view s) { return utf8::decode(s).code_points; };
  CHECK(cps("\xE2\x82\xAC\xF0\x9F\x98\x80") == U"\u20AC\U0001F600");
  CHECK(utf8::decode("\xE2\x82\xAC\xF0\x9F\x98\x80").byte_offsets == std::vector<size_t>{0, 3, 7});
  CHECK(utf8::decode("ok \xEF\xBF\xBD").valid);  // a real U+FFFD is valid text
  CHECK(cps("\xF0\x9F\x8D" "A") == U"\uFFFDA");   // truncated 4-byte sequence
  CHECK(cps("\xED\xA0\x80") == U"\uFFFD\uFFFD\uFFFD");  // encoded surrogate
  CHECK(cps("\xC0\xAF") == U"\uFFFD\uFFFD");            // overlong '/'
  CHECK(cps("\xF4\x90\x80\x80") == U"\uFFFD\uFFFD\uFFFD\uFFFD");  // above U+10FFFF
  CHECK_FALSE(utf8::decode("ab\xFF").valid);
  const std::u32string round = U"a\u00E9\u4E2D\U0001F355";
  CHECK(utf8::encode(round) == "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x8D\x95");
  CHECK(utf8::decode(utf8::encode(round)).code_points == round);
}

TEST_CASE("case properties: one Case_Ignorable and Cased for the tokenizer and the SQuAD metric") {
  CHECK(is_case_ignorable(U'\''));     // Word_Break Single_Quote
  CHECK(is_case_ignorable(U'.'));      // MidNumLet
  CHECK(is_case_ignorable(0x2019));    // right single quotation mark
  CHECK(is_case_ignorable(0x0301));    // combining acute (Mn)
  CHECK(is_case_ignorable(0x02B0));    // modifier letter small h (Lm)
  CHECK_FALSE(is_case_ignorable(U'a'));
  CHECK_FALSE(is_case_ignorable(U','));
  CHECK(is_cased(U'A'));
  CHECK(is_cased(0x01C5));  // Dž (Lt)
  CHECK(is_cased(0x00AA));  // ª: Other_Lowercase
  CHECK_FALSE(is_cased(U'1'));
  CHECK_FALSE(is_cased(0x4E2D));
  // ΑΣ'Σ: the apostrophe is skipped both ways, so the first sigma is followed by a cased letter, the last is final
  const std::u32string word = U"\u0391\u03A3'\u03A3";
  const auto at = [&](size_t k) { return word[k]; };
  CHECK_FALSE(is_final_sigma(1, word.size(), at));
  CHECK(is_final_sigma(3, word.size(), at));
}

TEST_CASE("vocab: real BERT files, '\\n'-only lines, special ids") {
  const Vocab& v = uncased().vocab();
  CHECK(v.size() == 30522);
  CHECK(v.pad_id() == line_of(kUncased, "[PAD]"));
  CHECK(v.unk_id() == line_of(kUncased, "[UNK]"));
  CHECK(v.cls_id() == line_of(kUncased, "[CLS]"));
  CHECK(v.sep_id() == line_of(kUncased, "[SEP]"));
  CHECK(v.mask_id() == line_of(kUncased, "[MASK]"));
  CHECK(v.token(line_of(kUncased, "##able")) == "##able");

  const Vocab& zh = chinese().vocab();
  CHECK(zh.size() == 21128);
  const std::string line_separator = "\xE2\x80\xA8";  // U+2028 is a token of its own
  REQUIRE(zh.find(line_separator).has_value());
  CHECK(*zh.find(line_separator) == line_of(kChinese, line_separator));
  CHECK(zh.id("\xF0\x9F\x98\x8E") == line_of(kChinese, "\xF0\x9F\x98\x8E"));  // the last lines are 4-byte emoji
  CHECK(zh.token(21127) == "##\xF0\x9F\x98\x8E");
  CHECK_THROWS_AS(zh.token(21128), Error);
}

TEST_CASE("vocab: errors name the file and line; '\\r' is stripped; save/load round trip") {
  const auto dup = temp_file("dup.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\nhello\n");
  const std::string msg = error_message([&] { Vocab::load(dup.string()); });
  CHECK(msg.find(dup.string()) != std::string::npos);
  CHECK(msg.find(":7:") != std::string::npos);
  CHECK(msg.find("duplicate token 'hello'") != std::string::npos);

  const auto no_cls = temp_file("nocls.txt", "[PAD]\n[UNK]\n[SEP]\n");
  const std::string msg2 = error_message([&] { Vocab::load(no_cls.string()); });
  CHECK(msg2.find(no_cls.string()) != std::string::npos);
  CHECK(msg2.find("[CLS]") != std::string::npos);
  CHECK(error_message([] { Vocab::load("/nonexistent/vocab.txt"); }).find("/nonexistent/vocab.txt") !=
        std::string::npos);

  const auto crlf = temp_file("crlf.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nx\xE2\x80\xA8y\r\n");
  const Vocab v = Vocab::load(crlf.string());
  CHECK(v.size() == 5);
  CHECK(v.id("x\xE2\x80\xA8y") == 4);
  CHECK_FALSE(v.mask_id().has_value());

  const auto saved = temp_path("saved.txt");
  chinese().vocab().save(saved.string());
  CHECK(Vocab::load(saved.string()).tokens() == chinese().vocab().tokens());
}

TEST_CASE("BERT uncased: known tokenisations, ids from the vocab file") {
  const Encoding e = uncased().encode("Hello, World!");
  CHECK(e.ids == lines_of(kUncased, {"hello", ",", "world", "!"}));
  CHECK(e.offsets == Offsets{{0, 5}, {5, 6}, {7, 12}, {12, 13}});

  // The BERT README's "un ##aff ##able" used a toy vocabulary; the real one splits it differently.
  CHECK(uncased().tokens("unaffable") == std::vector<std::string>{"una", "##ffa", "##ble"});
  CHECK(uncased().encode("unaffable").offsets == Offsets{{0, 3}, {3, 6}, {6, 9}});
  const Tokenizer toy(Vocab({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "##a"}));
  CHECK(toy.tokens("unaffable") == std::vector<std::string>{"un", "##aff", "##able"});
  CHECK(toy.tokens("unaffablex") == std::vector<std::string>{"[UNK]"});  // one unmatched piece: the word is [UNK]

  CHECK(uncased().tokens("soft\u00ADhyphen") == std::vector<std::string>{"soft", "##hy", "##ph", "##en"});  // Cf gone
  CHECK(uncased().encode("soft\u00ADhyphen").offsets.back() == Offset{9, 11});
  CHECK(uncased().tokens("Hangul \uD55C\uAD6D\uC5B4").size() == 9);  // NFD splits syllables into jamo
  const Encoding ko = uncased().encode("\uD55C\uAD6D");
  CHECK(ko.ids == lines_of(kUncased, {"\u1112", "##\u1161", "##\u11AB", "##\u1100", "##\u116E", "##\u11A8"}));
  CHECK(ko.offsets == Offsets{{0, 1}, {0, 1}, {0, 1}, {1, 2}, {1, 2}, {1, 2}});  // jamo map back to their syllable
}

TEST_CASE("accents are stripped, offsets stay in the original text") {
  const Encoding e = uncased().encode("Cr\u00E8me br\u00FBl\u00E9e");
  CHECK(e.ids == lines_of(kUncased, {"cr", "##eme", "br", "##ule", "##e"}));
  CHECK(e.offsets == Offsets{{0, 2}, {2, 5}, {6, 8}, {8, 11}, {11, 12}});

  const std::vector<Word> words = BasicTokenizer(true).split("Cr\u00E8me br\u00FBl\u00E9e");
  REQUIRE(words.size() == 2);
  CHECK(words[0].utf8() == "creme");
  CHECK(words[1].utf8() == "brulee");
  CHECK(words[1].char_offsets.front() == Offset{6, 7});
  CHECK(words[1].char_offsets.back() == Offset{11, 12});

  // A separately typed combining accent (NFD input) is absorbed by the letter it sits on.
  const Encoding nfd = uncased().encode("cafe\u0301 ok");
  CHECK(nfd.ids == lines_of(kUncased, {"cafe", "ok"}));
  CHECK(nfd.offsets == Offsets{{0, 5}, {6, 8}});

  // Cased, accents kept unless asked for.
  CHECK(BasicTokenizer(false).split("Cr\u00E8me")[0].utf8() == "Cr\u00E8me");
  CHECK(BasicTokenizer(false, true).split("Cr\u00E8me")[0].utf8() == "Creme");
  CHECK(BasicTokenizer(true, false).split("Cr\u00E8me")[0].utf8() == "cr\u00E8me");

  // Lower-casing is per character, as tokenizers' BertNormalizer and transformers' slow tokenizer do it: capital
  // sigma is σ at the end of a word too (Python's str.lower() of the whole word would give the final ς).
  CHECK(BasicTokenizer(true, false).split("\u039F\u0394\u039F\u03A3 \u03A3\u039F")[0].utf8() ==
        "\u03BF\u03B4\u03BF\u03C3");
  CHECK(BasicTokenizer(true, false).split("\u039F\u0394\u039F\u03A3 \u03A3\u039F")[1].utf8() == "\u03C3\u03BF");
  CHECK(uncased().tokens("\u039F\u0394\u039F\u03A3") ==
        std::vector<std::string>{"\u03BF", "##\u03B4", "##\u03BF", "##\u03C3"});
  // U+0130 lowers to i + U+0307 (combining dot above), both standing for it; stripping accents leaves the i.
  const std::vector<Word> dotted = BasicTokenizer(true, false).split("\u0130smet");
  CHECK(dotted[0].utf8() == "i\u0307smet");
  CHECK(dotted[0].char_offsets[0] == Offset{0, 1});
  CHECK(dotted[0].char_offsets[1] == Offset{0, 1});
  CHECK(BasicTokenizer(true).split("\u0130smet")[0].utf8() == "ismet");
  CHECK(BasicTokenizer(false).split("\u0130smet")[0].utf8() == "\u0130smet");
}

TEST_CASE("Chinese: every CJK character is a token, emoji count as one code point") {
  const std::string text = "我爱北京天安门，Hello！";
  const Encoding e = chinese().encode(text);
  CHECK(e.ids == lines_of(kChinese, {"我", "爱", "北", "京", "天", "安", "门", "，", "hello", "！"}));
  CHECK(e.offsets == Offsets{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 13}, {13, 14}});

  // 4-byte characters: offsets are code points, not bytes. U+2028 separates words like a space.
  const Encoding emoji = chinese().encode("我👍🔥好 OK\u2028😎");
  CHECK(emoji.ids == lines_of(kChinese, {"我", "👍", "##🔥", "好", "ok", "😎"}));
  CHECK(emoji.offsets == Offsets{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {5, 7}, {8, 9}});

  // Emoji unknown to the uncased vocab; U+FE0F (a variation selector, Mn) is absorbed by the heart.
  const Encoding unk = uncased().encode("I \u2764\uFE0F pizza \U0001F355 and \U0001D4B3 ok");
  CHECK(unk.ids == lines_of(kUncased, {"i", "[UNK]", "pizza", "[UNK]", "and", "[UNK]", "ok"}));
  CHECK(unk.offsets == Offsets{{0, 1}, {2, 4}, {5, 10}, {11, 12}, {13, 16}, {17, 18}, {19, 21}});
}

TEST_CASE("invalid UTF-8 becomes U+FFFD, which is dropped but still counts as a position") {
  const Encoding e = uncased().encode("ab\xFF" "cd \xE2\x82 ef");
  CHECK(e.ids == lines_of(kUncased, {"abc", "##d", "e", "##f"}));
  CHECK(e.offsets == Offsets{{0, 4}, {4, 5}, {8, 9}, {9, 10}});
  CHECK(uncased().encode("\xC0\xAF\xED\xA0\x80").ids.empty());
  CHECK(uncased().encode("").ids.empty());
  CHECK(uncased().encode(" \t\n\u3000").ids.empty());
}

TEST_CASE("a word longer than 100 characters is one [UNK]") {
  const Encoding at_limit = uncased().encode(std::string(100, 'a'));
  CHECK(at_limit.ids.size() > 1);
  CHECK(at_limit.ids.front() == line_of(kUncased, "aaa"));
  CHECK(at_limit.offsets.back().second == 100);
  const Encoding over = uncased().encode("x " + std::string(101, 'a') + " y");
  CHECK(over.ids == lines_of(kUncased, {"x", "[UNK]", "y"}));
  CHECK(over.offsets == Offsets{{0, 1}, {2, 103}, {104, 105}});
}

TEST_CASE("decode joins pieces, skips structural specials") {
  const Vocab& v = uncased().vocab();
  std::vector<int32_t> ids = {v.cls_id()};
  for (int32_t id : uncased().encode("Hello, unaffable world!").ids) ids.push_back(id);
  ids.push_back(v.sep_id());
  ids.push_back(v.pad_id());
  CHECK(uncased().decode(ids) == "hello , unaffable world !");
  CHECK(uncased().decode({v.unk_id(), line_of(kUncased, "##able")}) == "[UNK]able");
  CHECK_THROWS_AS(uncased().decode({-1}), Error);
}

TEST_CASE("learned vocabulary: likelihood score picks the merge, ties go lexicographically") {
  // "ab": count(a ##b) = 3, count(a) = count(##b) = 3 -> 1/3; "cd": 1 / (1 * 1) = 1. Raw counts (BPE) would pick ab.
  const BasicTokenizer basic(true);
  const Vocab v = learn_wordpiece_vocab({"ab ab ab cd"}, 15, basic);
  CHECK(v.tokens() == std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "##a",
                                               "##b", "##c", "##d", "cd", "ab"});
  CHECK(learn_wordpiece_vocab({"cd ab"}, 14, basic).tokens().back() == "ab");  // both score 1
  CHECK(learn_wordpiece_vocab({"ab"}, 100, basic).size() == 10);              // nothing left to merge
  CHECK_THROWS_AS(learn_wordpiece_vocab({"abcdef"}, 10, basic), Error);
}

TEST_CASE("learned vocabulary on CLINC150: exact size, specials, deterministic, few [UNK], round trip") {
  std::ifstream in(repo_path("data/clinc150/data_full.json"));
  const nlohmann::json data = nlohmann::json::parse(in);
  std::vector<std::string> texts;
  for (const auto& row : data["train"]) texts.push_back(row[0].get<std::string>());
  REQUIRE(texts.size() == 15000);

  const BasicTokenizer basic(true);
  const auto t0 = std::chrono::steady_clock::now();
  const Vocab v = learn_wordpiece_vocab(texts, 8000, basic);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("learned 8000 tokens from 15000 sentences in " << seconds << " s");
  CHECK(seconds < 10.0);
  CHECK(v.size() == 8000);
  CHECK(v.tokens()[0] == "[PAD]");
  CHECK(v.unk_id() == 1);
  CHECK(v.mask_id() == 4);
  CHECK(v.find("##e").has_value());

  const std::vector<std::string> some(texts.begin(), texts.begin() + 3000);
  CHECK(learn_wordpiece_vocab(some, 2000, basic).tokens() == learn_wordpiece_vocab(some, 2000, basic).tokens());
  // The incremental counts agree with recounting everything after each merge.
  const std::vector<std::string> few(texts.begin(), texts.begin() + 300);
  CHECK(learn_wordpiece_vocab(few, 500, basic).tokens() == naive_wordpiece_vocab(few, 500));

  const Tokenizer tok(v, basic);
  size_t pieces = 0, unknown = 0;
  for (const std::string& text : texts) {
    for (int32_t id : tok.encode(text).ids) {
      ++pieces;
      unknown += id == v.unk_id();
    }
  }
  CHECK(unknown == 0);  // every character is in the alphabet and no CLINC word is over 100 characters
  // 130768 BERT words in the training split. The likelihood score merges rare pairs first, so frequent words still
  // take a few pieces at this size (1.68 a word; a naive merge order or no merges at all gives far more).
  CHECK(pieces < 1.8 * 130768);

  const auto path = temp_path("learned.txt");
  v.save(path.string());
  CHECK(Vocab::load(path.string()).tokens() == v.tokens());
}
