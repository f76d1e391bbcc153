// One writer per run directory: `train` (and `train --resume`) holds an exclusive flock on RUN/.lock for as long as it
// runs, and a second process that would write the same directory is refused, naming the pid that holds it. The kernel
// drops the lock when its holder dies (kill -9 included), so a stale lock file never blocks a resume.
#pragma once

#include <string>

namespace hr {

class RunDirLock {
 public:
  // Creates `dir` when needed and takes the lock; UsageError when another process holds it.
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace hr
