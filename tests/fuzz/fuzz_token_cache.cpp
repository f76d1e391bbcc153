// The token cache file (train/data/token_cache.h) as a damaged or hand-made file presents it: the input replaces the
// cache of a fixed two-document corpus, with its two CRC-32s recomputed over the input first
// (token_cache_checksums.h), so that the fuzzer reaches the checks behind them. TokenCache::open must reject the file
// and rebuild, or accept a stream it can read from end to end; either way without reading outside the file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/base/error.h"
#include "tests/fuzz/fuzz_vocab.h"
#include "tests/fuzz/token_cache_checksums.h"
#include "train/data/token_cache.h"

namespace {

// A fixed path and mtime, so that the committed seed (a cache built here) matches its corpus on any machine.
struct Corpus {
  std::string dir, file;
  Corpus() {
    dir = std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + "/hr-fuzz-token-cache";
    std::filesystem::create_directories(dir);
    file = dir + "/corpus.txt";
    std::ofstream(file, std::ios::binary | std::ios::trunc) << "The cache holds token ids.\n\nA second document.\n";
    const struct timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
    ::utimensat(AT_FDCWD, file.c_str(), times, 0);
  }
  hr::TokenCache open() const {
    std::ostringstream log;
    return hr::TokenCache::open({file}, hr::fuzz::uncased_tokenizer(), dir, log);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Corpus corpus;
  static const std::string cache_path = corpus.open().path();
  std::string bytes(reinterpret_cast<const char*>(data), size);
  hr::fuzz::forge_token_cache_checksums(bytes);
  std::ofstream(cache_path, std::ios::binary | std::ios::trunc) << bytes;
  try {
    const hr::TokenCache cache = corpus.open();
    if (cache.size() < 0) {  // a token count past int64 taken as it stands
      std::fprintf(stderr, "token cache accepted with %lld tokens\n", static_cast<long long>(cache.size()));
      std::abort();
    }
    if (cache.size() > 0) {  // read both ends of the stream and a window at the end: all inside the mapping
      cache.at(0);
      const int64_t n = std::min<int64_t>(cache.size(), 4096);
      std::vector<int32_t> tail(static_cast<size_t>(n));
      cache.copy(cache.size() - n, n, tail.data());
    }
  } catch (const hr::Error&) {
  }
  return 0;
}
