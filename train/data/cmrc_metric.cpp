#include "train/data/cmrc_metric.h"

#include <utf8proc.h>

#include <algorithm>

#include "train/data/squad_metric.h"
#include "train/tokenizer/utf8.h"

namespace hr {
namespace {

// The script's sp_char list. Its "……" is one two-character entry, which a single character never equals: a lone
// '…' is kept, as there.
constexpr char32_t kPunctuation[] = {U'-',  U':',  U'_',  U'*',  U'^',  U'/',  U'\\', U'~',  U'`',  U'+',  U'=',
                                     U'，', U'。', U'：', U'？', U'！', U'“',  U'”',  U'；', U'’',  U'《', U'》',
                                     U'·',  U'、', U'「', U'」', U'（', U'）', U'－', U'～', U'『', U'』'};

bool is_punctuation(char32_t cp) {
  return std::find(std::begin(kPunctuation), std::end(kPunctuation), cp) != std::end(kPunctuation);
}

// re.search(u'[\u4e00-\u9fa5]', char)
bool is_chinese(char32_t cp) { return cp >= 0x4E00 && cp <= 0x9FA5; }

// The code points of text.lower().strip(), less the punctuation (ill-formed bytes are U+FFFD, see utf8.h).
std::u32string without_punctuation(std::string_view text) {
  std::u32string cps = utf8::decode(python_lower(text)).code_points;
  const auto space = [](char32_t cp) { return is_python_space(static_cast<int32_t>(cp)); };
  const auto first = std::find_if_not(cps.begin(), cps.end(), space);
  const auto last = std::find_if_not(cps.rbegin(), std::make_reverse_iterator(first), space).base();
  std::u32string out;
  std::copy_if(first, last, std::back_inserter(out), [](char32_t cp) { return !is_punctuation(cp); });
  return out;
}

bool is_ascii_punctuation(char32_t cp) {
  return cp > 0x20 && cp < 0x7F && !((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'));
}

// A run of characters between Chinese ones into words (see cmrc_segments in the header).
void split_words(std::u32string_view run, std::vector<std::string>& out) {
  const auto space = [](char32_t cp) { return is_python_space(static_cast<int32_t>(cp)); };
  for (size_t i = 0; i < run.size();) {
    if (space(run[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < run.size() && !space(run[end])) ++end;
    size_t word_begin = i, word_end = end;
    while (word_begin < word_end && is_ascii_punctuation(run[word_begin]))
      out.push_back(utf8::encode(run.substr(word_begin++, 1)));
    while (word_end > word_begin && is_ascii_punctuation(run[word_end - 1])) --word_end;
    if (word_begin < word_end) out.push_back(utf8::encode(run.substr(word_begin, word_end - word_begin)));
    for (size_t k = word_end; k < end; ++k) out.push_back(utf8::encode(run.substr(k, 1)));
    i = end;
  }
}

// Length of the longest common contiguous run of segments (the script's find_lcs).
size_t longest_common_run(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<size_t> previous(b.size() + 1, 0), current(b.size() + 1, 0);
  size_t best = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < b.size(); ++j) {
      current[j + 1] = a[i] == b[j] ? previous[j] + 1 : 0;
      best = std::max(best, current[j + 1]);
    }
    std::swap(previous, current);
  }
  return best;
}

}  // namespace

std::vector<std::string> cmrc_segments(std::string_view text) {
  const std::u32string cps = without_punctuation(text);
  std::vector<std::string> segments;
  size_t run_begin = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!is_chinese(cps[i])) continue;
    split_words(std::u32string_view(cps).substr(run_begin, i - run_begin), segments);
    segments.push_back(utf8::encode(cps.substr(i, 1)));
    run_begin = i + 1;
  }
  split_words(std::u32string_view(cps).substr(run_begin), segments);
  return segments;
}

double cmrc_exact_match(std::string_view prediction, std::string_view gold) {
  return without_punctuation(prediction) == without_punctuation(gold) ? 1.0 : 0.0;
}

double cmrc_f1(std::string_view prediction, std::string_view gold) {
  const std::vector<std::string> predicted = cmrc_segments(prediction), expected = cmrc_segments(gold);
  const size_t common = longest_common_run(predicted, expected);
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(predicted.size());
  const double recall = static_cast<double>(common) / static_cast<double>(expected.size());
  return 2 * precision * recall / (precision + recall);
}

bool is_chinese_qa(const std::vector<QaExample>& gold) {
  int64_t letters = 0, chinese = 0;
  const auto count = [&](std::string_view text) {
    for (const char32_t cp : utf8::decode(text).code_points) {
      const utf8proc_category_t c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
      if (c < UTF8PROC_CATEGORY_LU || c > UTF8PROC_CATEGORY_LO) continue;
      ++letters;
      chinese += is_chinese(cp) ? 1 : 0;
    }
  };
  for (const QaExample& q : gold) {
    count(q.question);
    for (const Answer& a : q.answers) count(a.text);
  }
  return letters > 0 && 2 * chinese >= letters;
}

}  // namespace hr
