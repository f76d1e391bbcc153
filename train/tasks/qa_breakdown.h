// Where a span-QA model goes wrong, from its answers on a split: exact match and F1 by the length of the gold answer
// and, for English sets, by question type (the question's first wh-word). The run report's tables for QA runs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "train/data/squad_metric.h"
#include "train/tasks/task.h"

namespace hr {

// "what", "which", "who" (whom, whose), "when", "where", "why", "how many" (how much), "how", or "other": the first of
// those words in the question, lower-cased ("In what year ..." is a what-question).
std::string question_type(const std::string& question);

// The length bucket of an answer of n words (or, under the CMRC metric, segments): "1", "2", "3", "4-5", "6-10", "11+".
std::string answer_length_bucket(int64_t n);

// The tables, scored as evaluate_squad scores (`metric` as the task's data.metric).
std::vector<BreakdownTable> qa_breakdown(const std::vector<QaExample>& gold,
                                         const std::map<std::string, std::string>& predictions, QaMetric metric,
                                         const std::string& split);

}  // namespace hr
