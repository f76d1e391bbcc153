// Paths into ../shared (datasets and PyTorch fixtures), found through HR_SHARED, which meson sets for every test.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

namespace hr::testing {

inline std::string shared_path(const std::string& relative) {
  const char* root = std::getenv("HR_SHARED");
  REQUIRE_MESSAGE(root != nullptr, "HR_SHARED is not set (run the tests through meson test)");
  return std::string(root) + "/" + relative;
}
inline std::string shared_data(const std::string& relative) { return shared_path("data/" + relative); }
inline std::string fixture(const std::string& name) { return shared_path("fixtures/torch_reference/" + name); }

}  // namespace hr::testing
