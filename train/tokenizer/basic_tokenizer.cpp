#include "train/tokenizer/basic_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <utility>

#include "train/tokenizer/utf8.h"

namespace hr {
namespace {

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

// A character on its way through normalisation, with the original code points it stands for.
struct Char {
  char32_t cp;
  Offset origin;
};

// Character by character, as both references lower-case: tokenizers' BertNormalizer (Rust's char::to_lowercase) and
// transformers' slow tokenizer (which lowers each character alone before BasicTokenizer), so capital sigma is always
// U+03C3, never the final sigma that Python's str.lower() gives a whole word. Each character's full lower-case
// mapping: utf8proc's simple one, except U+0130 (capital I with dot above), the one character whose lower case is two
// (i and U+0307 combining dot above, both standing for the original character; accent stripping then drops the dot).
void lower_case_chars(std::vector<Char>& word) {
  constexpr char32_t kCapitalIDot = 0x0130, kCombiningDotAbove = 0x0307;
  std::vector<Char> out;
  out.reserve(word.size());
  for (const Char& c : word) {
    if (c.cp == kCapitalIDot) {
      out.push_back({U'i', c.origin});
      out.push_back({kCombiningDotAbove, c.origin});
      continue;
    }
    out.push_back({static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c.cp))), c.origin});
  }
  word = std::move(out);
}

// NFD, then drop the non-spacing marks (Mn). A dropped mark that was its own original code point (a combining accent
// typed separately) widens the offsets of the character it sat on, so the word still covers it.
void strip_accent_chars(std::vector<Char>& word) {
  std::vector<Char> nfd;
  nfd.reserve(word.size());
  std::array<utf8proc_int32_t, 32> buf;  // canonical decompositions are at most 4 code points long
  for (const Char& c : word) {
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c.cp), buf.data(), buf.size(),
                                                       UTF8PROC_DECOMPOSE, nullptr);
    if (n < 0 || n > static_cast<utf8proc_ssize_t>(buf.size())) {
      nfd.push_back(c);  // not decomposable (cannot happen for a scalar value); keep it unchanged
      continue;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) nfd.push_back({static_cast<char32_t>(buf[k]), c.origin});
  }
  // Canonical ordering: a stable sort of each run of combining marks by combining class.
  const auto ccc = [](char32_t cp) {
    return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
  };
  for (size_t i = 1; i < nfd.size(); ++i) {
    for (size_t j = i; j > 0 && ccc(nfd[j].cp) != 0 && ccc(nfd[j - 1].cp) > ccc(nfd[j].cp); --j) {
      std::swap(nfd[j], nfd[j - 1]);
    }
  }
  word.clear();
  for (const Char& c : nfd) {
    if (category(c.cp) != UTF8PROC_CATEGORY_MN) {
      word.push_back(c);
    } else if (!word.empty()) {
      word.back().origin.second = std::max(word.back().origin.second, c.origin.second);
    }
  }
}

void append_word(std::vector<Word>& out, const Char* begin, const Char* end) {
  if (begin == end) return;
  Word& w = out.emplace_back();
  w.text.reserve(static_cast<size_t>(end - begin));
  w.char_offsets.reserve(static_cast<size_t>(end - begin));
  for (const Char* c = begin; c != end; ++c) {
    w.text.push_back(c->cp);
    w.char_offsets.push_back(c->origin);
  }
}

}  // namespace

std::string Word::utf8() const { return utf8::encode(text); }

bool is_bert_whitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  const auto cat = category(cp);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_bert_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  const auto cat = category(cp);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::vector<Word> BasicTokenizer::split(std::string_view text) const {
  const std::u32string cps = utf8::decode(text).code_points;
  std::vector<Word> words;
  std::vector<Char> chunk;  // a whitespace-delimited run of cleaned characters

  const auto flush = [&] {
    if (chunk.empty()) return;
    if (lower_case_) lower_case_chars(chunk);
    if (strip_accents_) strip_accent_chars(chunk);
    const Char* start = chunk.data();
    for (const Char& c : chunk) {
      if (!is_bert_punctuation(c.cp)) continue;
      append_word(words, start, &c);
      append_word(words, &c, &c + 1);
      start = &c + 1;
    }
    append_word(words, start, chunk.data() + chunk.size());
    chunk.clear();
  };

  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    const Offset origin{static_cast<int64_t>(i), static_cast<int64_t>(i + 1)};
    if (cp == 0 || cp == utf8::kReplacement || is_bert_control(cp)) continue;
    if (is_bert_whitespace(cp)) {
      flush();
    } else if (is_cjk(cp)) {
      flush();
      chunk.push_back({cp, origin});
      flush();
    } else {
      chunk.push_back({cp, origin});
    }
  }
  flush();
  return words;
}

}  // namespace hr
