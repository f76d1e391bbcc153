// The loaders under test read files, so each fuzz input is written to one scratch file per process first, in memory
// (/dev/shm) where there is one: a disk file costs more than most parses.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace hr::fuzz {

class InputFile {
 public:
  explicit InputFile(const std::string& suffix)
      : path_(std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + "/hr-fuzz-" +
              std::to_string(::getpid()) + suffix) {}
  ~InputFile() { std::remove(path_.c_str()); }

  // Replaces the file's contents with the input and returns its path.
  const std::string& write(const uint8_t* data, size_t size) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace hr::fuzz
