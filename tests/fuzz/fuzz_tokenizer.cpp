// The BERT tokenizer on arbitrary bytes (invalid UTF-8 included): basic splitting, lower-casing and accent stripping
// (the first byte picks the uncased or the cased Chinese vocabulary), WordPiece, offsets and decode. Offsets must
// stay inside the text's code points and never run backwards.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/fuzz_vocab.h"
#include "train/tokenizer/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const hr::Tokenizer& tokenizer = data[0] & 1 ? hr::fuzz::chinese_tokenizer() : hr::fuzz::uncased_tokenizer();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const hr::Encoding e = tokenizer.encode(text);
  const int64_t n = static_cast<int64_t>(hr::utf8::decode(text).code_points.size());
  if (e.ids.size() != e.offsets.size()) std::abort();
  int64_t previous = 0;
  for (const hr::Offset& o : e.offsets) {
    if (o.first < previous || o.first >= o.second || o.second > n) std::abort();
    previous = o.first;
  }
  tokenizer.decode(e.ids);
  return 0;
}
