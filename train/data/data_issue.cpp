#include "train/data/data_issue.h"

#include "kernels/base/error.h"

namespace hr {

OnError parse_on_error(const std::string& name) {
  if (name == "skip") return OnError::skip;
  if (name == "fail") return OnError::fail;
  throw ConfigError("on_error must be 'skip' or 'fail', got '" + name + "'");
}

void report_issue(std::vector<DataIssue>& issues, OnError on_error, DataIssue issue) {
  if (on_error == OnError::fail) throw Error(issue.message());
  issues.push_back(std::move(issue));
}

}  // namespace hr
