#include "train/data/utf8_codepoints.h"

#include <algorithm>

#include "kernels/base/error.h"

namespace hr {

int32_t decode_utf8_codepoint(std::string_view s, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  int extra;
  int32_t cp;
  int32_t min_cp;
  if ((lead & 0xE0) == 0xC0) {
    extra = 1, cp = lead & 0x1F, min_cp = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    extra = 2, cp = lead & 0x0F, min_cp = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    extra = 3, cp = lead & 0x07, min_cp = 0x10000;
  } else {
    ++pos;
    return -1;
  }
  if (pos + extra >= s.size()) {  // truncated sequence
    ++pos;
    return -1;
  }
  for (int k = 1; k <= extra; ++k) {
    if ((byte(pos + k) & 0xC0) != 0x80) {
      ++pos;
      return -1;
    }
    cp = (cp << 6) | (byte(pos + k) & 0x3F);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++pos;
    return -1;
  }
  pos += extra + 1;
  return cp;
}

void append_utf8(std::string& out, int32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    if (decode_utf8_codepoint(s, pos) < 0) return false;
  }
  return true;
}

std::vector<size_t> utf8_codepoint_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t pos = 0; pos < s.size();) {
    const size_t at = pos;
    offsets.push_back(at);
    HR_CHECK(decode_utf8_codepoint(s, pos) >= 0, "invalid UTF-8 at byte " + std::to_string(at));
  }
  offsets.push_back(s.size());
  return offsets;
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
