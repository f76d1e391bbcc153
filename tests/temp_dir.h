// A fresh, uniquely named directory for one test, removed afterwards (kept when HR_KEEP is set, for debugging), and
// the tests' one way to write a file.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/base/error.h"

namespace hr::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hr_test_XXXXXX").string();
    HR_CHECK(mkdtemp(tmpl.data()) != nullptr, "mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    if (!std::getenv("HR_KEEP")) std::filesystem::remove_all(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Writes bytes to path exactly (binary, replacing the file) and returns the path.
inline std::string write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  HR_CHECK(out.good(), "cannot write " + path);
  return path;
}

}  // namespace hr::testing
