// One line of JSON input (a JSONL data file, predict's stdin, a run's metrics.jsonl), parsed with its nesting bounded
// (framework/bounded_json.h): a line of 10^6 '[' is refused while it is parsed, and the lines after it are read as
// usual.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace hr {

struct JsonLine {
  nlohmann::json value;  // discarded (is_discarded()) when `problem` is set
  std::string problem;   // "invalid JSON (at column 7)", "... (a number out of range)", "JSON nested deeper than 100 ..."

  // What is wrong with a line that is not the `expected` value: the problem, if any, then what was expected.
  std::string why_not(const std::string& expected) const {
    return problem.empty() ? expected : problem + "; " + expected;
  }
};

// Never throws on bad input: a syntax error, a number past double's range or too deep a nesting is a `problem`.
JsonLine parse_json_line(std::string_view line);

// The "text" of line `line_no` of stdin read as JSONL (`embed --jsonl`, `tokenize --jsonl`): nothing for a blank line,
// a UsageError naming the line when it is not a JSON object with a string "text".
std::optional<std::string> stdin_jsonl_text(std::string_view line, int64_t line_no);

}  // namespace hr
