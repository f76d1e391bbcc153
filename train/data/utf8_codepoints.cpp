#include "train/data/utf8_codepoints.h"

#include <algorithm>

#include "kernels/base/error.h"
#include "train/tokenizer/utf8.h"

namespace hr {

int32_t decode_utf8_codepoint(std::string_view s, size_t& pos) {
  const utf8::Step step = utf8::decode_one(s, pos);
  pos += step.length;
  return step.ok ? static_cast<int32_t>(step.cp) : -1;
}

bool is_valid_utf8(std::string_view s) { return utf8::is_valid(s); }

std::vector<size_t> utf8_codepoint_offsets(std::string_view s) {
  utf8::Decoded decoded = utf8::decode(s);
  if (!decoded.valid) {
    const auto bad = std::find(decoded.code_points.begin(), decoded.code_points.end(), utf8::kReplacement);
    const size_t at = decoded.byte_offsets[static_cast<size_t>(bad - decoded.code_points.begin())];
    throw Error("invalid UTF-8 at byte " + std::to_string(at));
  }
  return std::move(decoded.byte_offsets);
}

int64_t utf8_codepoint_count(std::string_view s) { return static_cast<int64_t>(utf8_codepoint_offsets(s).size()) - 1; }

std::string utf8_slice_codepoints(std::string_view s, int64_t start, int64_t count) {
  const std::vector<size_t> offsets = utf8_codepoint_offsets(s);
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  const int64_t begin = std::clamp<int64_t>(start, 0, n);
  const int64_t end = begin + std::clamp<int64_t>(count, 0, n - begin);
  return std::string(s.substr(offsets[begin], offsets[end] - offsets[begin]));
}

}  // namespace hr
