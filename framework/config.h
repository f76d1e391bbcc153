// Configuration: a view over a YAML tree that knows its file, dotted path and line, so every error names all three.
//
// Each consumer (a layer factory, the trainer) reads only its own block through a Config view. Views of one document
// share a record of the keys that were asked for; check_all_read() then reports every key nobody asked for as unknown,
// with a did-you-mean suggestion. Overrides (`--set train.lr=3e-4`) are applied before reading and remembered, so an
// error in an overridden value names the override instead of a file line.
//
// Scalars are converted strictly by the type asked for: integers are decimal without a fractional part (8.0 is not an
// integer), numbers accept integers and scientific notation (1, 3e-4) but not inf/nan, strings accept any scalar.
// Booleans follow yaml-cpp, which besides true/false also accepts y/n, yes/no, on/off in lower, Title or UPPER case.
#pragma once

#include <yaml-cpp/yaml.h>

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/base/error.h"

namespace hr {

template <class T>
concept ConfigValue = std::same_as<T, bool> || std::same_as<T, int64_t> || std::same_as<T, int> ||
    std::same_as<T, double> || std::same_as<T, float> || std::same_as<T, std::string> ||
    std::same_as<T, std::vector<int64_t>> || std::same_as<T, std::vector<std::string>>;

class Config {
 public:
  // Loads a YAML file whose top level is a mapping. Syntax errors read "file:line:col: YAML syntax error: ...".
  static Config load_file(const std::string& path);
  // Same, from text; `name` stands for the file in messages.
  static Config parse(const std::string& yaml_text, const std::string& name);

  // Applies "a.b.c=value" below this node: the value is parsed as YAML (3e-4, true, [1, 2], {heads: 4}); a numeric
  // component indexes a sequence (model.layers.1.attention.heads=4). Missing mapping keys are created. Apply all
  // overrides before taking views: a view taken earlier may still see a replaced subtree.
  void apply_override(const std::string& assignment);

  // Whether the mapping has `key` (an explicit null counts as present). Does not mark the key as read.
  bool has(const std::string& key) const;
  // A mapping or sequence value; missing or scalar -> ConfigError.
  Config child(const std::string& key) const;
  std::optional<Config> optional_child(const std::string& key) const;
  // The elements of a sequence view, with paths like "model.layers[1]".
  std::vector<Config> items() const;
  // The keys of a mapping view, in file order. Does not mark them as read.
  std::vector<std::string> keys() const;

  template <ConfigValue T>
  T get(const std::string& key) const;
  template <ConfigValue T>
  T get(const std::string& key, const T& fallback) const;
  int64_t get_positive(const std::string& key) const;
  int64_t get_positive(const std::string& key, int64_t fallback) const;
  // A fraction in [0, 1) (dropout, label smoothing, Adam's betas); the fallback, when the key is absent, is taken as is.
  float get_fraction(const std::string& key, float fallback) const;
  // One of `choices`; without a fallback the key is required.
  std::string get_choice(const std::string& key, std::initializer_list<const char*> choices,
                         const char* fallback = nullptr) const;
  // The same over names known at run time (a registry's).
  std::string get_choice(const std::string& key, const std::vector<std::string>& choices,
                         const char* fallback = nullptr) const;

  // Throws a ConfigError "file:line: path.key: what" (or "--set ...: path.key: what" for an overridden value).
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // The same about this node itself.
  [[noreturn]] void fail(const std::string& what) const;

  // Throws a ConfigError listing every key in this subtree that no consumer asked for, one per line.
  void check_all_read() const;
  // This subtree as YAML, overrides included (for the run directory).
  std::string dump() const;

  const std::string& file() const;
  int line() const { return line_; }  // 1-based
  const std::string& path() const { return path_; }

 private:
  struct Document;
  Config(std::shared_ptr<Document> doc, YAML::Node node, std::string path, int line);

  // Marks `key` as read and returns a view of its value; required.
  Config value(const std::string& key) const;
  YAML::Node lookup(const std::string& key) const;  // requires a mapping view; an invalid node when absent
  void mark_read(const std::string& key) const;
  int line_of(const std::string& key) const;
  std::string child_path(const std::string& key) const;
  template <ConfigValue T>
  T as() const;
  void collect_unread(std::vector<std::string>& errors) const;

  std::shared_ptr<Document> doc_;
  YAML::Node node_;
  std::string path_;  // "model.layers[1].attention"; empty at the root
  int line_;
};

// Checks every reader of a config block makes. A path the config names must exist (a name the OS refuses, too long or
// with a bad component, is a config error too); a count past `limit` is a typo, not a plan.
void require_file(const Config& c, const std::string& key, const std::string& path);
int64_t at_most(const Config& c, const std::string& key, int64_t value, int64_t limit);

// The candidate closest to `key` by edit distance if it is close enough to be a likely typo, else "".
std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace hr
