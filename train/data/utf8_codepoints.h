// UTF-8 by code points: validation, decoding, and slicing by code-point offsets (the unit SQuAD's answer_start counts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hr {

// The data layer's view of the one UTF-8 decoder (train/tokenizer/utf8.h), whose rule for ill-formed bytes it shares.
// Decodes the code point at s[pos]; advances pos past it. Returns -1 (and advances past the maximal ill-formed
// subpart, the bytes that one U+FFFD replaces) on an ill-formed sequence: stray continuation byte, truncation,
// overlong form, surrogate, or a value above U+10FFFF.
int32_t decode_utf8_codepoint(std::string_view s, size_t& pos);

bool is_valid_utf8(std::string_view s);

// Byte offset of every code point, plus s.size() at the end: entry k is where code point k starts. Requires valid
// UTF-8.
std::vector<size_t> utf8_codepoint_offsets(std::string_view s);

int64_t utf8_codepoint_count(std::string_view s);

// The `count` code points starting at code point `start` (clamped to the string). Requires valid UTF-8.
std::string utf8_slice_codepoints(std::string_view s, int64_t start, int64_t count);

}  // namespace hr
