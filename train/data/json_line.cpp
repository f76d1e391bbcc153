#include "train/data/json_line.h"

#include "framework/bounded_json.h"
#include "kernels/base/error.h"

namespace hr {

JsonLine parse_json_line(std::string_view line) {
  using json = nlohmann::json;
  JsonLine r;
  try {
    r.value = parse_bounded_json(line);
  } catch (const JsonTooDeep& e) {
    r.problem = std::string("JSON ") + e.what();
  } catch (const json::parse_error& e) {
    r.problem = "invalid JSON (at column " + std::to_string(e.byte) + ")";
  } catch (const json::out_of_range&) {  // a number past the range of double: 1e999
    r.problem = "invalid JSON (a number out of range)";
  }
  if (!r.problem.empty()) r.value = json(json::value_t::discarded);
  return r;
}

std::optional<std::string> stdin_jsonl_text(std::string_view line, int64_t line_no) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return std::nullopt;
  const JsonLine parsed = parse_json_line(line);
  const nlohmann::json& j = parsed.value;
  if (!j.is_object() || !j.contains("text") || !j.at("text").is_string())
    throw UsageError("stdin line " + std::to_string(line_no) + ": " +
                     parsed.why_not("expected a JSON object with a string \"text\""));
  return j.at("text").get<std::string>();
}

}  // namespace hr
