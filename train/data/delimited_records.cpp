#include "train/data/delimited_records.h"

namespace hr {

std::vector<DelimitedRecord> read_delimited_records(std::string_view text, char delimiter) {
  std::vector<DelimitedRecord> records;
  size_t i = 0;
  int64_t line = 1;
  const auto at_record_end = [&](size_t k) {
    return k >= text.size() || text[k] == '\n' || (text[k] == '\r' && k + 1 < text.size() && text[k + 1] == '\n');
  };
  const auto skip_record_end = [&]() {
    if (i < text.size() && text[i] == '\r') ++i;
    if (i < text.size() && text[i] == '\n') ++i, ++line;
  };
  while (i < text.size()) {
    DelimitedRecord record;
    record.line = line;
    if (at_record_end(i)) {  // blank line
      skip_record_end();
      continue;
    }
    while (true) {  // one field per iteration
      std::string field;
      if (text[i] == '"') {
        const int64_t opened_on = line;
        ++i;
        bool closed = false;
        while (i < text.size()) {
          const char c = text[i++];
          if (c == '"') {
            if (i < text.size() && text[i] == '"') {
              field += '"';
              ++i;
            } else {
              closed = true;
              break;
            }
          } else {
            if (c == '\n') ++line;
            field += c;
          }
        }
        if (!closed) {
          record.error = "unterminated quoted field (opened on line " + std::to_string(opened_on) + ")";
          records.push_back(std::move(record));
          return records;
        }
        if (!at_record_end(i) && text[i] != delimiter) {
          record.error = "unexpected character after a closing quote (a quote inside a field must be doubled)";
          while (!at_record_end(i)) ++i;  // resynchronise at the end of this physical line
          skip_record_end();
          records.push_back(std::move(record));
          break;
        }
      } else {
        while (!at_record_end(i) && text[i] != delimiter) field += text[i++];
      }
      record.fields.push_back(std::move(field));
      if (at_record_end(i)) {
        skip_record_end();
        records.push_back(std::move(record));
        break;
      }
      ++i;  // the delimiter; a delimiter at the very end starts one last empty field
      if (i >= text.size()) {
        record.fields.emplace_back();
        records.push_back(std::move(record));
        break;
      }
    }
  }
  return records;
}

}  // namespace hr
