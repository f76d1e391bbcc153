// Reading a file whole that a user names: only a regular file (a config that is /dev/zero, a metrics.jsonl linked to
// /dev/full would be read forever), and no more than a bound set by what the file is.
#pragma once

#include <cstdint>
#include <string>

namespace hr {

// The file's bytes. hr::Error naming the path when it is missing, not a regular file (after symlinks: a device, a
// FIFO, a directory), larger than `max_bytes` (`what` names the kind of file in that message) or unreadable.
std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// The bytes of a file the caller has checked is a regular file; hr::Error naming it when it cannot be read.
std::string read_file_bytes(const std::string& path);

// Whether `path` is a regular file after symlinks; hr::Error naming it when it exists as anything else.
bool regular_file_or_absent(const std::string& path);

}  // namespace hr
