// BERT's masked-language-model corruption of one packed row: which tokens the model must predict, and what it sees
// in their place. As HF's DataCollatorForLanguageModeling (torch_mask_tokens), but every draw is counter-based, so a
// row's masking is a pure function of (seed, draw index, position): the same in any process, thread or resumed run,
// and different each time the row is seen (dynamic masking, as RoBERTa).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/tokenizer/vocab.h"

namespace hr {

struct MlmMaskOptions {
  float probability = 0.15f;  // of the non-special tokens, chosen for prediction
  float mask = 0.8f;          // of the chosen: replaced by [MASK]
  float random = 0.1f;        // of the chosen: replaced by a uniform random id in [0, vocab_size); the rest unchanged
  bool whole_word = false;    // choose whole words: a token and the "##" pieces after it are chosen together
};

// What masking needs of the vocabulary.
//
// Never chosen: [PAD] [UNK] [CLS] [SEP] [MASK] (Vocab::is_special). That is HF's special-token mask as
// DataCollatorForLanguageModeling computes it when the batch brings none (tokenizer.get_special_tokens_mask(...,
// already_has_special_tokens=True) marks all_special_ids, [UNK] and [MASK] included) and as its whole-word collator
// always does. run_mlm's fast-tokenizer mask marks only the [CLS]/[SEP] it added, so there an [UNK] in the text can be
// chosen; we do not, since an [UNK] target teaches the model nothing about the text, and in our packed stream [SEP]
// also stands between documents. The random replacement may still draw any id, special ones included, as HF's
// torch.randint(len(tokenizer)) does.
struct MlmVocabInfo {
  int32_t mask_id = 0, vocab_size = 0;
  std::vector<uint8_t> special;       // (V,) 1: never chosen
  std::vector<uint8_t> continuation;  // (V,) 1: a "##" piece
  // hr::ConfigError naming key_for_errors: a vocabulary without [MASK]; whole_word with no "##" piece
  static MlmVocabInfo from(const Vocab& v, bool whole_word, const std::string& key_for_errors);
};

// hr::ConfigError naming the key ("data.mlm.probability", "data.mlm.mask", "data.mlm.random"): probability in
// (0, 1), mask and random in [0, 1], mask + random <= 1.
void check_mlm_options(const MlmMaskOptions& o);

// Masks one row of T ids in place; labels (T,) = the original id where chosen, -100 elsewhere (as HF). Returns the
// number of chosen positions.
//
// Per token, independent draws with HF's Bernoulli scheme: chosen ~ Bernoulli(probability); of the chosen, [MASK] ~
// Bernoulli(mask); of the rest, random ~ Bernoulli(random / (1 - mask)), a random id uniform over [0, vocab_size);
// else unchanged. Each draw is uniform01/mix64 of (seed, counter) with a key mixed from (seed, draw_index) and the
// counter 4 t + k (k: choice, [MASK], random, the random id), so position t's draws do not depend on T or on the
// other positions. The caller passes the row's global draw index, different every time a row is seen.
//
// whole_word: a word is a token that is not a "##" piece and the "##" pieces right after it (a special token ends a
// word; a "##" piece after a special token or at t = 0, as where a packed row cuts a word, starts one). The choice is
// drawn once per word, at its first token's position, and applies to all its pieces; the [MASK] / random / unchanged
// replacement is drawn per token, as HF's DataCollatorForWholeWordMask does. HF chooses exactly round(p * words)
// words per sequence; here each word is chosen with probability p, so the expected fraction is the same.
int64_t mlm_mask_row(const MlmMaskOptions& o, const MlmVocabInfo& v, uint64_t seed, uint64_t draw_index, int32_t* ids,
                     int32_t* labels, int64_t T);

}  // namespace hr
