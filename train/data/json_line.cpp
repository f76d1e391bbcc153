#include "train/data/json_line.h"

namespace hr {

JsonLine parse_json_line(std::string_view line) {
  using json = nlohmann::json;
  JsonLine r;
  bool too_deep = false;
  // depth is that of the container being opened (0: the line's own); once too deep, every value is discarded
  const json::parser_callback_t bound = [&](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonLineDepth)
      too_deep = true;
    return !too_deep;
  };
  try {
    r.value = json::parse(line, bound);
  } catch (const json::parse_error& e) {
    r.problem = "invalid JSON (at column " + std::to_string(e.byte) + ")";
  } catch (const json::out_of_range&) {  // a number past the range of double: 1e999
    r.problem = "invalid JSON (a number out of range)";
  }
  if (too_deep) r.problem = "JSON nested deeper than " + std::to_string(kMaxJsonLineDepth) + " levels";
  if (!r.problem.empty()) r.value = json(json::value_t::discarded);
  return r;
}

}  // namespace hr
