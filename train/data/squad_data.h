// Loader for extractive QA in the SQuAD v1.1 JSON schema (SQuAD, the bAbI conversion, CMRC 2018). Every answer is
// checked against its context: only answers whose text sits at answer_start reach the training view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/data/data_issue.h"

namespace hr {

struct Answer {
  std::string text;
  int64_t start = 0;  // Unicode code-point offset into the context (SQuAD's answer_start), not a byte offset
};

struct QaExample {
  std::string id, question, context, title;
  std::vector<Answer> answers;
};

struct SquadData {
  // Questions with a question text and at least one verified answer, holding only those: what training may use.
  std::vector<QaExample> train;
  // Every well-formed question with all of its answers as written: evaluation scores against their texts only, so a
  // question whose offsets are wrong still counts.
  std::vector<QaExample> eval;
  std::vector<DataIssue> issues;  // structure errors and misplaced answers, in file order
  int64_t misplaced_answers = 0;  // answers whose text is not at answer_start
};

// Throws hr::Error when the file is missing, not JSON, or has no top-level "data" list. Any other defect is an issue
// naming "file:line (json path)"; with on_error = fail the first one throws instead.
SquadData load_squad(const std::string& path, OnError on_error = OnError::skip);

}  // namespace hr
