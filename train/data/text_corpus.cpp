#include "train/data/text_corpus.h"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "kernels/base/error.h"
#include "train/data/data_issue.h"
#include "train/data/utf8_codepoints.h"

namespace hr {

namespace {

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

void check_regular(const std::string& path, const std::string& pattern, const std::string& key) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw ConfigError(key + ": no such file '" + pattern + "'");
  if (!std::filesystem::is_regular_file(status)) {
    throw ConfigError(key + ": '" + path + "' is not a regular file" +
                      (path == pattern ? std::string() : " (matched by '" + pattern + "')"));
  }
}

// The lines of a file, read in 1 MiB chunks; a line's view lives until the next call. Every chunk goes to `bytes`.
class LineReader {
 public:
  LineReader(const std::string& path, const std::function<void(std::string_view)>* bytes)
      : path_(path), bytes_(bytes), file_(std::fopen(path.c_str(), "rb"), &std::fclose), chunk_(1 << 20) {
    if (!file_) throw Error(path + ": cannot open for reading: " + std::strerror(errno));
  }

  // The next line without its '\n' (and '\r'); false at the end of the file.
  bool next(std::string_view& line) {
    if (carry_used_) carry_.clear(), carry_used_ = false;
    for (;;) {
      const char* begin = chunk_.data() + pos_;
      const char* newline = static_cast<const char*>(std::memchr(begin, '\n', end_ - pos_));
      if (newline) {
        const std::string_view piece(begin, static_cast<size_t>(newline - begin));
        pos_ += piece.size() + 1;
        if (carry_.empty()) return emit(piece, line);
        carry_.append(piece);
        return emit_carry(line);
      }
      carry_.append(begin, end_ - pos_);  // a line that goes on in the next chunk
      if (!fill()) return carry_.empty() ? false : emit_carry(line);  // a last line without '\n'
    }
  }

 private:
  bool fill() {
    pos_ = end_ = 0;
    const size_t n = std::fread(chunk_.data(), 1, chunk_.size(), file_.get());
    if (std::ferror(file_.get())) throw Error(path_ + ": read failed: " + std::strerror(errno));
    if (n == 0) return false;
    if (bytes_) (*bytes_)(std::string_view(chunk_.data(), n));
    end_ = n;
    return true;
  }
  bool emit(std::string_view text, std::string_view& line) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    line = text;
    return true;
  }
  bool emit_carry(std::string_view& line) {
    carry_used_ = true;  // the view points into carry_: cleared on the next call
    return emit(carry_, line);
  }

  std::string path_;
  const std::function<void(std::string_view)>* bytes_;
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
  std::vector<char> chunk_;
  size_t pos_ = 0, end_ = 0;
  std::string carry_;
  bool carry_used_ = false;
};

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r\f\v") == std::string_view::npos; }

constexpr int64_t kMaxReportedLines = 20;

}  // namespace

std::vector<std::string> expand_corpus_paths(const std::vector<std::string>& patterns, const std::string& key) {
  if (patterns.empty()) throw ConfigError(key + ": no corpus file given");
  std::vector<std::string> files;
  for (const std::string& pattern : patterns) {
    if (pattern.empty()) throw ConfigError(key + ": empty path");
    if (!has_glob_chars(pattern)) {
      check_regular(pattern, pattern, key);
      files.push_back(pattern);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
    ::globfree(&g);
    if (rc == GLOB_NOMATCH || (rc == 0 && matches.empty())) {
      throw ConfigError(key + ": no file matches '" + pattern + "'");
    }
    if (rc != 0) throw ConfigError(key + ": cannot expand '" + pattern + "' (glob error " + std::to_string(rc) + ")");
    std::sort(matches.begin(), matches.end());
    for (const std::string& m : matches) check_regular(m, pattern, key);
    files.insert(files.end(), matches.begin(), matches.end());
  }
  return files;
}

CorpusStats read_documents(const std::string& path, std::ostream& log,
                           const std::function<void(std::string_view)>& doc) {
  return read_documents(path, log, doc, nullptr);
}

CorpusStats read_documents(const std::string& path, std::ostream& log, const std::function<void(std::string_view)>& doc,
                           const std::function<void(std::string_view)>& bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  HR_CHECK(std::filesystem::exists(status), path + ": no such file");
  HR_CHECK(std::filesystem::is_regular_file(status), path + ": not a regular file");

  CorpusStats stats;
  bool blank_rule = false;
  {
    LineReader scan(path, nullptr);
    std::string_view line;
    while (!blank_rule && scan.next(line)) blank_rule = is_blank(line);
  }
  stats.rule = blank_rule ? "blank-line" : "line";

  LineReader reader(path, bytes ? &bytes : nullptr);
  std::string text;  // the document being gathered (blank-line rule)
  const auto flush = [&] {
    if (text.empty()) return;
    ++stats.documents;
    doc(text);
    text.clear();
  };
  std::string_view line;
  int64_t line_no = 0;
  while (reader.next(line)) {
    ++line_no;
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (is_blank(line)) {
      flush();
      continue;
    }
    ++stats.lines;
    if (!is_valid_utf8(line)) {
      if (++stats.skipped_lines <= kMaxReportedLines) {
        log << DataIssue{path + ":" + std::to_string(line_no), "invalid UTF-8, line skipped"}.message() << "\n";
      }
      continue;
    }
    if (blank_rule) {
      if (!text.empty()) text += '\n';
      text.append(line);
    } else {
      ++stats.documents;
      doc(line);
    }
  }
  flush();
  if (stats.skipped_lines > kMaxReportedLines) {
    log << path << ": " << stats.skipped_lines << " lines of invalid UTF-8 skipped in all ("
        << stats.skipped_lines - kMaxReportedLines << " more than reported)\n";
  }
  return stats;
}

}  // namespace hr
