// The official SQuAD v1.1 metric (evaluate-v1.1.py), reproduced exactly: answers are normalised by
// white_space_fix(remove_articles(remove_punc(lower(s)))), EM is equality of the normalised strings, F1 is the
// overlap of their whitespace tokens; each question scores its best over its gold answers; averages are x100.
// evaluate_squad scores Chinese sets with the CMRC 2018 metric instead (cmrc_metric.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/squad_data.h"

namespace hr {

// Python's str.lower() (full Unicode mapping, final sigma), then drop string.punctuation (ASCII only), replace the
// whole words a/an/the (Python's Unicode \b) by a space, and join str.split()'s tokens with single spaces.
std::string normalize_squad_answer(std::string_view text);

// Python's str.lower() on UTF-8 text (ill-formed bytes become U+FFFD, see train/tokenizer/utf8.h), and
// str.isspace(): the metric scripts' building blocks, shared with the CMRC 2018 metric.
std::string python_lower(std::string_view text);
bool is_python_space(int32_t cp);

double squad_exact_match(std::string_view prediction, std::string_view gold);  // 1 or 0
double squad_f1(std::string_view prediction, std::string_view gold);           // in [0, 1]

// Which answer comparison scores a QA set: SQuAD's (whitespace tokens) or CMRC 2018's (Chinese characters one by
// one, see cmrc_metric.h); automatic picks cmrc for mostly Chinese questions (is_chinese_qa).
enum class QaMetric { automatic, squad, cmrc };
QaMetric parse_qa_metric(const std::string& name);  // "auto" | "squad" | "cmrc"; else ConfigError

struct SquadScore {
  std::string metric = "squad";  // the metric that scored: "squad" or "cmrc"
  double exact_match = 0;  // percent
  double f1 = 0;           // percent
  int64_t questions = 0;   // every gold question counts
  int64_t unanswered = 0;  // gold questions without a prediction: they score 0
};

// Scores against the gold answer texts of each question (use SquadData::eval). Predictions for ids not in gold are
// ignored, as the official scripts do. hr::Error if a gold question has no answers.
SquadScore evaluate_squad(const std::vector<QaExample>& gold, const std::map<std::string, std::string>& predictions,
                          QaMetric metric = QaMetric::automatic);

// Writes {"id": "answer text", ...} as UTF-8 JSON; hr::Error naming the id if an answer is not valid UTF-8.
void write_predictions_json(const std::string& path, const std::map<std::string, std::string>& predictions);

}  // namespace hr
