#include "train/tokenizer/wordpiece.h"

#include <algorithm>
#include <string>

#include "train/tokenizer/utf8.h"

namespace hr {
namespace {

// The original code points covered by normalised characters [begin, end). Canonical reordering can move a combining
// mark before its neighbour's, so take the extremes rather than trusting the first and last.
Offset span_of(const Word& word, size_t begin, size_t end) {
  Offset span = word.char_offsets[begin];
  for (size_t i = begin + 1; i < end; ++i) {
    span.first = std::min(span.first, word.char_offsets[i].first);
    span.second = std::max(span.second, word.char_offsets[i].second);
  }
  return span;
}

}  // namespace

void WordPiece::tokenize(const Word& word, std::vector<int32_t>& ids, std::vector<Offset>& offsets) const {
  const size_t n = word.text.size();
  if (n == 0) return;
  if (n > static_cast<size_t>(max_chars_)) {
    ids.push_back(vocab_.unk_id());
    offsets.push_back(span_of(word, 0, n));
    return;
  }
  std::string bytes;              // the word in UTF-8
  std::vector<size_t> byte_at(n + 1);  // (n + 1,) byte position of each character
  for (size_t i = 0; i < n; ++i) {
    byte_at[i] = bytes.size();
    utf8::append(bytes, word.text[i]);
  }
  byte_at[n] = bytes.size();

  const size_t first_piece = ids.size();
  std::string candidate;
  for (size_t start = 0; start < n;) {
    size_t end = n;
    for (; end > start; --end) {
      candidate.assign(start > 0 ? "##" : "");
      candidate.append(bytes, byte_at[start], byte_at[end] - byte_at[start]);
      if (const auto id = vocab_.find(candidate)) {
        ids.push_back(*id);
        offsets.push_back(span_of(word, start, end));
        break;
      }
    }
    if (end == start) {  // nothing matches here: the whole word is unknown
      ids.resize(first_piece);
      offsets.resize(first_piece);
      ids.push_back(vocab_.unk_id());
      offsets.push_back(span_of(word, 0, n));
      return;
    }
    start = end;
  }
}

}  // namespace hr
