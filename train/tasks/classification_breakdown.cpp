#include "train/tasks/classification_breakdown.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "kernels/base/error.h"

namespace hr {

namespace {

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::vector<ConfusedPair> most_confused_pairs(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                              size_t top) {
  HR_CHECK(gold.size() == pred.size(), "most_confused_pairs: " + std::to_string(gold.size()) + " gold labels for " +
                                           std::to_string(pred.size()) + " predictions");
  std::map<std::pair<int32_t, int32_t>, int64_t> counts;
  for (size_t i = 0; i < gold.size(); ++i)
    if (gold[i] != pred[i]) ++counts[{gold[i], pred[i]}];
  std::vector<ConfusedPair> pairs;
  for (const auto& [p, n] : counts) pairs.push_back({p.first, p.second, n});
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  if (pairs.size() > top) pairs.resize(top);
  return pairs;
}

std::vector<LabelScore> worst_labels(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                     int32_t num_labels, size_t worst) {
  HR_CHECK(gold.size() == pred.size(), "worst_labels: " + std::to_string(gold.size()) + " gold labels for " +
                                           std::to_string(pred.size()) + " predictions");
  std::vector<int64_t> tp(static_cast<size_t>(num_labels)), support(tp.size()), predicted(tp.size());
  for (size_t i = 0; i < gold.size(); ++i) {
    HR_CHECK(gold[i] >= 0 && gold[i] < num_labels && pred[i] >= 0 && pred[i] < num_labels,
             "worst_labels: a label id outside 0.." + std::to_string(num_labels - 1));
    ++support[static_cast<size_t>(gold[i])];
    ++predicted[static_cast<size_t>(pred[i])];
    if (gold[i] == pred[i]) ++tp[static_cast<size_t>(gold[i])];
  }
  std::vector<LabelScore> scores;
  for (size_t c = 0; c < tp.size(); ++c) {
    if (support[c] == 0 && predicted[c] == 0) continue;  // as classification_metrics' macro-F1
    LabelScore s;
    s.label = static_cast<int32_t>(c);
    s.support = support[c];
    s.predicted = predicted[c];
    s.precision = predicted[c] ? static_cast<double>(tp[c]) / static_cast<double>(predicted[c]) : 0;
    s.recall = support[c] ? static_cast<double>(tp[c]) / static_cast<double>(support[c]) : 0;
    s.f1 = 2.0 * static_cast<double>(tp[c]) / static_cast<double>(support[c] + predicted[c]);
    scores.push_back(s);
  }
  std::stable_sort(scores.begin(), scores.end(), [](const LabelScore& a, const LabelScore& b) {
    return a.f1 != b.f1 ? a.f1 < b.f1 : a.support > b.support;
  });
  if (scores.size() > worst) scores.resize(worst);
  return scores;
}

std::vector<BreakdownTable> classification_breakdown(const std::vector<int32_t>& gold, const std::vector<int32_t>& pred,
                                                     const std::vector<std::string>& names, const std::string& split,
                                                     size_t top) {
  const auto n = static_cast<int32_t>(names.size());
  int64_t wrong = 0;
  for (size_t i = 0; i < gold.size(); ++i) wrong += gold[i] != pred[i];
  BreakdownTable confused;
  confused.title = "most confused label pairs";
  confused.note = std::to_string(wrong) + " of " + std::to_string(gold.size()) + " " + split +
                  " rows are misclassified; the " + std::to_string(top) + " most frequent (gold, predicted) pairs:";
  confused.header = {"gold label", "predicted as", "rows", "share of the gold label's rows"};
  std::vector<int64_t> support(names.size());
  for (int32_t g : gold)
    if (g >= 0 && g < n) ++support[static_cast<size_t>(g)];
  for (const ConfusedPair& p : most_confused_pairs(gold, pred, top))
    confused.rows.push_back({names.at(static_cast<size_t>(p.gold)), names.at(static_cast<size_t>(p.predicted)),
                             std::to_string(p.count),
                             fixed(100.0 * static_cast<double>(p.count) /
                                       static_cast<double>(support[static_cast<size_t>(p.gold)]), 1) + "%"});
  BreakdownTable labels;
  labels.title = "labels with the lowest F1";
  labels.note = "per-label precision, recall and F1 on the " + split + " split, the " + std::to_string(top) +
                " lowest F1 first";
  labels.header = {"label", "F1", "precision", "recall", "gold rows", "predicted rows"};
  for (const LabelScore& s : worst_labels(gold, pred, n, top))
    labels.rows.push_back({names.at(static_cast<size_t>(s.label)), fixed(s.f1, 3), fixed(s.precision, 3),
                           fixed(s.recall, 3), std::to_string(s.support), std::to_string(s.predicted)});
  return {confused, labels};
}

}  // namespace hr
