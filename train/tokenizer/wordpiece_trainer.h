// Learns a WordPiece vocabulary from raw texts, the WordPiece way (Schuster & Nakajima 2012, as described in the
// HuggingFace course): start from single characters and repeatedly merge the adjacent pair with the highest
// likelihood score count(ab) / (count(a) * count(b)).
//
// Note: HuggingFace `tokenizers`' WordPieceTrainer actually runs BPE (merges by raw pair count) and only adds the
// "##" prefix; this learner uses the likelihood score, which favours pairs whose parts rarely occur apart.
#pragma once

#include <string>
#include <vector>

#include "train/tokenizer/basic_tokenizer.h"
#include "train/tokenizer/vocab.h"

namespace hr {

// Returns [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0..4), then every character seen in both its word-initial and "##"
// form (sorted), then merged tokens in the order learned, until the vocabulary holds vocab_size tokens or nothing is
// left to merge (every word is one token; then it is smaller). Deterministic: equal scores go to the pair whose
// (left, right) token strings sort first. Words are counted after `basic` (so lower-casing etc. match encoding).
// Throws hr::Error when vocab_size cannot hold the specials and the alphabet.
Vocab learn_wordpiece_vocab(const std::vector<std::string>& texts, int vocab_size, const BasicTokenizer& basic);

}  // namespace hr
