// Paths to the repository's own test inputs: datasets in data/, fixtures in tests/fixtures/. Found through
// HR_SOURCE_ROOT, which meson sets for every test, so a clone tests with nothing beside it.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

namespace hr::testing {

inline std::string repo_path(const std::string& relative) {
  const char* root = std::getenv("HR_SOURCE_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "HR_SOURCE_ROOT is not set (run the tests through meson test)");
  return std::string(root) + "/" + relative;
}
inline std::string data_file(const std::string& relative) { return repo_path("data/" + relative); }
inline std::string fixture(const std::string& name) { return repo_path("tests/fixtures/torch_reference/" + name); }
inline std::string hf_fixture(const std::string& name) { return repo_path("tests/fixtures/hf_bert/" + name); }

}  // namespace hr::testing
