// Loaders for text classification data (intent detection, sentence pairs as in MNLI): CLINC150's JSON, CSV, TSV and
// JSON Lines. They return raw text (or pre-tokenised ids) with string labels; tokenisation and label ids happen later
// (see LabelSet).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/data/data_issue.h"
#include "train/data/label_set.h"

namespace hr {

struct TextExample {
  std::string text;                // empty when the row gave input_ids instead
  std::string text_pair;           // sentence pairs: the second text (segment 1); empty for single texts
  std::vector<int32_t> input_ids;  // pre-tokenised ids (JSONL "input_ids"); empty when the row gave text
  std::string label;               // integer labels are kept as their decimal string
  std::string source;              // "file:line", plus the JSON path for CLINC150: "data_full.json:12407 (train[0])"
};

enum class DataFormat { clinc150, csv, tsv, jsonl };

DataFormat parse_data_format(const std::string& name);  // "clinc150" | "csv" | "tsv" | "jsonl"; else ConfigError

struct ClassificationDataOptions {
  DataFormat format = DataFormat::jsonl;
  std::string path;
  std::string split = "train";        // clinc150: the top-level key to read (train, val, test)
  bool include_oos = false;           // clinc150: also read "oos_<split>" (label "oos")
  std::string text_field = "text";    // csv/tsv: header column; jsonl: key (its alternative key is "input_ids")
  std::string pair_field;             // sentence pairs: the second text's column or key; empty: single texts. Pairs
                                      // need both texts (no input_ids) and are not read from clinc150
  std::string label_field = "label";  // csv/tsv: header column; jsonl: key (string or integer)
  OnError on_error = OnError::skip;
  std::optional<LabelSet> known_labels;  // for eval data: a row whose label is not in it is an issue
};

struct LoadResult {
  std::vector<TextExample> examples;
  std::vector<DataIssue> issues;  // every dropped row, in file order
};

// Throws hr::Error when the file cannot be used at all (missing, not JSON, no header, no such split); a bad row is an
// issue (or, with on_error = fail, an hr::Error with the issue's message).
LoadResult load_classification_data(const ClassificationDataOptions& options);

}  // namespace hr
