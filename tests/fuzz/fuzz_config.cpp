// The training config: YAML parsing, the tokenizer:/data:/train: validation of run_config, `--set` overrides and the
// dump written to a run directory. The input is the YAML text, then NUL-separated overrides ("train.lr=3e-4").
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "framework/config.h"
#include "kernels/base/error.h"
#include "train/run/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t yaml_end = input.find('\0');
  try {
    hr::Config root = hr::Config::parse(std::string(input.substr(0, yaml_end)), "fuzz.yaml");
    for (size_t begin = yaml_end; begin < input.size();) {
      const size_t end = std::min(input.find('\0', begin + 1), input.size());
      root.apply_override(std::string(input.substr(begin + 1, end - begin - 1)));
      begin = end;
    }
    hr::read_run_config(root, "fuzz");
    root.dump();
  } catch (const hr::Error&) {
  }
  return 0;
}
