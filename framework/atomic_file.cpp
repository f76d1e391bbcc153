#include "framework/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <streambuf>

#include "kernels/base/error.h"

namespace hr {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// An output streambuf on a POSIX file descriptor, so the file can be fsynced; remembers the first write error.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (p < pptr()) {
      ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (error_ == 0) error_ = n < 0 ? errno : EIO;
        return false;
      }
      p += n;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buffer_;
};

// Removes the temp file (and closes its descriptor) unless the rename went through.
struct TempFileGuard {
  std::string path;
  int fd = -1;
  bool renamed = false;
  ~TempFileGuard() {
    if (fd >= 0) ::close(fd);
    if (!renamed) ::unlink(path.c_str());
  }
};

void fsync_directory_of(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open directory " + dir.string() + " to sync " + path + ": " + errno_text(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL); the rename itself has happened then.
  if (rc != 0 && err != EINVAL) throw Error("cannot sync directory " + dir.string() + " after writing " + path + ": " +
                                            errno_text(err));
}

}  // namespace

void write_file_atomically_fd(const std::string& path, const std::function<void(int fd)>& write) {
  TempFileGuard temp{path + ".tmp-" + std::to_string(::getpid())};
  temp.fd = ::open(temp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (temp.fd < 0) throw Error("cannot write " + path + ": cannot create " + temp.path + ": " + errno_text(errno));
  write(temp.fd);
  if (::fsync(temp.fd) != 0) throw Error("cannot write " + path + ": fsync failed: " + errno_text(errno));
  int fd = temp.fd;
  temp.fd = -1;
  if (::close(fd) != 0) throw Error("cannot write " + path + ": close failed: " + errno_text(errno));
  if (::rename(temp.path.c_str(), path.c_str()) != 0) {
    throw Error("cannot write " + path + ": rename from " + temp.path + " failed: " + errno_text(errno));
  }
  temp.renamed = true;
  fsync_directory_of(path);
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  write_file_atomically_fd(path, [&](int fd) {
    FdStreamBuf buf(fd);
    std::ostream out(&buf);
    write(out);
    out.flush();
    if (!out) {
      throw Error("cannot write " + path + ": " +
                  (buf.error() ? errno_text(buf.error()) : "stream error while writing"));
    }
  });
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](std::ostream& f) { f << text; });
}

}  // namespace hr
