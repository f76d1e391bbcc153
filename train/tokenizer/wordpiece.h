// WordPiece: greedy longest-match-first segmentation of one word into vocabulary pieces, "##" marking a piece that
// continues a word. A word longer than max_input_chars_per_word, or one with a piece that matches nothing, becomes a
// single [UNK] (as in BERT).
#pragma once

#include <cstdint>
#include <vector>

#include "train/tokenizer/basic_tokenizer.h"
#include "train/tokenizer/vocab.h"

namespace hr {

class WordPiece {
 public:
  explicit WordPiece(Vocab vocab, int max_input_chars_per_word = 100)
      : vocab_(std::move(vocab)), max_chars_(max_input_chars_per_word) {}

  // Appends the pieces of `word` to ids and offsets; a piece's offsets run from the original start of its first
  // normalised character to the original end of its last one, so they stay within the word's.
  void tokenize(const Word& word, std::vector<int32_t>& ids, std::vector<Offset>& offsets) const;

  const Vocab& vocab() const { return vocab_; }
  int max_input_chars_per_word() const { return max_chars_; }

 private:
  Vocab vocab_;
  int max_chars_;
};

}  // namespace hr
