// Where a classifier goes wrong, from its predictions on a split: the label pairs it confuses most (gold -> predicted,
// with counts) and the labels with the lowest F1 (precision, recall, support). The run report's tables for
// classification runs; a 150-intent run's full confusion matrix would not read at a glance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/tasks/task.h"

namespace hr {

struct ConfusedPair {
  int32_t gold = 0, predicted = 0;
  int64_t count = 0;
};

struct LabelScore {
  int32_t label = 0;
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0, predicted = 0;  // gold rows of the label; rows predicted as it
};

// The `top` most frequent (gold, predicted) pairs with gold != predicted, by count (ties: gold, then predicted id).
std::vector<ConfusedPair> most_confused_pairs(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                              size_t top);

// Per-label scores of the labels present in gold or predictions (the labels macro-F1 averages over), the `worst`
// lowest F1 first (ties: more support first, then id).
std::vector<LabelScore> worst_labels(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                     int32_t num_labels, size_t worst);

// The two tables, labels by name (`names[id]`), over `rows` rows of the split named `split`.
std::vector<BreakdownTable> classification_breakdown(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                                     const std::vector<std::string>& names, const std::string& split,
                                                     size_t top = 15);

}  // namespace hr
