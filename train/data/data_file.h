// Reading a data file whole, and mapping byte offsets in it to 1-based line numbers for issue messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hr {

// The file's bytes; hr::Error naming the path when it is missing, not a regular file, or unreadable.
std::string read_data_file(const std::string& path);

class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  int64_t line_of(size_t byte_offset) const;  // 1-based

 private:
  std::vector<size_t> line_starts_;  // byte offset where each line begins
};

}  // namespace hr
