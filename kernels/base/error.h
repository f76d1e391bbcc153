// The project's error types. Errors a user can cause (bad config, bad data, bad checkpoint, misuse of the API) are
// exceptions with a message that names the file, line, key or step; the binaries turn them into an exit code.
// kernels/base/ is below kernels/ and framework/, so both include this without an upward arrow.
#pragma once

#include <stdexcept>
#include <string>

namespace hr {

// A runtime error with a clear message: misuse of the API, bad data, a failing device call.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A configuration error (YAML file or --set override): `headroom` exits with code 2 on these.
struct ConfigError : Error {
  using Error::Error;
};

// A command used the wrong way (flags that do not fit the run, no input, an --out that holds a run): exit code 2 too.
struct UsageError : Error {
  using Error::Error;
};

#define HR_CHECK(cond, msg)                                            \
  do {                                                                 \
    if (!(cond)) throw ::hr::Error(std::string("") + (msg));             \
  } while (0)

}  // namespace hr
