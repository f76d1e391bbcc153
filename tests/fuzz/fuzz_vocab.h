// The BERT vocabularies in data/ for the tokenizer targets, loaded once per process. HR_FUZZ_SOURCE_ROOT is the
// source tree, compiled in (tests/meson.build) so the binaries also run outside meson.
#pragma once

#include <string>

#include "train/tokenizer/tokenizer.h"

namespace hr::fuzz {

inline Vocab load_vocab(const std::string& file) {
  return Vocab::load(std::string(HR_FUZZ_SOURCE_ROOT) + "/data/bert_vocab/" + file);
}

inline const Tokenizer& uncased_tokenizer() {
  static const Tokenizer t(load_vocab("bert-base-uncased-vocab.txt"), BasicTokenizer(true));
  return t;
}

inline const Tokenizer& chinese_tokenizer() {
  static const Tokenizer t(load_vocab("bert-base-chinese-vocab.txt"), BasicTokenizer(false));
  return t;
}

}  // namespace hr::fuzz
