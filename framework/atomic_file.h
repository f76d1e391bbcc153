// Replacing a file so that readers (and a crash at any moment) see either the old content or the complete new one,
// never a half-written file: checkpoints and reports are written this way.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace hr {

// Calls `write` with a stream onto "<path>.tmp-<pid>", then flushes, fsyncs the file, renames it over `path` and
// fsyncs the directory. On any failure (including an exception from `write`) the temp file is removed, the previous
// file at `path` is left untouched, and hr::Error naming the path and the cause is thrown (an exception from `write`
// itself is rethrown unchanged).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

// The same with the whole content at hand.
void write_text_atomically(const std::string& path, const std::string& text);

// The same for writers that need the file descriptor, to seek or pwrite (a header whose checksum is known last):
// `write` gets the temp file's descriptor, open for writing, and must not close it.
void write_file_atomically_fd(const std::string& path, const std::function<void(int fd)>& write);

}  // namespace hr
