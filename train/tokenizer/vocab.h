// A WordPiece vocabulary: one token per line of vocab.txt, the line number (from 0) is the id.
//
// Lines are split on '\n' only (a trailing '\r' is stripped): bert-base-chinese holds U+2028 as a token, so a
// splitter that treats Unicode line separators as newlines would shift every later id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hr {

class Vocab {
 public:
  // Validates: no empty or duplicate token, and [PAD] [UNK] [CLS] [SEP] present ([MASK] is optional).
  // `origin` names the source (a file path) in error messages.
  explicit Vocab(std::vector<std::string> tokens, const std::string& origin = "<vocab>");

  static Vocab load(const std::string& path);
  void save(const std::string& path) const;  // one token per line, '\n'-terminated; load(save(v)) == v

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  std::optional<int32_t> find(std::string_view token) const;
  int32_t id(std::string_view token) const;     // throws hr::Error when absent
  const std::string& token(int32_t id) const;  // throws hr::Error when out of range
  const std::vector<std::string>& tokens() const { return tokens_; }

  int32_t pad_id() const { return pad_; }
  int32_t unk_id() const { return unk_; }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  std::optional<int32_t> mask_id() const { return mask_; }
  bool is_special(int32_t id) const;  // one of [PAD] [UNK] [CLS] [SEP] [MASK]

 private:
  // Transparent hashing lets lookups take a string_view without building a std::string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
  int32_t pad_, unk_, cls_, sep_;
  std::optional<int32_t> mask_;
};

}  // namespace hr
