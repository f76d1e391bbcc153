// `headroom allocate CONFIG`: lets L0 gates size every layer, then checks the sizes against uniform models.
//   search:   CONFIG with every layer widened to --wide-heads heads and L0 gates on every layer, seed 0, in OUT/search;
//             with --search-from dense (default) the gates are fine-tuned from the wide model trained without them
//             (OUT/search-dense), with scratch they train from the first step
//   allocate: each layer keeps the heads its gates leave open (the rule of `headroom prune --by gates`, at least one),
//             or the heads --allocation gives (no search); OUT/allocated.yaml is CONFIG with those per-layer heads and
//             no gates; head_dim by --match: params: one head_dim for all layers bringing the attention width (so the
//             attention parameters) back to the uniform CONFIG's; layer: each layer keeps its own width (8 heads of
//             32 -> 4 heads of 64); none: the search model's head_dim (with --allocation, CONFIG's)
//   compare:  allocated.yaml, CONFIG itself ("uniform") and optional uniform baselines (--baselines 4,8: heads with
//             head_dim = d_model / heads) from scratch for seeds 0..N-1 in OUT/runs/<name>-s<seed>
//   report:   OUT/results.csv, results.md and metric_vs_parameters.png (mean ± sd over seeds)
// Started again with the same arguments, finished runs are reused and an interrupted one resumes (as `sweep`);
// --remeasure times the finished runs again, back to back, for the table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/tools/measured_run.h"

namespace hr {

struct AllocateArgs {
  std::string config;
  int64_t wide_heads = 16;
  int64_t wide_head_dim = 0;  // 0: each layer group's own head_dim
  float l0_lambda = -1.f;     // < 0: the config's gates.lambda, else the gates' default
  std::string search_from = "dense";  // dense: gates fine-tuned from the wide model trained without them | scratch
  std::string match = "params";     // params | layer | none
  std::vector<int64_t> allocation;  // heads per layer, given: no search
  std::vector<int64_t> baselines;
  int64_t seeds = 3;
  std::vector<std::string> overrides;
  std::string out_dir;     // default allocations/<config name>
  bool remeasure = false;  // time every finished compare run again, back to back
};

int allocate_command(const AllocateArgs& args);

// The head_dim d that makes sum_l heads_l * d closest to `width` (the uniform model's sum_l heads_l * head_dim_l), at
// least 1. Every layer's attention parameters are affine in its width heads * head_dim with the same slope (4 d_model
// + 3), so matching the total width matches the attention parameters up to this rounding.
int64_t matched_head_dim(const std::vector<int64_t>& heads, int64_t width);

// One finished compare run, as stored in its result.json.
struct AllocateResult : RunMeasurement {
  std::string name;            // allocated | uniform | heads<N>
  std::vector<int64_t> heads;  // per layer
  int64_t seed = 0;
  double flops_per_token = 0;  // attention + feed-forward of all layers at T = model.max_len
};

// results.csv, results.md and metric_vs_parameters.png in `dir`; rows in the order the names first appear.
void write_allocate_report(const std::string& dir, const std::vector<AllocateResult>& results);

}  // namespace hr
