// A corpus tokenised once and kept on disk, memory-mapped: the token stream masked-language-model pretraining packs
// into rows. Memory does not grow with the corpus: building streams documents and writes tokens through a buffer,
// opening maps the file.
//
// The stream: the token ids of all documents of all files in order, one [SEP] between documents (as HF run_mlm's
// group_texts concatenation with the separator between documents), none after the last.
//
// The file (little-endian): a fixed header (magic "HRTOKCAC", version, bytes per token (2: uint16 when the vocabulary
// has at most 65536 tokens, else 4: uint32), token count, document count, vocabulary hash, CRC-32 of the token data,
// the offset of the token data, number of corpus files, CRC-32 of the header), then per corpus file its path, size,
// mtime, a 64-bit hash of its content and its document rule, then the tokens from a 64-byte aligned offset.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "train/tokenizer/tokenizer.h"

namespace hr {

class TokenCache {
 public:
  // Opens the cache for `files` tokenised by `tok` in `cache_dir` (empty: beside the first file; if that directory is
  // not writable, $XDG_CACHE_HOME/headroom or ~/.cache/headroom), building it when absent, and rebuilding it with a
  // one-line note on `log` when stale (vocabulary hash, a file's path, size or mtime differ) or corrupt (bad magic,
  // truncated, checksum mismatch). The file name derives from a hash of the file list and the vocabulary (tokens and
  // lower-casing), so different corpora, or one corpus under two vocabularies, never collide. Written atomically (temp
  // file + rename), so a killed build leaves no half cache. While tokenising, progress on `log` at most every ~2 s.
  static TokenCache open(const std::vector<std::string>& files, const Tokenizer& tok, const std::string& cache_dir,
                         std::ostream& log);

  TokenCache(TokenCache&& other) noexcept;
  TokenCache& operator=(TokenCache&& other) noexcept;
  TokenCache(const TokenCache&) = delete;
  TokenCache& operator=(const TokenCache&) = delete;
  ~TokenCache();

  int64_t size() const { return tokens_; }  // tokens in the stream
  int32_t at(int64_t i) const;              // hr::Error when out of range
  void copy(int64_t first, int64_t n, int32_t* out) const;  // out (n,) = stream[first, first + n)
  int64_t documents() const { return documents_; }
  const std::string& path() const { return path_; }  // the cache file
  std::string rules() const;  // "blank-line" / "line" / "mixed" over the files, for the log
  bool built() const { return built_; }  // this open tokenised the corpus (it found no usable cache)
  int bytes_per_token() const { return bytes_per_token_; }  // 2 (uint16) or 4 (uint32)

 private:
  TokenCache() = default;
  void unmap();

  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint8_t* data_ = nullptr;  // the token data inside the mapping
  int bytes_per_token_ = 2;
  int64_t tokens_ = 0, documents_ = 0;
  std::vector<std::string> rules_;  // per file
  bool built_ = false;
};

// HF run_mlm without line_by_line: the stream cut into rows of max_seq_len - 2 tokens, each row [CLS] ... [SEP]; the
// remainder that does not fill a row is dropped. 0 when the stream packs to no full row (the caller errors).
int64_t packed_rows(int64_t stream_tokens, int64_t max_seq_len);
// out (max_seq_len,) = [CLS] stream[row (max_seq_len - 2), (row + 1) (max_seq_len - 2)) [SEP]
void packed_row(const TokenCache& cache, int64_t row, int64_t max_seq_len, int32_t cls_id, int32_t sep_id,
                int32_t* out);

}  // namespace hr
