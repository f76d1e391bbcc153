#include "train/data/mlm_masking.h"

#include <cstdio>

#include "kernels/base/error.h"
#include "kernels/math/random.h"

namespace hr {

namespace {

constexpr int32_t kIgnoreLabel = -100;  // what cross-entropy skips, as PyTorch's ignore_index

std::string show(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
  return buf;
}

}  // namespace

MlmVocabInfo MlmVocabInfo::from(const Vocab& v, bool whole_word, const std::string& key_for_errors) {
  MlmVocabInfo info;
  if (!v.mask_id()) {
    throw ConfigError(key_for_errors + ": the vocabulary (" + std::to_string(v.size()) +
                      " tokens) has no [MASK] token, which masked-language-model training needs");
  }
  info.mask_id = *v.mask_id();
  info.vocab_size = v.size();
  info.special.resize(static_cast<size_t>(v.size()));
  info.continuation.resize(static_cast<size_t>(v.size()));
  bool any_piece = false;
  for (int32_t id = 0; id < v.size(); ++id) {
    const std::string& token = v.token(id);
    info.special[id] = v.is_special(id) ? 1 : 0;
    info.continuation[id] = token.size() > 2 && token.compare(0, 2, "##") == 0 ? 1 : 0;
    any_piece = any_piece || info.continuation[id];
  }
  if (whole_word && !any_piece) {
    throw ConfigError(key_for_errors + ": whole-word masking needs \"##\" continuation pieces, and the vocabulary (" +
                      std::to_string(v.size()) + " tokens) has none");
  }
  return info;
}

void check_mlm_options(const MlmMaskOptions& o) {
  if (!(o.probability > 0.f && o.probability < 1.f)) {
    throw ConfigError("data.mlm.probability: must be in (0, 1), got " + show(o.probability));
  }
  if (!(o.mask >= 0.f && o.mask <= 1.f)) throw ConfigError("data.mlm.mask: must be in [0, 1], got " + show(o.mask));
  if (!(o.random >= 0.f && o.random <= 1.f)) {
    throw ConfigError("data.mlm.random: must be in [0, 1], got " + show(o.random));
  }
  if (o.mask + o.random > 1.f) {
    throw ConfigError("data.mlm.mask + data.mlm.random: must be at most 1 (the rest is left unchanged), got " +
                      show(o.mask) + " + " + show(o.random));
  }
}

int64_t mlm_mask_row(const MlmMaskOptions& o, const MlmVocabInfo& v, uint64_t seed, uint64_t draw_index, int32_t* ids,
                     int32_t* labels, int64_t T) {
  const uint64_t key = math::mix64(seed, draw_index);
  // of the chosen that [MASK] leaves, the share that gets a random token
  const float random_of_rest = o.mask < 1.f ? o.random / (1.f - o.mask) : 0.f;
  const auto draw = [&](int64_t t, int k) { return math::uniform01(key, 4 * static_cast<uint64_t>(t) + k); };
  const auto check_id = [&](int32_t id, int64_t t) {
    HR_CHECK(id >= 0 && id < v.vocab_size, "mlm_mask_row: token id " + std::to_string(id) + " at position " +
                                               std::to_string(t) + " outside the vocabulary of " +
                                               std::to_string(v.vocab_size));
  };

  int64_t chosen_count = 0;
  bool word_chosen = false;  // whole_word: the choice drawn at the current word's first token
  bool prev_special = true;  // a "##" piece at the start or after a special token starts a word
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = ids[t];
    check_id(id, t);
    labels[t] = kIgnoreLabel;
    if (v.special[id]) {
      prev_special = true;
      word_chosen = false;
      continue;
    }
    bool chosen;
    if (o.whole_word) {
      if (!v.continuation[id] || prev_special) word_chosen = draw(t, 0) < o.probability;
      chosen = word_chosen;
    } else {
      chosen = draw(t, 0) < o.probability;
    }
    prev_special = false;
    if (!chosen) continue;
    ++chosen_count;
    labels[t] = id;
    if (draw(t, 1) < o.mask) {
      ids[t] = v.mask_id;
    } else if (draw(t, 2) < random_of_rest) {
      const uint32_t bits = static_cast<uint32_t>(math::mix64(key, 4 * static_cast<uint64_t>(t) + 3) >> 32);
      ids[t] = static_cast<int32_t>((static_cast<uint64_t>(bits) * static_cast<uint64_t>(v.vocab_size)) >> 32);
    }
  }
  return chosen_count;
}

}  // namespace hr
