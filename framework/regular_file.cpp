#include "framework/regular_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/base/error.h"

namespace hr {

namespace fs = std::filesystem;

std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  HR_CHECK(regular_file_or_absent(path), path + ": no such file");
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  HR_CHECK(!ec, path + ": cannot read its size: " + ec.message());
  HR_CHECK(size <= max_bytes, path + " is " + std::to_string(size) + " bytes; a " + what + " has at most " +
                                  std::to_string(max_bytes) + " (is it the right file?)");
  return read_file_bytes(path);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  HR_CHECK(in, path + ": cannot open for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  HR_CHECK(!in.bad(), path + ": read failed");
  return std::move(bytes).str();
}

bool regular_file_or_absent(const std::string& path) {
  std::error_code ec;
  const fs::file_status s = fs::status(path, ec);
  if (!fs::exists(s)) return false;
  HR_CHECK(fs::is_regular_file(s), path + " is not a regular file (a directory, a device or a pipe): name a file");
  return true;
}

}  // namespace hr
