// A JSON document together with where each of its objects and arrays starts in the file, so that an issue in a
// record can name both its JSON path ("train[123]", "data[0].paragraphs[2].qas[1]") and its line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "train/data/data_file.h"

namespace hr {

// Paths as issue messages print them: key children as ".key" (`["key"]` when the key is not a plain identifier,
// so distinct paths never print alike), array elements as "[i]"; the root is "".
std::string json_child_path(const std::string& parent, const std::string& key);
std::string json_index_path(const std::string& parent, size_t index);

class LocatedJson {
 public:
  // Parses the file; hr::Error naming the file, line and column on a syntax error or ill-formed UTF-8.
  static LocatedJson parse_file(const std::string& path);

  const nlohmann::json& root() const { return root_; }
  const std::string& path() const { return path_; }

  // "file:line (json_path)" for the object or array at json_path (issues name the record that holds the defect).
  std::string where(const std::string& json_path) const { return where(json_path, json_path); }
  // The same for a value that is no container (or not what it should be): its line is taken from line_path's.
  std::string where(const std::string& json_path, const std::string& line_path) const;
  int64_t line_of(const std::string& json_path) const;  // 1-based; 0 when json_path is no object or array

 private:
  LocatedJson(std::string path, std::string_view text);

  std::string path_;
  nlohmann::json root_;
  std::unordered_map<std::string, size_t> container_offsets_;  // json path -> byte offset of its '{' or '['
  LineIndex lines_;
};

}  // namespace hr
