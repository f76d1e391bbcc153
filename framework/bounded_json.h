// JSON parsed with its nesting bounded. nlohmann's parser needs no recursion, but the value it builds is copied,
// compared and printed by recursion, frame after frame: one nested 10^5 deep (a hostile config.json, checkpoint
// header, data file or JSONL line) overflows the stack. Every parse of a file or a line goes through here and refuses
// a deeper text while it is parsed, before any deep value exists.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace hr {

constexpr int kMaxJsonDepth = 100;  // nested objects and arrays; the files headroom reads nest 2 to 5 deep

// What a text nested deeper than kMaxJsonDepth throws: a json::exception, so that a caller's catch of nlohmann's
// parse errors catches it too. what(): "nested deeper than 100 levels".
class JsonTooDeep : public nlohmann::json::exception {
 public:
  JsonTooDeep();
};

// nlohmann::json::parse(text), bounded: throws its parse_error, its out_of_range (a number such as 1e999) or
// JsonTooDeep.
nlohmann::json parse_bounded_json(std::string_view text);

// A JSON document that names `where` in its errors: hr::Error "WHERE: invalid JSON: parse error at line 4, column 2:
// ..." (nlohmann's message, cut to 200 characters) or "WHERE: invalid JSON: nested deeper than 100 levels".
nlohmann::json parse_json_text(std::string_view text, const std::string& where);

// A JSON file read whole: read_regular_file's checks and size cap (`what` names the kind of file), then
// parse_json_text naming the path.
nlohmann::json read_json_file(const std::string& path, uint64_t max_bytes, const std::string& what);

}  // namespace hr
