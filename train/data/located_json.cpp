#include "train/data/located_json.h"

#include <iterator>
#include <vector>

#include "framework/bounded_json.h"

namespace hr {

namespace {

bool is_plain_key(const std::string& key) {
  if (key.empty() || (key[0] >= '0' && key[0] <= '9')) return false;
  for (const char c : key) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!word) return false;
  }
  return true;
}

// Walks the text for nlohmann's parser and publishes how many bytes it has consumed. The lexer reads a '{' or '['
// and reports start_object/start_array before reading further, so at that event the bracket is the last byte read.
struct CountingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  const char* at;
  const char* begin;
  size_t* consumed;

  reference operator*() const { return *at; }
  CountingIterator& operator++() {
    ++at;
    *consumed = static_cast<size_t>(at - begin);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& other) const { return at == other.at; }
  bool operator!=(const CountingIterator& other) const { return at != other.at; }
};

// SAX handler that only records the json path and start offset of every object and array.
class ContainerLocator : public nlohmann::json_sax<nlohmann::json> {
 public:
  ContainerLocator(const size_t* consumed, std::unordered_map<std::string, size_t>* offsets)
      : consumed_(consumed), offsets_(offsets) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& key) override {
    open_.back().key = key;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Open {
    std::string path;
    bool is_array;
    size_t next_index = 0;
    std::string key;
  };

  // The path of the value that starts now, inside the innermost open container (which then moves to its next index).
  std::string next_value_path() {
    if (open_.empty()) return "";
    Open& parent = open_.back();
    return parent.is_array ? json_index_path(parent.path, parent.next_index++)
                           : json_child_path(parent.path, parent.key);
  }
  bool scalar() {
    if (skipped_depth_ == 0 && !open_.empty()) ++open_.back().next_index;
    return true;
  }
  bool open(bool is_array) {
    if (skipped_depth_ > 0 || open_.size() == kMaxLocatedDepth) {
      if (skipped_depth_++ == 0) ++open_.back().next_index;
      return true;
    }
    std::string path = next_value_path();
    (*offsets_)[path] = *consumed_ - 1;
    open_.push_back({std::move(path), is_array, 0, {}});
    return true;
  }
  bool close() {
    if (skipped_depth_ > 0) {
      --skipped_depth_;
    } else {
      open_.pop_back();
    }
    return true;
  }

  // The datasets nest a handful of levels; paths of deeper containers are not kept, as their total length grows with
  // the square of the depth of a hostile file.
  static constexpr size_t kMaxLocatedDepth = 16;
  const size_t* consumed_;
  std::unordered_map<std::string, size_t>* offsets_;
  std::vector<Open> open_;
  size_t skipped_depth_ = 0;  // how many containers deeper than kMaxLocatedDepth are open
};

}  // namespace

std::string json_child_path(const std::string& parent, const std::string& key) {
  if (is_plain_key(key)) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "]";
}

std::string json_index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

LocatedJson LocatedJson::parse_file(const std::string& path) {
  const std::string text = read_data_file(path);
  return LocatedJson(path, text);
}

LocatedJson::LocatedJson(std::string path, std::string_view text) : path_(std::move(path)), lines_(text) {
  root_ = parse_json_text(text, path_);
  size_t consumed = 0;
  ContainerLocator locator(&consumed, &container_offsets_);
  const char* data = text.data();
  nlohmann::json::sax_parse(CountingIterator{data, data, &consumed},
                            CountingIterator{data + text.size(), data, &consumed}, &locator);
}

int64_t LocatedJson::line_of(const std::string& json_path) const {
  const auto found = container_offsets_.find(json_path);
  return found == container_offsets_.end() ? 0 : lines_.line_of(found->second);
}

std::string LocatedJson::where(const std::string& json_path, const std::string& line_path) const {
  int64_t line = line_of(json_path);
  if (line == 0) line = line_of(line_path);
  const std::string at = line > 0 ? path_ + ":" + std::to_string(line) : path_;
  return json_path.empty() ? at : at + " (" + json_path + ")";
}

}  // namespace hr
