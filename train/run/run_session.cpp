#include "train/run/run_session.h"

#include <omp.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace hr {

namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      const size_t at = line.find_first_not_of(" \t", line.find(':') + 1);
      return at == std::string::npos ? "" : line.substr(at);
    }
  return "";  // not Linux on x86, or no /proc
}

}  // namespace

nlohmann::json run_session(const TrainOptions& t, int ranks, bool resumed) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  const std::time_t now = std::time(nullptr);
  char started[32];
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
  return {{"host", host},
          {"cpu", cpu_model()},
          {"cores", std::thread::hardware_concurrency()},
          {"threads", omp_get_max_threads()},
          {"device", device_name(t.device)},
          {"precision", precision_name(t.precision)},
          {"ranks", ranks},
          {"started", started},
          {"resumed", resumed}};
}

}  // namespace hr
