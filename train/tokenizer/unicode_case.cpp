#include "train/tokenizer/unicode_case.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

namespace hr {

bool is_cased(char32_t cp) {
  const auto c = static_cast<utf8proc_int32_t>(cp);
  return utf8proc_islower(c) || utf8proc_isupper(c) || utf8proc_category(c) == UTF8PROC_CATEGORY_LT;
}

bool is_case_ignorable(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK: return true;
    default: break;
  }
  static constexpr char32_t kMid[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,  0x5F4,  0x2018, 0x2019,
                                      0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  return std::find(std::begin(kMid), std::end(kMid), cp) != std::end(kMid);
}

}  // namespace hr
