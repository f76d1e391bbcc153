// The message of a thrown error, which tests read to check the file, line and key it names.
#pragma once

#include <string>

#include "kernels/base/error.h"

namespace hr::testing {

// The message of the E (hr::Error by default) that `f` throws; "" when it throws none.
template <class E = Error, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace hr::testing
