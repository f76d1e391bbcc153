#include "train/run/new_out_dir.h"

#include <filesystem>

#include "kernels/base/error.h"

namespace fs = std::filesystem;

namespace hr {

void require_new_or_empty_dir(const std::string& dir, const std::string& or_else) {
  const fs::path out(dir);
  std::error_code ec;
  if (!fs::exists(out, ec)) return;
  const std::string choose = ": choose a new or empty --out" + or_else;
  if (!fs::is_directory(out, ec)) throw UsageError(dir + " is a file, not a directory" + choose);
  if (fs::is_empty(out, ec)) return;
  if (fs::exists(out / "config.yaml")) throw UsageError(dir + " already holds a run (config.yaml)" + choose);
  const std::string first = fs::directory_iterator(out)->path().filename().string();
  throw UsageError(dir + " is not empty (it holds '" + first + "')" + choose);
}

}  // namespace hr
