// `headroom heads --roles`: what each attention head looks at (Clark et al. 2019, "What does BERT look at?"). Per
// layer and head, averaged over the real (unpadded) tokens of a data split or a text file: the weight a token puts
// on the previous token, the next token, itself, [CLS] and [SEP], and the entropy of its weights (nats). A table, a
// heatmap PNG per statistic, and, for a gated model, which heads the L0 gates keep, by role.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "train/tools/heads_report.h"

namespace hr {

enum class HeadRole : uint8_t { Prev, Next, Self, Cls, Sep };
inline constexpr std::array<const char*, 5> kHeadRoleNames = {"prev", "next", "self", "cls", "sep"};

struct RoleStats {
  std::array<double, 5> attention{};  // by HeadRole: the average weight on that token
  double entropy = 0;                 // the average entropy of a token's weights over the real keys, in nats
};

// Sums the statistics batch by batch; averages() divides each by the tokens it was measured on (a query has a
// previous token unless it is the first, a next one unless it is the last real token).
class HeadRoleAccumulator {
 public:
  HeadRoleAccumulator(std::vector<int64_t> heads_per_layer, int32_t pad_id, int32_t cls_id, int32_t sep_id);
  // probs: (B, H, T, T) attention weights of `layer` (query rows, key columns); ids: (B, T) the batch's token ids.
  void add(size_t layer, const std::vector<float>& probs, const std::vector<int32_t>& ids, int64_t B, int64_t T);
  std::vector<std::vector<RoleStats>> averages() const;  // [layer][head]
  int64_t tokens() const { return tokens_; }

 private:
  struct Sums {
    std::array<double, 5> attention{};
    double entropy = 0;
  };
  std::vector<std::vector<Sums>> sums_;
  std::vector<int64_t> queries_, with_prev_, with_next_;  // per layer
  int32_t pad_, cls_, sep_;
  size_t counting_layer_ = 0;  // the first layer with heads
  int64_t tokens_ = 0;
};

// The role whose average weight is at least `threshold` (the largest if several), or "broad" (entropy at least
// 0.8 of log(mean tokens)) or "mixed" otherwise.
std::string dominant_role(const RoleStats& s, double mean_tokens, double threshold = 0.5);

struct RolesArgs {
  bool requested = false;  // heads --roles
  std::string text_file;  // plain text, one input a line; empty: the run's `split` through its task
  std::string split = "eval";
  int64_t batches = 0;    // 0: all
  int64_t batch_size = 0;  // 0: the run's
};

int head_roles_command(const HeadsArgs& heads, const RolesArgs& roles);

}  // namespace hr
