#include "train/data/json_line.h"

#include "framework/bounded_json.h"

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

}  // namespace hr
