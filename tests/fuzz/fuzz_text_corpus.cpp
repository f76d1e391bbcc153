// A plain-text pretraining corpus file as `read_documents` reads it (train/data/text_corpus.h): the document rule
// (blank-line or line), the byte order mark, '\r' line ends, lines of invalid UTF-8 skipped; each document is then
// tokenized, as the token cache does. The target checks what the reader promises: every document non-empty and valid
// UTF-8, the count it reports, and the bytes it hands on for the content hash equal to the file, in order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_input_file.h"
#include "tests/fuzz/fuzz_vocab.h"
#include "train/data/text_corpus.h"
#include "train/tokenizer/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static hr::fuzz::InputFile file(".txt");
  const std::string& path = file.write(data, size);
  std::ostringstream log;
  std::string seen;
  int64_t documents = 0;
  try {
    const hr::CorpusStats stats = hr::read_documents(
        path, log,
        [&](std::string_view doc) {
          if (doc.empty() || !hr::utf8::is_valid(doc)) std::abort();
          ++documents;
          hr::fuzz::uncased_tokenizer().encode(std::string(doc));
        },
        [&](std::string_view bytes) { seen.append(bytes); });
    if (stats.documents != documents || stats.skipped_lines > stats.lines) std::abort();
    if (seen != std::string_view(reinterpret_cast<const char*>(data), size)) std::abort();
  } catch (const hr::Error&) {
  }
  return 0;
}
