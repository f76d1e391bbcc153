#include "train/tasks/qa_breakdown.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "train/data/cmrc_metric.h"

namespace hr {

std::string question_type(const std::string& question) {
  std::string lower;
  for (char c : question) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  for (char& c : lower)
    if (!((c >= 'a' && c <= 'z') || (c & 0x80))) c = ' ';  // words of letters (and non-ASCII bytes)
  std::istringstream words(lower);
  std::string w;
  while (words >> w) {
    if (w == "what" || w == "which" || w == "when" || w == "where" || w == "why") return w;
    if (w == "who" || w == "whom" || w == "whose") return "who";
    if (w == "how") {
      std::string next;
      if (words >> next && (next == "many" || next == "much")) return "how many";
      return "how";
    }
  }
  return "other";
}

std::string answer_length_bucket(int64_t n) {
  if (n <= 3) return std::to_string(std::max<int64_t>(n, 1));
  if (n <= 5) return "4-5";
  if (n <= 10) return "6-10";
  return "11+";
}

namespace {

int64_t answer_words(const std::string& text, bool cmrc) {
  if (cmrc) return static_cast<int64_t>(cmrc_segments(text).size());
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

// One row per bucket, in `order`, of the buckets that have questions.
BreakdownTable score_buckets(const std::string& title, const std::string& note, const std::string& column,
                             const std::vector<std::string>& order,
                             const std::map<std::string, std::vector<QaExample>>& buckets,
                             const std::map<std::string, std::string>& predictions, QaMetric metric) {
  BreakdownTable t;
  t.title = title;
  t.note = note;
  t.header = {column, "questions", "exact match", "F1"};
  for (const std::string& b : order) {
    const auto it = buckets.find(b);
    if (it == buckets.end()) continue;
    const SquadScore s = evaluate_squad(it->second, predictions, metric);
    char em[32], f1[32];
    std::snprintf(em, sizeof em, "%.1f", s.exact_match);
    std::snprintf(f1, sizeof f1, "%.1f", s.f1);
    t.rows.push_back({b, std::to_string(s.questions), em, f1});
  }
  return t;
}

}  // namespace

std::vector<BreakdownTable> qa_breakdown(const std::vector<QaExample>& gold,
                                         const std::map<std::string, std::string>& predictions, QaMetric metric,
                                         const std::string& split) {
  if (metric == QaMetric::automatic) metric = is_chinese_qa(gold) ? QaMetric::cmrc : QaMetric::squad;
  const bool cmrc = metric == QaMetric::cmrc;
  std::map<std::string, std::vector<QaExample>> by_length, by_type;
  for (const QaExample& q : gold) {
    if (q.answers.empty()) continue;
    by_length[answer_length_bucket(answer_words(q.answers.front().text, cmrc))].push_back(q);
    by_type[question_type(q.question)].push_back(q);
  }
  const std::string unit = cmrc ? "segments (CMRC metric)" : "words";
  std::vector<BreakdownTable> tables = {
      score_buckets("by answer length", "exact match and F1 (percent) on the " + split +
                                            " split by the length of the first gold answer in " + unit,
                    "answer " + unit.substr(0, unit.find(' ')), {"1", "2", "3", "4-5", "6-10", "11+"}, by_length,
                    predictions, metric)};
  if (!cmrc)
    tables.push_back(score_buckets(
        "by question type", "exact match and F1 (percent) on the " + split + " split by the question's first wh-word",
        "question type", {"what", "which", "who", "when", "where", "why", "how many", "how", "other"}, by_type,
        predictions, metric));
  return tables;
}

}  // namespace hr
