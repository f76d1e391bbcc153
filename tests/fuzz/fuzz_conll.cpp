// CoNLL token tagging files (train/data/conll_data.h): tokens, tags, sentence breaks and their issues; each loaded
// sentence's tags are then chunked into entities and scored against themselves shifted by one word.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "train/data/conll_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const hr::ConllData d = hr::parse_conll(text, "fuzz.conll", hr::OnError::skip);
  std::vector<std::vector<std::string>> gold, shifted;
  for (const hr::TaggedSentence& s : d.sentences) {
    gold.push_back(s.tags);
    shifted.push_back(std::vector<std::string>(s.tags.begin() + 1, s.tags.end()));  // one word short
  }
  hr::entity_scores(gold, shifted);
  return 0;
}
