// A training run's progress on the terminal: a bar redrawn in place on a TTY, a line every log step otherwise, and
// messages (evaluations, stops) that interrupt either. Quiet runs print messages only; a data-parallel rank other than
// 0 prints nothing.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hr {

class Progress {
 public:
  // silent: a data-parallel rank other than 0 prints nothing
  Progress(int64_t total, bool quiet, bool silent = false)
      : total_(total), tty_(!quiet && !silent && isatty(fileno(stdout))), quiet_(quiet || silent), silent_(silent) {}
  void update(int64_t step, float loss, float lr, double tokens_per_s, double eta_s, bool log_line) {
    if (tty_) {
      const int width = 30;
      const int filled =
          static_cast<int>(width * static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, total_)));
      std::printf("\r[%s%s] %lld/%lld loss %.4f lr %.2e %.0f tok/s ETA %s   ", std::string(filled, '#').c_str(),
                  std::string(width - filled, '.').c_str(), static_cast<long long>(step),
                  static_cast<long long>(total_), loss, lr, tokens_per_s, eta(eta_s).c_str());
      std::fflush(stdout);
    } else if (log_line && !quiet_) {
      std::printf("step %lld/%lld loss %.4f lr %.3e %.0f tok/s ETA %s\n", static_cast<long long>(step),
                  static_cast<long long>(total_), loss, lr, tokens_per_s, eta(eta_s).c_str());
      std::fflush(stdout);
    }
  }
  void message(const std::string& m) {
    if (silent_) return;
    if (tty_) std::printf("\r%-100s\n", m.c_str());
    else std::printf("%s\n", m.c_str());
    std::fflush(stdout);
  }

 private:
  static std::string eta(double s) {
    char buf[32];
    const int t = static_cast<int>(s);
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, (t / 60) % 60, t % 60);
    return buf;
  }
  int64_t total_;
  bool tty_, quiet_, silent_;
};

}  // namespace hr
