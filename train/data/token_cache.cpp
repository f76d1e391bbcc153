#include "train/data/token_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "framework/atomic_file.h"
#include "kernels/base/error.h"
#include "kernels/math/random.h"
#include "train/data/text_corpus.h"

namespace hr {

namespace {

static_assert(std::endian::native == std::endian::little, "the token cache is written little-endian as in memory");

constexpr char kMagic[8] = {'H', 'R', 'T', 'O', 'K', 'C', 'A', 'C'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedHeader = 64;  // bytes before the per-file entries
constexpr size_t kDataAlign = 64;

// The fixed header's fields, at their byte offsets.
struct Fixed {
  uint32_t version = kVersion, bytes_per_token = 0;  // 8, 12
  uint64_t tokens = 0, documents = 0, vocab_hash = 0, data_offset = 0;  // 16, 24, 32, 40
  uint32_t data_crc = 0, file_count = 0, header_crc = 0;  // 48, 52, 56 (60: reserved)
};

struct FileEntry {
  std::string path;  // absolute
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t content_hash = 0;
  uint8_t rule = 0;  // 0: blank-line, 1: line
};

const char* rule_name(uint8_t rule) { return rule == 0 ? "blank-line" : "line"; }

std::string errno_text() { return std::strerror(errno); }

// A 64-bit hash of a byte stream fed in pieces: 8-byte words chained through mix64. Detects changed content and tells
// corpora apart; not meant to resist an adversary.
class Hasher {
 public:
  void update(std::string_view bytes) {
    length_ += bytes.size();
    size_t i = 0;
    while (i < bytes.size() && fill_ != 0) push_byte(static_cast<uint8_t>(bytes[i++]));
    for (; i + 8 <= bytes.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, bytes.data() + i, 8);
      h_ = math::mix64(h_, word);
    }
    for (; i < bytes.size(); ++i) push_byte(static_cast<uint8_t>(bytes[i]));
  }
  void update_u64(uint64_t v) { update(std::string_view(reinterpret_cast<const char*>(&v), 8)); }
  uint64_t digest() const {
    const uint64_t tail = fill_ ? math::mix64(h_, pending_ | (uint64_t{1} << 63)) : h_;
    return math::mix64(tail, length_);
  }

 private:
  void push_byte(uint8_t b) {
    pending_ |= uint64_t{b} << (8 * fill_);
    if (++fill_ == 8) {
      h_ = math::mix64(h_, pending_);
      pending_ = 0;
      fill_ = 0;
    }
  }
  uint64_t h_ = 0x6A09E667F3BCC908ull, pending_ = 0, length_ = 0;
  int fill_ = 0;
};

// What tokenisation depends on: the vocabulary's tokens in id order, the BasicTokenizer's case handling and the
// tokenizer's rules.
uint64_t vocab_hash(const Tokenizer& tok) {
  Hasher h;
  h.update_u64(kTokenizerRevision);
  for (const std::string& token : tok.vocab().tokens()) {
    h.update(token);
    h.update(std::string_view("\n", 1));
  }
  h.update_u64(static_cast<uint64_t>(tok.basic().lower_case()) |
               static_cast<uint64_t>(tok.basic().strip_accents()) << 1);
  return h.digest();
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string format_mb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

std::string format_count(int64_t n) {
  char buf[32];
  if (n >= 1000000) std::snprintf(buf, sizeof buf, "%.2fM", static_cast<double>(n) / 1e6);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

// The file as it is now: absolute path, size and mtime; hr::Error when it cannot be stat'ed.
FileEntry stat_file(const std::string& path) {
  FileEntry e;
  e.path = std::filesystem::absolute(path).lexically_normal().string();
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error(path + ": cannot stat corpus file: " + errno_text());
  e.size = static_cast<uint64_t>(st.st_size);
  e.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return e;
}

// ---- header (de)serialisation

void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}
template <class T>
void put(std::vector<uint8_t>& out, T v) {
  put(out, &v, sizeof v);
}

std::vector<uint8_t> encode_header(Fixed f, const std::vector<FileEntry>& files) {
  std::vector<uint8_t> out;
  put(out, kMagic, 8);
  for (uint64_t v : {uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}}) {
    put(out, v);  // the fixed fields, filled below
  }
  for (const FileEntry& e : files) {
    put(out, static_cast<uint32_t>(e.path.size()));
    put(out, e.path.data(), e.path.size());
    put(out, e.size);
    put(out, e.mtime_ns);
    put(out, e.content_hash);
    put(out, e.rule);
  }
  out.resize((out.size() + kDataAlign - 1) / kDataAlign * kDataAlign, 0);
  f.data_offset = out.size();
  f.file_count = static_cast<uint32_t>(files.size());
  f.header_crc = 0;
  const auto write_fixed = [&] {
    std::memcpy(out.data() + 8, &f.version, 4);
    std::memcpy(out.data() + 12, &f.bytes_per_token, 4);
    std::memcpy(out.data() + 16, &f.tokens, 8);
    std::memcpy(out.data() + 24, &f.documents, 8);
    std::memcpy(out.data() + 32, &f.vocab_hash, 8);
    std::memcpy(out.data() + 40, &f.data_offset, 8);
    std::memcpy(out.data() + 48, &f.data_crc, 4);
    std::memcpy(out.data() + 52, &f.file_count, 4);
    std::memcpy(out.data() + 56, &f.header_crc, 4);
  };
  write_fixed();
  f.header_crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), out.data(), static_cast<uInt>(out.size())));
  write_fixed();
  return out;
}

uint32_t crc_of(const uint8_t* p, size_t n, uLong crc = crc32(0L, Z_NULL, 0)) {
  while (n > 0) {  // zlib takes uInt lengths
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

// A read-only mapping of a whole file, unmapped unless released.
struct Mapping {
  void* addr = nullptr;
  size_t bytes = 0;
  ~Mapping() {
    if (addr) ::munmap(addr, bytes);
  }
};

// Why an existing cache cannot be used: "stale" (the corpus or vocabulary changed) or "corrupt", and the detail.
struct Rejection {
  std::string kind, detail;
};

template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Maps and checks the cache at `path` against the corpus files as they are now; a rejection when it is unusable.
std::optional<Rejection> try_map(const std::string& path, const std::vector<FileEntry>& now, uint64_t vocab,
                                 int bytes_per_token, Mapping& map, Fixed& f, std::vector<uint8_t>& rules) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Rejection{"unreadable", errno_text()};
  struct stat st{};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const size_t file_bytes = stat_ok ? static_cast<size_t>(st.st_size) : 0;
  if (file_bytes >= kFixedHeader) {
    map.addr = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map.addr == MAP_FAILED) map.addr = nullptr;
    else map.bytes = file_bytes;
  }
  ::close(fd);
  if (!stat_ok) return Rejection{"unreadable", errno_text()};
  if (file_bytes < kFixedHeader) return Rejection{"corrupt", "truncated to " + std::to_string(file_bytes) + " bytes"};
  if (!map.addr) return Rejection{"unreadable", "mmap failed: " + errno_text()};
  const auto* p = static_cast<const uint8_t*>(map.addr);

  if (std::memcmp(p, kMagic, 8) != 0) return Rejection{"corrupt", "bad magic"};
  f.data_offset = get<uint64_t>(p + 40);
  f.header_crc = get<uint32_t>(p + 56);
  if (f.data_offset < kFixedHeader || f.data_offset > file_bytes) return Rejection{"corrupt", "truncated header"};
  {
    std::vector<uint8_t> header(p, p + f.data_offset);
    std::memset(header.data() + 56, 0, 4);
    if (crc_of(header.data(), header.size()) != f.header_crc) return Rejection{"corrupt", "header checksum mismatch"};
  }
  f.version = get<uint32_t>(p + 8);
  if (f.version != kVersion) {
    return Rejection{"stale", "format version " + std::to_string(f.version) + ", this build writes " +
                                  std::to_string(kVersion)};
  }
  f.bytes_per_token = get<uint32_t>(p + 12);
  f.tokens = get<uint64_t>(p + 16);
  f.documents = get<uint64_t>(p + 24);
  f.vocab_hash = get<uint64_t>(p + 32);
  f.data_crc = get<uint32_t>(p + 48);
  f.file_count = get<uint32_t>(p + 52);
  if (f.bytes_per_token != 2 && f.bytes_per_token != 4) return Rejection{"corrupt", "bad token width"};
  // a forged count whose byte size wraps around (to the file's, say) before the size is compared
  if (f.tokens > (UINT64_MAX - f.data_offset) / f.bytes_per_token) {
    return Rejection{"corrupt", "a count of " + std::to_string(f.tokens) + " tokens, more than any file holds"};
  }
  if (file_bytes != f.data_offset + f.tokens * f.bytes_per_token) {
    return Rejection{"corrupt", std::to_string(file_bytes) + " bytes, the header promises " +
                                    std::to_string(f.data_offset + f.tokens * f.bytes_per_token) + " (truncated)"};
  }
  if (f.vocab_hash != vocab || static_cast<int>(f.bytes_per_token) != bytes_per_token) {
    return Rejection{"stale", "tokenised with another vocabulary"};
  }
  if (f.file_count != now.size()) {
    return Rejection{"stale", std::to_string(f.file_count) + " corpus files, now " + std::to_string(now.size())};
  }
  size_t at = kFixedHeader;
  rules.clear();
  for (const FileEntry& e : now) {
    if (at + 4 > f.data_offset) return Rejection{"corrupt", "truncated header"};
    const uint32_t len = get<uint32_t>(p + at);
    at += 4;
    if (at + len + 25 > f.data_offset) return Rejection{"corrupt", "truncated header"};
    const std::string stored(reinterpret_cast<const char*>(p + at), len);
    at += len;
    const uint64_t size = get<uint64_t>(p + at);
    const int64_t mtime = get<int64_t>(p + at + 8);
    rules.push_back(p[at + 24]);
    at += 25;
    if (stored != e.path) return Rejection{"stale", "built for " + stored + ", not " + e.path};
    if (size != e.size) {
      return Rejection{"stale", e.path + " changed size (" + std::to_string(size) + " -> " + std::to_string(e.size) +
                                    " bytes)"};
    }
    if (mtime != e.mtime_ns) return Rejection{"stale", e.path + " was modified (mtime changed)"};
  }
  if (crc_of(p + f.data_offset, f.tokens * f.bytes_per_token) != f.data_crc) {
    return Rejection{"corrupt", "token data checksum mismatch"};
  }
  return std::nullopt;
}

// Removes "<path>.tmp-<pid>" files of builds whose process is gone (killed mid-build).
void remove_dead_temp_files(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(p.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (pid_text.empty() || *end != '\0' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("cannot write token cache " + path + ": " + (w < 0 ? errno_text() : "short write"));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Token ids into the cache file through a 4 MiB buffer, with the count and the CRC-32 of what was written.
class TokenWriter {
 public:
  TokenWriter(int fd, int bytes_per_token, const std::string& path)
      : fd_(fd), bytes_per_token_(bytes_per_token), path_(path), buffer_(size_t{1} << 22) {}

  void push(int32_t id) {
    if (bytes_per_token_ == 2) {
      const auto v = static_cast<uint16_t>(id);
      std::memcpy(buffer_.data() + used_, &v, 2);
    } else {
      const auto v = static_cast<uint32_t>(id);
      std::memcpy(buffer_.data() + used_, &v, 4);
    }
    used_ += static_cast<size_t>(bytes_per_token_);
    ++tokens_;
    if (used_ == buffer_.size()) drain();
  }
  void drain() {
    crc_ = crc_of(buffer_.data(), used_, crc_);
    write_all(fd_, buffer_.data(), used_, path_);
    used_ = 0;
  }
  uint64_t tokens() const { return tokens_; }
  uint32_t crc() const { return static_cast<uint32_t>(crc_); }

 private:
  int fd_, bytes_per_token_;
  const std::string& path_;
  std::vector<uint8_t> buffer_;
  size_t used_ = 0;
  uint64_t tokens_ = 0;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

// A line every 2 s while a corpus is tokenised (documents, tokens, read rate, share of the bytes, time left), and one
// at the end.
class TokenizingProgress {
 public:
  TokenizingProgress(uint64_t total_bytes, std::ostream& log) : total_bytes_(total_bytes), log_(log) {}

  void read(size_t bytes) { bytes_read_ += bytes; }
  void document_done(uint64_t documents, uint64_t tokens) {
    const Clock::time_point now = Clock::now();
    if (now - last_report_ < std::chrono::seconds(2)) return;
    last_report_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double rate = static_cast<double>(bytes_read_) / s;
    const double left = static_cast<double>(total_bytes_ - std::min(bytes_read_, total_bytes_));
    const double eta = rate > 0 ? left / rate : 0;
    log_ << "token cache: " << format_count(static_cast<int64_t>(documents)) << " documents, "
         << format_count(static_cast<int64_t>(tokens)) << " tokens, " << format_mb(rate) << "/s, "
         << static_cast<int>(100.0 * static_cast<double>(bytes_read_) / static_cast<double>(total_bytes_))
         << "%, ETA " << format_seconds(eta) << "\n";
  }
  void finish(uint64_t documents, uint64_t tokens) {
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    log_ << "token cache: " << documents << " documents, " << tokens << " tokens in " << format_seconds(s) << " ("
         << format_mb(static_cast<double>(bytes_read_) / std::max(s, 1e-9)) << "/s)\n";
  }

 private:
  using Clock = std::chrono::steady_clock;
  uint64_t total_bytes_, bytes_read_ = 0;
  std::ostream& log_;
  Clock::time_point start_ = Clock::now(), last_report_ = start_;
};

// The header over the placeholder at the start of the file.
void write_header(int fd, const std::vector<uint8_t>& header, const std::string& path) {
  size_t done = 0;
  while (done < header.size()) {
    const ssize_t w = ::pwrite(fd, header.data() + done, header.size() - done, static_cast<off_t>(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("cannot write token cache " + path + ": " + (w < 0 ? errno_text() : "short write"));
    done += static_cast<size_t>(w);
  }
}

// Tokenises the corpus into `path`: header placeholder, tokens through a buffer, then the real header.
void build(const std::string& path, std::vector<FileEntry>& files, const std::vector<std::string>& inputs,
           const Tokenizer& tok, uint64_t vocab, int bytes_per_token, std::ostream& log) {
  uint64_t total_bytes = 0;
  for (const FileEntry& e : files) total_bytes += e.size;
  log << "token cache: tokenising " << files.size() << (files.size() == 1 ? " file" : " files") << " ("
      << format_mb(static_cast<double>(total_bytes)) << ") into " << path << "\n";

  write_file_atomically_fd(path, [&](int fd) {
    Fixed f;
    f.bytes_per_token = static_cast<uint32_t>(bytes_per_token);
    f.vocab_hash = vocab;
    const size_t header_bytes = encode_header(f, files).size();  // its size does not depend on the values
    if (::lseek(fd, static_cast<off_t>(header_bytes), SEEK_SET) < 0) {
      throw Error("cannot write token cache " + path + ": seek failed: " + errno_text());
    }
    TokenWriter writer(fd, bytes_per_token, path);
    TokenizingProgress progress(total_bytes, log);
    const int32_t sep = tok.vocab().sep_id();
    for (size_t i = 0; i < files.size(); ++i) {
      Hasher content;
      const CorpusStats stats = read_documents(
          inputs[i], log,
          [&](std::string_view text) {
            if (f.documents > 0) writer.push(sep);
            for (int32_t id : tok.encode(text).ids) writer.push(id);
            ++f.documents;
            progress.document_done(f.documents, writer.tokens());
          },
          [&](std::string_view bytes) {
            content.update(bytes);
            progress.read(bytes.size());
          });
      files[i].content_hash = content.digest();
      files[i].rule = stats.rule == "blank-line" ? 0 : 1;
    }
    writer.drain();
    f.tokens = writer.tokens();
    f.data_crc = writer.crc();
    write_header(fd, encode_header(f, files), path);
    progress.finish(f.documents, f.tokens);
  });
}

// Where the cache lives: `cache_dir`, else beside the first file, else the user's cache directory.
std::filesystem::path cache_directory(const std::string& cache_dir, const std::string& first_file) {
  std::filesystem::path dir;
  if (!cache_dir.empty()) {
    dir = cache_dir;
  } else {
    dir = std::filesystem::absolute(first_file).parent_path();
    if (::access(dir.c_str(), W_OK) != 0) {
      const char* xdg = std::getenv("XDG_CACHE_HOME");
      const char* home = std::getenv("HOME");
      if (xdg && *xdg) dir = std::filesystem::path(xdg) / "headroom";
      else if (home && *home) dir = std::filesystem::path(home) / ".cache" / "headroom";
      else throw Error(dir.string() + " is not writable and neither $XDG_CACHE_HOME nor $HOME is set: "
                       "give the token cache a directory");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create the token cache directory " + dir.string() + ": " + ec.message());
  return dir;
}

}  // namespace

TokenCache TokenCache::open(const std::vector<std::string>& files, const Tokenizer& tok, const std::string& cache_dir,
                            std::ostream& log) {
  HR_CHECK(!files.empty(), "TokenCache::open: no corpus files");
  std::vector<FileEntry> entries;
  for (const std::string& file : files) entries.push_back(stat_file(file));
  const uint64_t vocab = vocab_hash(tok);
  const int bytes_per_token = tok.vocab().size() <= 65536 ? 2 : 4;

  Hasher name;
  for (const FileEntry& e : entries) {
    name.update(e.path);
    name.update(std::string_view("\0", 1));
  }
  name.update_u64(vocab);
  const std::string path = (cache_directory(cache_dir, files.front()) /
                            (std::filesystem::path(files.front()).filename().string() + "." + hex16(name.digest()) +
                             ".hrtok"))
                               .string();

  TokenCache cache;
  cache.path_ = path;
  for (int attempt = 0; attempt < 2; ++attempt) {
    Mapping map;
    Fixed f;
    std::vector<uint8_t> rules;
    std::optional<Rejection> rejected;
    if (std::filesystem::exists(path)) {
      rejected = try_map(path, entries, vocab, bytes_per_token, map, f, rules);
    } else {
      rejected = Rejection{"absent", ""};
    }
    if (!rejected) {
      cache.map_ = std::exchange(map.addr, nullptr);
      cache.map_bytes_ = map.bytes;
      cache.data_ = static_cast<const uint8_t*>(cache.map_) + f.data_offset;
      cache.bytes_per_token_ = static_cast<int>(f.bytes_per_token);
      cache.tokens_ = static_cast<int64_t>(f.tokens);
      cache.documents_ = static_cast<int64_t>(f.documents);
      for (uint8_t r : rules) cache.rules_.push_back(rule_name(r));
      return cache;
    }
    // a cache just built that does not check out: the file system or a concurrent writer is at fault, not the corpus
    HR_CHECK(attempt == 0, "token cache " + path + " does not check out right after it was built: " + rejected->kind +
                               " (" + rejected->detail + ")");
    if (rejected->kind != "absent") {
      log << "token cache " << path << " is " << rejected->kind << " (" << rejected->detail << "), rebuilding\n";
    }
    remove_dead_temp_files(path);
    for (FileEntry& e : entries) e = stat_file(e.path);
    build(path, entries, files, tok, vocab, bytes_per_token, log);
    cache.built_ = true;
  }
  throw Error("unreachable");
}

TokenCache::TokenCache(TokenCache&& other) noexcept { *this = std::move(other); }

TokenCache& TokenCache::operator=(TokenCache&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    bytes_per_token_ = other.bytes_per_token_;
    tokens_ = std::exchange(other.tokens_, 0);
    documents_ = std::exchange(other.documents_, 0);
    rules_ = std::move(other.rules_);
    built_ = other.built_;
  }
  return *this;
}

TokenCache::~TokenCache() { unmap(); }

void TokenCache::unmap() {
  if (map_) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
}

int32_t TokenCache::at(int64_t i) const {
  HR_CHECK(i >= 0 && i < tokens_, "token cache " + path_ + ": index " + std::to_string(i) + " out of range [0, " +
                                      std::to_string(tokens_) + ")");
  if (bytes_per_token_ == 2) return get<uint16_t>(data_ + 2 * i);
  return static_cast<int32_t>(get<uint32_t>(data_ + 4 * i));
}

void TokenCache::copy(int64_t first, int64_t n, int32_t* out) const {
  HR_CHECK(first >= 0 && n >= 0 && first + n <= tokens_, "token cache " + path_ + ": range [" + std::to_string(first) +
                                                             ", " + std::to_string(first + n) + ") outside [0, " +
                                                             std::to_string(tokens_) + ")");
  if (bytes_per_token_ == 2) {
    const uint8_t* p = data_ + 2 * first;
    for (int64_t i = 0; i < n; ++i) out[i] = get<uint16_t>(p + 2 * i);
  } else {
    std::memcpy(out, data_ + 4 * first, static_cast<size_t>(n) * 4);
  }
}

std::string TokenCache::rules() const {
  if (rules_.empty()) return "";
  for (const std::string& r : rules_) {
    if (r != rules_.front()) return "mixed";
  }
  return rules_.front();
}

int64_t packed_rows(int64_t stream_tokens, int64_t max_seq_len) {
  if (max_seq_len < 3 || stream_tokens <= 0) return 0;
  return stream_tokens / (max_seq_len - 2);
}

void packed_row(const TokenCache& cache, int64_t row, int64_t max_seq_len, int32_t cls_id, int32_t sep_id,
                int32_t* out) {
  const int64_t rows = packed_rows(cache.size(), max_seq_len);
  HR_CHECK(row >= 0 && row < rows, "packed_row: row " + std::to_string(row) + " out of range [0, " +
                                       std::to_string(rows) + ") at max_seq_len " + std::to_string(max_seq_len));
  const int64_t width = max_seq_len - 2;
  out[0] = cls_id;
  cache.copy(row * width, width, out + 1);
  out[max_seq_len - 1] = sep_id;
}

}  // namespace hr
