#include "framework/config.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "framework/regular_file.h"

namespace hr {

namespace {

// Values (scalars, sequences, mappings, each alias counted again) a config may expand to: configs have hundreds.
constexpr int64_t kMaxValues = 100'000;
// Nesting levels: real configs have five (model.layers[0].attention.heads); the walks of the tree recurse per level.
constexpr int kMaxDepth = 32;
constexpr uint64_t kMaxConfigBytes = 16 << 20;  // configs are kilobytes

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// Whether `path` is `prefix` or lies below it ("model.layers[1].heads" lies below "model.layers").
bool within(const std::string& path, const std::string& prefix) {
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '.' || path[prefix.size()] == '[';
}

// Text from the config as an error message quotes it: a value of megabytes would bury the message, so a long one is
// cut (at a UTF-8 character boundary) and its length given instead.
std::string quoted(const std::string& text) {
  constexpr size_t kShown = 60;
  if (text.size() <= kShown + 20) return "'" + text + "'";
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "'" + text.substr(0, cut) + "...' (" + std::to_string(text.size()) + " bytes)";
}

// Where the first two documents of a YAML stream start (fewer if it has fewer). Not YAML::LoadAll: yaml-cpp 0.7's
// never returns on a stray ',' (jbeder/yaml-cpp#1040, fixed after 0.8), its parser reporting the same empty document
// at the same place again and again, allocating as it goes; two documents that start at one place are that case.
std::vector<YAML::Mark> document_starts(const std::string& text) {
  struct Starts : YAML::EventHandler {
    std::vector<YAML::Mark> marks;
    void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } starts;
  std::istringstream in(text);
  YAML::Parser parser(in);
  while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
  }
  return starts.marks;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return quoted(node.Scalar());
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an empty value";
  }
}

// Strict decimal integer: "8" and "-3" but not "8.0", "0x8" or "8k".
std::optional<int64_t> parse_integer(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// A finite decimal number: "1", "-0.5", "3e-4".
std::optional<double> parse_number(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (text.empty() || text.back() == separator) parts.emplace_back();
  return parts;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours ("trian") cost 1.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string suggestion(const std::string& key, const std::vector<std::string>& candidates) {
  const std::string hint = did_you_mean(key, candidates);
  return hint.empty() ? "" : " (did you mean '" + hint + "'?)";
}

// A missing key is often one renamed or misspelt next to it ("train_file" for "train_path"): name the keys of this
// mapping nobody asked for that look like it (a typo, or a shared word), so both are reported at once.
std::string renamed_hint(const YAML::Node& mapping, const std::set<std::string>& read, const std::string& key) {
  const auto words = [](const std::string& name) {
    std::vector<std::string> parts = split(name, '_');
    std::erase_if(parts, [](const std::string& part) { return part.size() < 3; });
    return parts;
  };
  const std::vector<std::string> key_words = words(key);
  std::string hint;
  for (const auto& kv : mapping) {
    const std::string other = kv.first.Scalar();
    if (read.count(other)) continue;
    const std::vector<std::string> other_words = words(other);
    const bool shares_word = std::ranges::any_of(
        key_words, [&](const std::string& w) { return std::ranges::find(other_words, w) != other_words.end(); });
    // one- and two-letter names are all "close" to each other: only a shared word counts for them
    if (!shares_word && (key.size() < 3 || did_you_mean(other, {key}).empty())) continue;
    hint += (hint.empty() ? "" : ", ") + quoted(other) + " (line " + std::to_string(kv.first.Mark().line + 1) + ")";
  }
  return hint.empty() ? "" : "; unknown key " + hint + " may be meant for it";
}

}  // namespace

std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates) {
  // No key is this long; the distance table of a huge value would take quadratic time and memory.
  constexpr size_t kLongest = 100;
  if (key.size() > kLongest) return "";
  std::string best;
  size_t best_distance = std::max<size_t>(1, key.size() / 3) + 1;  // a third of the letters wrong is still a typo
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(key, candidate);
    if (d < best_distance) best = candidate, best_distance = d;
  }
  return best;
}

// What all views of one document share.
struct Config::Document {
  std::string file;
  std::map<std::string, std::set<std::string>> read;  // path of a mapping -> the keys consumers asked for there
  std::map<std::string, std::string> overrides;       // path -> the "--set ..." that last replaced it

  // "file:line: path" or, for a value an override set, "--set a.b=c: path" (the path left out when it is a.b itself).
  std::string locate(const std::string& path, int line) const {
    const std::string* source = nullptr;  // the innermost override above `path`
    size_t source_depth = 0;
    for (const auto& [set_path, assignment] : overrides)
      if (within(path, set_path) && set_path.size() > source_depth)
        source = &assignment, source_depth = set_path.size();
    std::string where = source ? *source : file + ":" + std::to_string(line);
    if (!path.empty() && !where.starts_with("--set " + path + "=")) where += ": " + path;
    return where;
  }

  // yaml-cpp keeps duplicate keys (lookups see the first) and allows non-scalar keys; both are mistakes in a config.
  // An alias is its anchor's node again, so aliases of aliases ("billion laughs") expand a kilobyte into 10^9 values
  // for every walk of the tree: `budget` bounds the values this walk (and so every later one) may visit.
  // `depth` is the nesting level of `node`; a limit keeps this walk (and dump()'s) off the end of the stack.
  void check_keys(const YAML::Node& node, const std::string& path, int depth, int64_t& budget) const {
    if (--budget < 0)
      throw ConfigError(locate(path, node.Mark().line + 1) + ": the config expands to more than " +
                        std::to_string(kMaxValues) + " values (aliases of aliases?); write it out without them");
    if (depth > kMaxDepth && (node.IsSequence() || node.IsMap()))
      throw ConfigError(locate(path, node.Mark().line + 1) + ": nested more than " + std::to_string(kMaxDepth) +
                        " levels deep; a config nests a few (model.layers[0].attention.heads), and an alias inside "
                        "its own anchor ('&a [*a]') nests forever");
    if (node.IsSequence())
      for (size_t i = 0; i < node.size(); ++i)
        check_keys(node[i], path + "[" + std::to_string(i) + "]", depth + 1, budget);
    if (!node.IsMap()) return;
    std::map<std::string, int> first_line;
    for (const auto& kv : node) {
      const int line = kv.first.Mark().line + 1;
      if (!kv.first.IsScalar()) throw ConfigError(locate(path, line) + ": keys must be plain names");
      const std::string key_path = join(path, kv.first.Scalar());
      auto [it, inserted] = first_line.emplace(kv.first.Scalar(), line);
      if (!inserted)
        throw ConfigError(locate(key_path, line) + ": duplicate key (first given on line " +
                          std::to_string(it->second) + ")");
      check_keys(kv.second, key_path, depth + 1, budget);
    }
  }
};

Config::Config(std::shared_ptr<Document> doc, YAML::Node node, std::string path, int line)
    : doc_(std::move(doc)), node_(std::move(node)), path_(std::move(path)), line_(line) {}

Config Config::load_file(const std::string& path) {
  std::string text;
  try {
    if (!regular_file_or_absent(path)) throw ConfigError("cannot open config file '" + path + "'");
    text = read_regular_file(path, kMaxConfigBytes, "config file");
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {  // a device, a directory, a file of gigabytes: the config is wrong, exit 2
    throw ConfigError(e.what());
  }
  return parse(text, path);
}

Config Config::parse(const std::string& yaml_text, const std::string& name) {
  const auto syntax_error = [&](const YAML::Mark& mark, const std::string& what) {
    return ConfigError(name + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) +
                       ": YAML syntax error: " + what);
  };
  YAML::Node root;
  try {
    // YAML::Load would read the first document and drop the rest unseen
    const std::vector<YAML::Mark> starts = document_starts(yaml_text);
    if (starts.size() == 2 && starts[0].pos == starts[1].pos) {
      const char c = static_cast<size_t>(starts[1].pos) < yaml_text.size() ? yaml_text[starts[1].pos] : ' ';
      throw syntax_error(starts[1], "unexpected '" + std::string(1, c) + "'");
    }
    if (starts.size() == 2)
      throw ConfigError(name + ":" + std::to_string(starts[1].line + 1) +
                        ": a second YAML document (after '---'): a config is one document; remove the '---' line");
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw syntax_error(e.mark, e.msg);
  }
  if (root.IsNull()) throw ConfigError(name + ":1: the file is empty");
  auto doc = std::make_shared<Document>();
  doc->file = name;
  int64_t budget = kMaxValues;
  doc->check_keys(root, "", 0, budget);
  Config config(doc, root, "", 1);
  if (!root.IsMap()) config.fail("expected a mapping of settings at the top level, got " + describe(root));
  return config;
}

void Config::apply_override(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  // the label names the override in messages: the key whole, the value shortened as quoted() does
  const std::string label =
      "--set " + (eq == std::string::npos || assignment.size() - eq <= 80
                      ? assignment
                      : assignment.substr(0, eq + 1) + quoted(assignment.substr(eq + 1)));
  if (eq == std::string::npos) throw ConfigError(label + ": expected KEY=VALUE, e.g. train.lr=3e-4");
  const std::vector<std::string> parts = split(assignment.substr(0, eq), '.');
  if (std::ranges::any_of(parts, [](const std::string& part) { return part.empty(); }))
    throw ConfigError(label + ": the key must be dot-separated names, e.g. train.lr=3e-4");
  if (parts.size() > kMaxDepth)
    throw ConfigError(label + ": the key has " + std::to_string(parts.size()) + " parts; a config nests at most " +
                      std::to_string(kMaxDepth) + " levels");
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError(label + ": YAML syntax error in the value: " + e.msg);
  }

  // Walk to the parent of the last component. Node::reset rebinds the handle; `node = ...` would overwrite the node.
  YAML::Node node = node_;
  std::string path = path_;
  std::string created;  // the outermost mapping this override creates: everything below it comes from the override
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (node.IsSequence()) {
      const std::optional<int64_t> index = parse_integer(parts[i]);
      if (!index || *index < 0 || *index >= static_cast<int64_t>(node.size()))
        throw ConfigError(label + ": " + path + " has no element '" + parts[i] + "' (it has " +
                          std::to_string(node.size()) + ")");
      path += "[" + std::to_string(*index) + "]";
      if (last) {
        node[static_cast<size_t>(*index)] = value;
      } else {
        node.reset(node[static_cast<size_t>(*index)]);
      }
    } else if (node.IsMap()) {
      path = join(path, parts[i]);
      const YAML::Node& map = node;  // const access: looking up a missing key does not insert it
      if (last) {
        node[parts[i]] = value;
      } else if (map[parts[i]].IsDefined()) {
        node.reset(node[parts[i]]);
      } else {
        node.reset(node[parts[i]] = YAML::Node(YAML::NodeType::Map));
        if (created.empty()) created = path;
      }
    } else {
      throw ConfigError(label + ": " + path + " is " + describe(node) + ", not a mapping or a sequence");
    }
  }

  const std::string& source = created.empty() ? path : created;
  std::erase_if(doc_->overrides, [&](const auto& entry) { return within(entry.first, source); });
  doc_->overrides[source] = label;
  int64_t budget = kMaxValues;
  doc_->check_keys(value, path, static_cast<int>(parts.size()), budget);
}

YAML::Node Config::lookup(const std::string& key) const {
  if (!node_.IsMap()) fail("expected a mapping, got " + describe(node_));
  return node_[key];  // node_ is const here, so a missing key is not inserted
}

void Config::mark_read(const std::string& key) const { doc_->read[path_].insert(key); }

int Config::line_of(const std::string& key) const {
  if (node_.IsMap())
    for (const auto& kv : node_)
      if (kv.first.Scalar() == key) return kv.first.Mark().line + 1;
  return line_;
}

std::string Config::child_path(const std::string& key) const { return join(path_, key); }


Config Config::value(const std::string& key) const {
  mark_read(key);
  YAML::Node node = lookup(key);
  if (!node.IsDefined()) fail("missing required key '" + key + "'" + renamed_hint(node_, doc_->read[path_], key));
  return Config(doc_, node, child_path(key), line_of(key));
}

bool Config::has(const std::string& key) const { return lookup(key).IsDefined(); }

Config Config::child(const std::string& key) const {
  Config child = value(key);
  if (!child.node_.IsMap() && !child.node_.IsSequence())
    child.fail("expected a mapping or a sequence, got " + describe(child.node_));
  return child;
}

std::optional<Config> Config::optional_child(const std::string& key) const {
  mark_read(key);
  if (!has(key)) return std::nullopt;
  return child(key);
}

std::vector<Config> Config::items() const {
  if (!node_.IsSequence()) fail("expected a sequence, got " + describe(node_));
  std::vector<Config> items;
  for (size_t i = 0; i < node_.size(); ++i)
    items.push_back(Config(doc_, node_[i], path_ + "[" + std::to_string(i) + "]", node_[i].Mark().line + 1));
  return items;
}

std::vector<std::string> Config::keys() const {
  if (!node_.IsMap()) fail("expected a mapping, got " + describe(node_));
  std::vector<std::string> keys;
  for (const auto& kv : node_) keys.push_back(kv.first.Scalar());
  return keys;
}

template <>
bool Config::as<bool>() const {
  bool value = false;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, value))
    fail("expected true or false, got " + describe(node_));
  return value;
}

template <>
int64_t Config::as<int64_t>() const {
  const std::optional<int64_t> value = node_.IsScalar() ? parse_integer(node_.Scalar()) : std::nullopt;
  if (!value) fail("expected an integer, got " + describe(node_));
  return *value;
}

template <>
int Config::as<int>() const {
  const int64_t value = as<int64_t>();
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    fail("expected an integer from -2147483648 to 2147483647, got " + describe(node_));
  return static_cast<int>(value);
}

template <>
double Config::as<double>() const {
  const std::optional<double> value = node_.IsScalar() ? parse_number(node_.Scalar()) : std::nullopt;
  if (!value) fail("expected a number, got " + describe(node_));
  return *value;
}

template <>
float Config::as<float>() const {
  const double value = as<double>();
  if (std::abs(value) > std::numeric_limits<float>::max())
    fail("expected a number in float range, got " + describe(node_));
  return static_cast<float>(value);
}

template <>
std::string Config::as<std::string>() const {
  if (!node_.IsScalar()) fail("expected a string, got " + describe(node_));
  return node_.Scalar();
}

template <>
std::vector<int64_t> Config::as<std::vector<int64_t>>() const {
  std::vector<int64_t> values;
  for (const Config& item : items()) values.push_back(item.as<int64_t>());
  return values;
}

template <>
std::vector<std::string> Config::as<std::vector<std::string>>() const {
  std::vector<std::string> values;
  for (const Config& item : items()) values.push_back(item.as<std::string>());
  return values;
}

template <ConfigValue T>
T Config::get(const std::string& key) const {
  return value(key).as<T>();
}

template <ConfigValue T>
T Config::get(const std::string& key, const T& fallback) const {
  mark_read(key);
  return has(key) ? value(key).as<T>() : fallback;
}

#define HR_CONFIG_GET(T)                               \
  template T Config::get<T>(const std::string&) const; \
  template T Config::get<T>(const std::string&, const T&) const;
HR_CONFIG_GET(bool)
HR_CONFIG_GET(int64_t)
HR_CONFIG_GET(int)
HR_CONFIG_GET(double)
HR_CONFIG_GET(float)
HR_CONFIG_GET(std::string)
HR_CONFIG_GET(std::vector<int64_t>)
HR_CONFIG_GET(std::vector<std::string>)
#undef HR_CONFIG_GET

int64_t Config::get_positive(const std::string& key) const {
  const Config setting = value(key);
  const std::optional<int64_t> n = setting.node_.IsScalar() ? parse_integer(setting.node_.Scalar()) : std::nullopt;
  if (!n || *n <= 0) setting.fail("expected a positive integer, got " + describe(setting.node_));
  return *n;
}

int64_t Config::get_positive(const std::string& key, int64_t fallback) const {
  mark_read(key);
  return has(key) ? get_positive(key) : fallback;
}

float Config::get_fraction(const std::string& key, float fallback) const {
  const float f = get<float>(key, fallback);
  if (has(key) && !(f >= 0.f && f < 1.f)) fail(key, "must be in [0, 1)");
  return f;
}

std::string Config::get_choice(const std::string& key, std::initializer_list<const char*> choices,
                               const char* fallback) const {
  return get_choice(key, std::vector<std::string>(choices.begin(), choices.end()), fallback);
}

std::string Config::get_choice(const std::string& key, const std::vector<std::string>& allowed,
                               const char* fallback) const {
  mark_read(key);
  if (fallback && !has(key)) return fallback;
  const Config choice = value(key);
  const std::string text = choice.as<std::string>();
  if (std::ranges::find(allowed, text) != allowed.end()) return text;
  std::string list;
  for (const std::string& name : allowed) list += (list.empty() ? "'" : ", '") + name + "'";
  choice.fail("expected one of " + list + ", got " + quoted(text) + suggestion(text, allowed));
}

void Config::fail(const std::string& key, const std::string& what) const {
  throw ConfigError(doc_->locate(child_path(key), line_of(key)) + ": " + what);
}

void Config::fail(const std::string& what) const { throw ConfigError(doc_->locate(path_, line_) + ": " + what); }

void Config::check_all_read() const {
  std::vector<std::string> errors;
  collect_unread(errors);
  if (errors.empty()) return;
  std::string message;
  for (const std::string& error : errors) message += (message.empty() ? "" : "\n") + error;
  throw ConfigError(message);
}

void Config::collect_unread(std::vector<std::string>& errors) const {
  if (node_.IsSequence())
    for (const Config& item : items()) item.collect_unread(errors);
  if (!node_.IsMap()) return;
  const auto found = doc_->read.find(path_);
  std::vector<std::string> read;
  if (found != doc_->read.end()) read.assign(found->second.begin(), found->second.end());
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    const Config child(doc_, kv.second, child_path(key), kv.first.Mark().line + 1);
    if (std::ranges::find(read, key) != read.end())
      child.collect_unread(errors);
    else
      errors.push_back(doc_->locate(child.path_, child.line_) + ": unknown key" + suggestion(key, read));
  }
}

std::string Config::dump() const {
  YAML::Emitter out;
  out << node_;
  return std::string(out.c_str()) + "\n";
}

const std::string& Config::file() const { return doc_->file; }

void require_file(const Config& c, const std::string& key, const std::string& path) {
  std::error_code ec;  // the error_code form: found by tests/fuzz/fuzz_config.cpp
  const bool exists = std::filesystem::exists(path, ec);
  if (ec) c.fail(key, "cannot access '" + path + "': " + ec.message());
  if (!exists) c.fail(key, "no such file '" + path + "'");
  // a device (/dev/zero) or a FIFO would be read forever, a directory fails later without the key
  if (!std::filesystem::is_regular_file(path, ec))
    c.fail(key, "'" + path + "' is not a regular file (a directory, a device or a pipe): name a file");
}

int64_t at_most(const Config& c, const std::string& key, int64_t value, int64_t limit) {
  if (value > limit) c.fail(key, "must be at most " + std::to_string(limit) + ", got " + std::to_string(value));
  return value;
}

}  // namespace hr
