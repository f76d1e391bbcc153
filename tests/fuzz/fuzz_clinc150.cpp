// CLINC150's JSON: the splits, [text, intent] pairs, the oos splits, and the located-JSON line lookup.
#include <cstddef>
#include <cstdint>

#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_input_file.h"
#include "train/data/classification_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hr::fuzz::InputFile file(".json");
  hr::ClassificationDataOptions options;
  options.format = hr::DataFormat::clinc150;
  options.path = file.write(data, size);
  options.include_oos = true;
  try {
    hr::load_classification_data(options);
  } catch (const hr::Error&) {
  }
  return 0;
}
