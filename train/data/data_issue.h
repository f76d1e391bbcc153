// A defect found in a data file (a malformed row, a misplaced answer), and the policy for what to do about it.
#pragma once

#include <string>
#include <vector>

namespace hr {

enum class OnError { skip, fail };  // skip: drop the record and report it; fail: throw on the first one

OnError parse_on_error(const std::string& name);  // "skip" | "fail"; anything else is a ConfigError

struct DataIssue {
  std::string where;  // "file:line", plus the JSON path for JSON files: "data_full.json:12407 (train[0])"
  std::string what;
  std::string message() const { return where + ": " + what; }
};

// Appends the issue, or throws hr::Error with its message when on_error is fail.
void report_issue(std::vector<DataIssue>& issues, OnError on_error, DataIssue issue);

}  // namespace hr
