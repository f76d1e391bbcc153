// CSV and TSV (the first byte picks which): RFC 4180 quoting, the header row, the text/label columns.
#include <cstddef>
#include <cstdint>

#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_input_file.h"
#include "train/data/classification_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static hr::fuzz::InputFile file(".csv");
  hr::ClassificationDataOptions options;
  options.format = data[0] & 1 ? hr::DataFormat::tsv : hr::DataFormat::csv;
  options.path = file.write(data + 1, size - 1);
  try {
    hr::load_classification_data(options);
  } catch (const hr::Error&) {
  }
  return 0;
}
