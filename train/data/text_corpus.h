// Plain-text corpora for masked-language-model pretraining: which files a corpus value names, and how a file splits
// into documents. UTF-8, one document per block of lines (blocks separated by empty lines) or one per line.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace hr {

// A corpus path value: a file, or a glob ("shards/train-*.txt"); the caller passes each item of a YAML list.
// Returns the files in the order given, each glob's matches sorted (byte order, so no locale changes the stream).
// hr::ConfigError naming `key` and the pattern when a pattern matches nothing or names something not a regular file.
std::vector<std::string> expand_corpus_paths(const std::vector<std::string>& patterns, const std::string& key);

struct CorpusStats {
  int64_t documents = 0;
  int64_t lines = 0;          // text lines read (empty separator lines not counted), skipped ones included
  int64_t skipped_lines = 0;  // invalid UTF-8
  int64_t tokens = 0;         // filled in by whoever tokenises the documents (the token cache)
  std::string rule;           // "blank-line" or "line"
};

// Reads one file as documents: when the file has at least one empty line (nothing but spaces, tabs or '\r'),
// documents are separated by empty lines, a run of them counting as one (rule "blank-line"); otherwise each line is a
// document (rule "line"). Calls doc(text) for each, a multi-line document's lines joined with '\n' ('\r' line ends and
// a leading byte order mark dropped). A line of invalid UTF-8 is reported on `log` as "file:line: ..." and skipped
// (the first 20 of a file, then a count). Streams the file: the rule needs a first pass up to the first empty line
// (all of a "line" file), then one pass reads the documents; only one document is ever held.
// hr::Error naming the path when it cannot be opened or read.
CorpusStats read_documents(const std::string& path, std::ostream& log,
                           const std::function<void(std::string_view)>& doc);

// The same, also handing every byte of the reading pass to `bytes` in file order, chunk by chunk (for a content hash
// and progress that cost no second read).
CorpusStats read_documents(const std::string& path, std::ostream& log, const std::function<void(std::string_view)>& doc,
                           const std::function<void(std::string_view)>& bytes);

}  // namespace hr
