#include "framework/bounded_json.h"

#include "framework/regular_file.h"
#include "kernels/base/error.h"

namespace hr {

JsonTooDeep::JsonTooDeep()
    : nlohmann::json::exception(0, ("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels").c_str()) {}

nlohmann::json parse_bounded_json(std::string_view text) {
  using json = nlohmann::json;
  // depth is that of the container being opened (0: the document's own)
  const json::parser_callback_t bound = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw JsonTooDeep();
    return true;
  };
  return json::parse(text, bound);
}

nlohmann::json parse_json_text(std::string_view text, const std::string& where) {
  try {
    return parse_bounded_json(text);
  } catch (const nlohmann::json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ..." or, for a number past the
    // range of double, "[json.exception.out_of_range.406] number overflow parsing '1e999'": keep what follows "] ",
    // cut short, as the number can be a whole line long.
    std::string message = e.what();
    const size_t from = message.find("] ");
    if (from != std::string::npos) message.erase(0, from + 2);
    if (message.size() > 200) message = message.substr(0, 200) + "...";
    throw Error(where + ": invalid JSON: " + message);
  }
}

nlohmann::json read_json_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  return parse_json_text(read_regular_file(path, max_bytes, what), path);
}

}  // namespace hr
