// BERT's BasicTokenizer (HuggingFace transformers' BasicTokenizer / tokenizers' BertNormalizer + BertPreTokenizer):
// clean the text, isolate CJK characters, split on whitespace, optionally lower-case and strip accents, split off
// punctuation. Each output word remembers, for every normalised character, which original code points it came
// from, so word pieces can be mapped back to spans of the input.
//
// Input text is UTF-8; ill-formed bytes become U+FFFD (see utf8.h), which cleaning drops like BERT does, so invalid
// UTF-8 never throws and still counts as code points in the offsets.
// Lower-casing is per character, as in both of Hugging Face's tokenizers: capital sigma is always σ (no final ς, which
// Python's str.lower() of a whole word would give), U+0130 becomes i + U+0307. Differences from transformers' slow
// tokenizer, both rare: no NFC pass before splitting (recent versions add one; the fast tokenizer has none), no
// never_split list.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hr {

// A half-open range [first, second) of code-point positions in the original text.
using Offset = std::pair<int64_t, int64_t>;

struct Word {
  std::u32string text;           // (L,) normalised code points
  std::vector<Offset> char_offsets;  // (L,) the original code points each normalised character stands for
  std::string utf8() const;
};

class BasicTokenizer {
 public:
  // strip_accents defaults to lower_case, as in BERT.
  explicit BasicTokenizer(bool lower_case = true, std::optional<bool> strip_accents = std::nullopt)
      : lower_case_(lower_case), strip_accents_(strip_accents.value_or(lower_case)) {}

  std::vector<Word> split(std::string_view text) const;

  bool lower_case() const { return lower_case_; }
  bool strip_accents() const { return strip_accents_; }

 private:
  bool lower_case_;
  bool strip_accents_;
};

// The character classes BERT uses (exposed for tests and for the SQuAD answer normalisation).
bool is_bert_whitespace(char32_t cp);   // ' ', \t, \n, \r and Unicode Z* (Python's str.split() also splits on Zl/Zp)
bool is_bert_control(char32_t cp);      // Unicode C* except \t \n \r
bool is_bert_punctuation(char32_t cp);  // Unicode P* plus every non-alphanumeric printable ASCII character
bool is_cjk(char32_t cp);               // the CJK Unified Ideographs blocks BERT isolates

}  // namespace hr
