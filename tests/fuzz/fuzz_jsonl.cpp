// JSON Lines, read line by line as predict reads its input: UTF-8 check, JSON parse, "text" or "input_ids", "label"
// (string or integer); each text that loads is then tokenized, as predict does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_input_file.h"
#include "tests/fuzz/fuzz_vocab.h"
#include "train/data/classification_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hr::fuzz::InputFile file(".jsonl");
  hr::ClassificationDataOptions options;
  options.format = hr::DataFormat::jsonl;
  options.path = file.write(data, size);
  try {
    for (const hr::TextExample& example : hr::load_classification_data(options).examples)
      hr::fuzz::uncased_tokenizer().encode(example.text);
  } catch (const hr::Error&) {
  }
  return 0;
}
