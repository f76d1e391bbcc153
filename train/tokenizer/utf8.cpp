#include "train/tokenizer/utf8.h"

#include <cstdint>

namespace hr::utf8 {

Step decode_one(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) return {b0, 1, true};
  char32_t cp;
  size_t need;        // continuation bytes
  uint8_t lo = 0x80;  // allowed range of the first continuation byte (excludes overlongs and surrogates)
  uint8_t hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {kReplacement, 1, false};
  }
  size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= text.size()) break;
    const uint8_t b = byte(i + k);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (k <= need) return {kReplacement, k, false};  // the bytes read so far are the maximal ill-formed subpart
  return {cp, need + 1, true};
}

Decoded decode(std::string_view text) {
  Decoded d;
  d.code_points.reserve(text.size());
  d.byte_offsets.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size();) {
    const Step step = decode_one(text, i);
    d.valid = d.valid && step.ok;
    d.code_points.push_back(step.cp);
    d.byte_offsets.push_back(i);
    i += step.length;
  }
  d.byte_offsets.push_back(text.size());
  return d;
}

bool is_valid(std::string_view text) { return decode(text).valid; }

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append(out, cp);
  return out;
}

}  // namespace hr::utf8
