#include "train/tokenizer/vocab.h"

#include "framework/atomic_file.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"

namespace hr {

namespace {
constexpr uint64_t kMaxVocabBytes = 1ull << 30;  // 2^24 tokens (tokenizer.vocab_size's bound) of 64 bytes
}  // namespace

Vocab::Vocab(std::vector<std::string> tokens, const std::string& origin) : tokens_(std::move(tokens)) {
  ids_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    if (t.empty()) throw Error(origin + ":" + std::to_string(i + 1) + ": empty token");
    const auto [it, inserted] = ids_.emplace(t, static_cast<int32_t>(i));
    if (!inserted) {
      throw Error(origin + ":" + std::to_string(i + 1) + ": duplicate token '" + t + "' (first on line " +
                  std::to_string(it->second + 1) + ")");
    }
  }
  const auto required = [&](const char* name) {
    const auto id = find(name);
    if (!id) throw Error(origin + ": vocabulary has no " + name + " token");
    return *id;
  };
  pad_ = required("[PAD]");
  unk_ = required("[UNK]");
  cls_ = required("[CLS]");
  sep_ = required("[SEP]");
  mask_ = find("[MASK]");
}

Vocab Vocab::load(const std::string& path) {
  const std::string text = read_regular_file(path, kMaxVocabBytes, "vocabulary");
  // taken as part of the first token, it would rename it ("\xEF\xBB\xBF[PAD]"): say so rather than "no [PAD]"
  if (text.starts_with("\xEF\xBB\xBF"))
    throw Error(path + ": starts with a UTF-8 byte order mark (BOM); save the vocabulary as UTF-8 without one");

  std::vector<std::string> tokens;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    tokens.emplace_back(line);
    start = end + 1;
  }
  return Vocab(std::move(tokens), path);
}

void Vocab::save(const std::string& path) const {
  write_file_atomically(path, [&](std::ostream& out) {
    for (const std::string& t : tokens_) out << t << '\n';
  });
}

std::optional<int32_t> Vocab::find(std::string_view token) const {
  const auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

int32_t Vocab::id(std::string_view token) const {
  const auto id = find(token);
  if (!id) throw Error("token '" + std::string(token) + "' is not in the vocabulary");
  return *id;
}

const std::string& Vocab::token(int32_t id) const {
  if (id < 0 || id >= size()) {
    throw Error("token id " + std::to_string(id) + " is out of range [0, " + std::to_string(size()) + ")");
  }
  return tokens_[static_cast<size_t>(id)];
}

bool Vocab::is_special(int32_t id) const {
  return id == pad_ || id == unk_ || id == cls_ || id == sep_ || (mask_ && id == *mask_);
}

}  // namespace hr
