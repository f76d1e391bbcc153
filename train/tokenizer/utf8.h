// UTF-8 <-> code points. Tokenizer offsets are code-point positions, so decoding keeps the byte position of each one.
//
// Invalid UTF-8 never throws here: each maximal ill-formed subpart (Unicode 15, section 3.9, the policy Python's
// `bytes.decode("utf-8", "replace")` follows) becomes one U+FFFD, so code-point positions agree with Python's.
// Overlong forms, surrogates (ED A0..BF ..) and values above U+10FFFF are ill-formed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hr::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

struct Decoded {
  std::u32string code_points;       // (N,)
  std::vector<size_t> byte_offsets;  // (N + 1,) byte where each code point starts; the last entry is text.size()
  bool valid = true;                 // false when some bytes were replaced by U+FFFD
};

// One step of decode: the code point at text[i] and the bytes it takes; an ill-formed sequence takes its maximal
// subpart (at least one byte) and yields U+FFFD with ok = false.
struct Step {
  char32_t cp;
  size_t length;
  bool ok;
};
Step decode_one(std::string_view text, size_t i);

Decoded decode(std::string_view text);
bool is_valid(std::string_view text);

void append(std::string& out, char32_t cp);  // cp must be a Unicode scalar value (not a surrogate, <= U+10FFFF)
std::string encode(std::u32string_view cps);

}  // namespace hr::utf8
