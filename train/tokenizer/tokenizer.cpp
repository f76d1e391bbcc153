#include "train/tokenizer/tokenizer.h"

namespace hr {

Encoding Tokenizer::encode(std::string_view text) const {
  Encoding enc;
  for (const Word& word : basic_.split(text)) wordpiece_.tokenize(word, enc.ids, enc.offsets);
  return enc;
}

std::vector<std::string> Tokenizer::tokens(std::string_view text) const {
  std::vector<std::string> out;
  for (int32_t id : encode(text).ids) out.push_back(vocab().token(id));
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    const std::string& token = vocab().token(id);
    if (id != vocab().unk_id() && vocab().is_special(id)) continue;
    if (token.starts_with("##") && !out.empty()) {
      out.append(token, 2);
    } else {
      if (!out.empty()) out.push_back(' ');
      out.append(token);
    }
  }
  return out;
}

}  // namespace hr
