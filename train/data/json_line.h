// One line of JSON input (a JSONL data file, predict's stdin), parsed with its nesting bounded. A line of 10^6 '['
// parses in linear time, but the value it builds is copied and walked by recursion 10^6 frames deep: such a line is
// refused while it is parsed, before any deep value exists, and the lines after it are read as usual.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hr {

constexpr int kMaxJsonLineDepth = 100;  // nested objects and arrays; records are 2 or 3 deep

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

}  // namespace hr
