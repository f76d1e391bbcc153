#include "train/data/data_file.h"

#include <algorithm>
#include <filesystem>

#include "framework/regular_file.h"
#include "kernels/base/error.h"

namespace hr {

std::string read_data_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  HR_CHECK(std::filesystem::exists(status), path + ": no such file");
  HR_CHECK(std::filesystem::is_regular_file(status), path + ": not a regular file");
  return read_file_bytes(path);
}

LineIndex::LineIndex(std::string_view text) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts_.push_back(i + 1);
  }
}

int64_t LineIndex::line_of(size_t byte_offset) const {
  return std::upper_bound(line_starts_.begin(), line_starts_.end(), byte_offset) - line_starts_.begin();
}

}  // namespace hr
