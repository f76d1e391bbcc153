#include "train/data/classification_data.h"

#include <limits>
#include <string_view>

#include "kernels/base/error.h"
#include "train/data/data_file.h"
#include "train/data/delimited_records.h"
#include "train/data/json_line.h"
#include "train/data/located_json.h"
#include "train/data/utf8_codepoints.h"

namespace hr {

namespace {

using nlohmann::json;

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos; }

const char* json_type(const json& value) { return value.type_name(); }

// The checks every format shares; reports the first failing one and says whether the example is kept.
bool accept_example(const TextExample& example, const ClassificationDataOptions& options, LoadResult& result) {
  std::string problem;
  if (!options.pair_field.empty() && (is_blank(example.text) || is_blank(example.text_pair))) {
    problem = "empty '" + (is_blank(example.text) ? options.text_field : options.pair_field) + "'";
  } else if (example.input_ids.empty() && is_blank(example.text)) {
    problem = "empty text";
  } else if (example.label.empty()) {
    problem = "empty label";
  } else if (options.known_labels && !options.known_labels->find(example.label)) {
    problem = "unknown label '" + example.label + "' (not among the " + std::to_string(options.known_labels->size()) +
              " training labels)";
  }
  if (problem.empty()) return true;
  report_issue(result.issues, options.on_error, {example.source, problem});
  return false;
}

void load_clinc150_split(const LocatedJson& doc, const std::string& split, const ClassificationDataOptions& options,
                         LoadResult& result) {
  const json& root = doc.root();
  HR_CHECK(root.is_object(), doc.path() + ": expected a JSON object of CLINC150 splits, got " + json_type(root));
  if (!root.contains(split)) {
    std::string keys;
    for (const auto& [key, value] : root.items()) keys += (keys.empty() ? "" : ", ") + key;
    throw Error(doc.path() + ": no split '" + split + "' (the file has: " + keys + ")");
  }
  const json& rows = root.at(split);
  HR_CHECK(rows.is_array(), doc.where(split) + ": split '" + split + "' is not an array");
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string path = json_index_path(json_child_path("", split), i);
    const json& row = rows[i];
    TextExample example;
    example.source = doc.where(path, split);
    if (!row.is_array() || row.size() != 2) {
      const std::string got =
          row.is_array() ? "an array of " + std::to_string(row.size()) : std::string(json_type(row));
      report_issue(result.issues, options.on_error, {example.source, "expected a [text, intent] pair, got " + got});
      continue;
    }
    if (!row[0].is_string() || !row[1].is_string()) {
      const std::string got = std::string("[") + json_type(row[0]) + ", " + json_type(row[1]) + "]";
      report_issue(result.issues, options.on_error, {example.source, "expected [string, string], got " + got});
      continue;
    }
    example.text = row[0].get<std::string>();
    example.label = row[1].get<std::string>();
    if (accept_example(example, options, result)) result.examples.push_back(std::move(example));
  }
}

void load_clinc150(const ClassificationDataOptions& options, LoadResult& result) {
  if (!options.pair_field.empty()) throw ConfigError("data: the clinc150 format holds single texts, not sentence pairs");
  const LocatedJson doc = LocatedJson::parse_file(options.path);
  load_clinc150_split(doc, options.split, options, result);
  if (options.include_oos) load_clinc150_split(doc, "oos_" + options.split, options, result);
}

void load_delimited(const ClassificationDataOptions& options, char delimiter, LoadResult& result) {
  std::string text = read_data_file(options.path);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 byte order mark
  const std::vector<DelimitedRecord> records = read_delimited_records(text, delimiter);
  std::string wanted = "'" + options.text_field + "', ";
  if (!options.pair_field.empty()) wanted += "'" + options.pair_field + "', ";
  wanted += "'" + options.label_field + "'";
  HR_CHECK(!records.empty(), options.path + ": empty file (expected a header row naming the columns " + wanted + ")");
  const DelimitedRecord& header = records.front();
  const std::string header_where = options.path + ":" + std::to_string(header.line);
  HR_CHECK(header.error.empty(), header_where + ": malformed header: " + header.error);
  const auto column = [&](const std::string& name) {
    for (size_t c = 0; c < header.fields.size(); ++c) {
      if (header.fields[c] == name) return c;
    }
    std::string names;
    for (const std::string& field : header.fields) {
      names += (names.empty() ? "'" : ", '") + (is_valid_utf8(field) ? field : "<invalid UTF-8>") + "'";
    }
    // the config names a column the file lacks: fixed in data.text_field / label_field, so a config error (exit 2)
    throw ConfigError(header_where + ": the header has no column '" + name + "' (it has " + names + ")");
  };
  const size_t text_column = column(options.text_field);
  const size_t pair_column = options.pair_field.empty() ? 0 : column(options.pair_field);
  const size_t label_column = column(options.label_field);

  for (size_t r = 1; r < records.size(); ++r) {
    const DelimitedRecord& record = records[r];
    TextExample example;
    example.source = options.path + ":" + std::to_string(record.line);
    std::string problem = record.error;
    if (problem.empty() && record.fields.size() != header.fields.size()) {
      problem =
          std::to_string(record.fields.size()) + " columns, the header has " + std::to_string(header.fields.size());
    }
    for (size_t c = 0; problem.empty() && c < record.fields.size(); ++c) {
      if (!is_valid_utf8(record.fields[c])) problem = "invalid UTF-8 in column '" + header.fields[c] + "'";
    }
    if (!problem.empty()) {
      report_issue(result.issues, options.on_error, {example.source, problem});
      continue;
    }
    example.text = record.fields[text_column];
    if (!options.pair_field.empty()) example.text_pair = record.fields[pair_column];
    example.label = record.fields[label_column];
    if (accept_example(example, options, result)) result.examples.push_back(std::move(example));
  }
}

// The single text of a JSONL object: `text_field`, or pre-tokenised "input_ids".
std::string read_jsonl_text(const json& row, const ClassificationDataOptions& options, TextExample& example) {
  const bool has_text = row.contains(options.text_field);
  const bool has_ids = row.contains("input_ids");
  if (has_text == has_ids) {
    return has_text ? "both '" + options.text_field + "' and 'input_ids': give one"
                    : "missing field '" + options.text_field + "' (or 'input_ids')";
  }
  if (has_text) {
    const json& text = row.at(options.text_field);
    if (!text.is_string()) return "'" + options.text_field + "' must be a string, got " + json_type(text);
    example.text = text.get<std::string>();
  } else {
    const json& ids = row.at("input_ids");
    if (!ids.is_array()) return std::string("'input_ids' must be a list of integers, got ") + json_type(ids);
    if (ids.empty()) return "empty 'input_ids'";
    for (size_t k = 0; k < ids.size(); ++k) {
      const json& id = ids[k];
      const bool in_range = id.is_number_unsigned() || (id.is_number_integer() && id.get<int64_t>() >= 0);
      if (!in_range || id.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        return "input_ids[" + std::to_string(k) + "] is not a token id (an integer in [0, 2^31)): " + id.dump();
      }
      example.input_ids.push_back(static_cast<int32_t>(id.get<uint64_t>()));
    }
  }
  return "";
}

std::string read_jsonl_label(const json& row, const ClassificationDataOptions& options, TextExample& example) {
  if (!row.contains(options.label_field)) return "missing field '" + options.label_field + "'";
  const json& label = row.at(options.label_field);
  if (label.is_string()) {
    example.label = label.get<std::string>();
  } else if (label.is_number_integer()) {
    example.label = label.dump();
  } else {
    return "'" + options.label_field + "' must be a string or an integer, got " + json_type(label);
  }
  return "";
}

// Fills example from one JSONL object; returns what is wrong with it, or "" when it is usable.
std::string read_jsonl_object(const json& row, const ClassificationDataOptions& options, TextExample& example) {
  if (!row.is_object()) return std::string("expected a JSON object, got ") + json_type(row);
  if (!options.pair_field.empty()) {  // a sentence pair: both texts, as strings (pre-tokenised pairs are not read)
    for (const std::string* field : {&options.text_field, &options.pair_field}) {
      if (!row.contains(*field)) return "missing field '" + *field + "'";
      const json& text = row.at(*field);
      if (!text.is_string()) return "'" + *field + "' must be a string, got " + json_type(text);
    }
    example.text = row.at(options.text_field).get<std::string>();
    example.text_pair = row.at(options.pair_field).get<std::string>();
  } else if (const std::string problem = read_jsonl_text(row, options, example); !problem.empty()) {
    return problem;
  }
  return read_jsonl_label(row, options, example);
}

void load_jsonl(const ClassificationDataOptions& options, LoadResult& result) {
  const std::string text = read_data_file(options.path);
  size_t begin = 0;
  for (int64_t line_number = 1; begin < text.size(); ++line_number) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    if (line_number == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
    if (is_blank(line)) continue;
    TextExample example;
    example.source = options.path + ":" + std::to_string(line_number);
    std::string problem;
    if (!is_valid_utf8(line)) {
      problem = "invalid UTF-8";
    } else {
      const JsonLine row = parse_json_line(line);
      problem = row.problem.empty() ? read_jsonl_object(row.value, options, example) : row.problem;
    }
    if (!problem.empty()) {
      report_issue(result.issues, options.on_error, {example.source, problem});
      continue;
    }
    if (accept_example(example, options, result)) result.examples.push_back(std::move(example));
  }
}

}  // namespace

DataFormat parse_data_format(const std::string& name) {
  if (name == "clinc150") return DataFormat::clinc150;
  if (name == "csv") return DataFormat::csv;
  if (name == "tsv") return DataFormat::tsv;
  if (name == "jsonl") return DataFormat::jsonl;
  throw ConfigError("data format must be one of clinc150, csv, tsv, jsonl; got '" + name + "'");
}

LoadResult load_classification_data(const ClassificationDataOptions& options) {
  HR_CHECK(!options.path.empty(), "load_classification_data: no path given");
  LoadResult result;
  switch (options.format) {
    case DataFormat::clinc150: load_clinc150(options, result); break;
    case DataFormat::csv: load_delimited(options, ',', result); break;
    case DataFormat::tsv: load_delimited(options, '\t', result); break;
    case DataFormat::jsonl: load_jsonl(options, result); break;
  }
  return result;
}

}  // namespace hr
