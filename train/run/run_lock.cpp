#include "train/run/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "kernels/base/error.h"

namespace hr {

RunDirLock::RunDirLock(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw Error("cannot lock " + path + ": " + std::strerror(err));
    throw UsageError(dir + " is in use by another headroom process" +
                     (n > 0 ? " (pid " + std::string(pid, static_cast<size_t>(n)) + ")" : std::string()) +
                     ": one process at a time trains a run directory");
  }
  // the holder's pid, for the message a second writer gets
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()))
    throw Error("cannot write " + path + ": " + std::strerror(errno));
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
}

}  // namespace hr
