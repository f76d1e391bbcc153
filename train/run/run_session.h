// The first row a training process writes into metrics.jsonl: where and how this stretch of the run trains (host, CPU,
// threads, device, precision, ranks), so that a report can say which machine made the numbers. A resumed run writes
// another one; wall time is the sum of each session's last elapsed_s.
#pragma once

#include <nlohmann/json.hpp>

#include "train/run/run_config.h"

namespace hr {

// {"host", "cpu" (/proc/cpuinfo's model name), "cores", "threads" (OpenMP), "device", "precision", "ranks",
//  "started" (local time, ISO 8601), "resumed"}
nlohmann::json run_session(const TrainOptions& t, int ranks, bool resumed);

}  // namespace hr
