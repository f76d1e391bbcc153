// The BERT tokenizer: BasicTokenizer words, then WordPiece pieces, each with its code-point offsets in the input.
// encode() adds no [CLS]/[SEP]: the data code assembles sequences (question + context pairs, truncation) itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "train/tokenizer/basic_tokenizer.h"
#include "train/tokenizer/vocab.h"
#include "train/tokenizer/wordpiece.h"

namespace hr {

struct Encoding {
  std::vector<int32_t> ids;     // (N,)
  std::vector<Offset> offsets;  // (N,) [first, second) code points of the original text each token covers
};

// Bumped whenever encode() gives other ids for some input (a rule fixed), so that what was cached with the old rules
// (train/data/token_cache.h) is tokenised again. 2: lower-casing per character, as tokenizers and transformers do.
constexpr uint64_t kTokenizerRevision = 2;

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab, BasicTokenizer basic = BasicTokenizer(), int max_input_chars_per_word = 100)
      : basic_(basic), wordpiece_(std::move(vocab), max_input_chars_per_word) {}

  Encoding encode(std::string_view text) const;
  std::vector<std::string> tokens(std::string_view text) const;  // the token strings of encode(text).ids
  // Joins the tokens with spaces and glues "##" pieces to the one before, like transformers'
  // convert_tokens_to_string. [PAD] [CLS] [SEP] [MASK] are skipped; [UNK] is kept since it stands for real text.
  std::string decode(const std::vector<int32_t>& ids) const;

  const Vocab& vocab() const { return wordpiece_.vocab(); }
  const BasicTokenizer& basic() const { return basic_; }

 private:
  BasicTokenizer basic_;
  WordPiece wordpiece_;
};

}  // namespace hr
