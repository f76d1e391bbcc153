// RFC 4180 records of a CSV (delimiter ',') or TSV (delimiter '\t') text: quoted fields may hold delimiters, doubled
// quotes ("") and newlines; records end at LF or CRLF. Blank lines are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hr {

struct DelimitedRecord {
  std::vector<std::string> fields;
  int64_t line = 0;   // 1-based line where the record starts
  std::string error;  // non-empty for a malformed record (unterminated quote, text after a closing quote)
};

std::vector<DelimitedRecord> read_delimited_records(std::string_view text, char delimiter);

}  // namespace hr
