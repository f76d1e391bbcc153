// The directory a command fills with new output (`import-hf --out`, `prune --out`, `export-hf --out`): new or empty,
// so that no file a user keeps there, and no run, is overwritten or mixed with what the command writes.
#pragma once

#include <string>

namespace hr {

// Returns when `dir` does not exist or is an empty directory; otherwise a UsageError (exit 2) naming it and what it
// is: a file, a run (config.yaml), or a directory holding something (its first entry). `or_else` ends the message
// with another way out (export-hf's ", or add --force ...").
void require_new_or_empty_dir(const std::string& dir, const std::string& or_else = "");

}  // namespace hr
