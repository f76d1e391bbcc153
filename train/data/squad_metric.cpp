#include "train/data/squad_metric.h"

#include <utf8proc.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/base/error.h"
#include "train/data/cmrc_metric.h"
#include "train/data/utf8_codepoints.h"
#include "train/tokenizer/unicode_case.h"
#include "train/tokenizer/utf8.h"

namespace hr {

namespace {

// Code points of a string (ill-formed bytes become U+FFFD, see train/tokenizer/utf8.h), and back.
std::vector<int32_t> decode(std::string_view text) {
  const std::u32string cps = utf8::decode(text).code_points;
  return std::vector<int32_t>(cps.begin(), cps.end());
}

std::string encode(const std::vector<int32_t>& cps) {
  std::string out;
  for (const int32_t cp : cps) utf8::append(out, static_cast<char32_t>(cp));
  return out;
}

// Python's str.lower(): the simple mapping plus SpecialCasing's unconditional one (U+0130) and Final_Sigma.
std::vector<int32_t> python_lower(const std::vector<int32_t>& cps) {
  std::vector<int32_t> out;
  out.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const int32_t cp = cps[i];
    if (cp == 0x130) {
      out.push_back('i');
      out.push_back(0x307);
    } else if (cp == 0x3A3) {
      out.push_back(is_final_sigma(i, cps.size(), [&](size_t k) { return static_cast<char32_t>(cps[k]); }) ? 0x3C2
                                                                                                         : 0x3C3);
    } else {
      out.push_back(utf8proc_tolower(cp));
    }
  }
  return out;
}

// Python's string.punctuation.
bool is_ascii_punctuation(int32_t cp) {
  return cp < 0x80 &&
         std::string_view("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~").find(static_cast<char>(cp)) != std::string_view::npos;
}

// Python's re \w on str: str.isalnum() (letters and numbers of any script) or '_'.
bool is_word(int32_t cp) {
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: return true;
    default: return cp == '_';
  }
}

bool is_article(const std::vector<int32_t>& cps, size_t begin, size_t end) {
  const auto equals = [&](std::string_view word) {
    if (end - begin != word.size()) return false;
    for (size_t k = 0; k < word.size(); ++k) {
      if (cps[begin + k] != word[k]) return false;
    }
    return true;
  };
  return equals("a") || equals("an") || equals("the");
}

std::vector<std::string> tokens_of(const std::string& normalized) {
  std::vector<std::string> tokens;
  size_t begin = 0;
  while (begin < normalized.size()) {
    size_t end = normalized.find(' ', begin);
    if (end == std::string::npos) end = normalized.size();
    tokens.push_back(normalized.substr(begin, end - begin));
    begin = end + 1;
  }
  return tokens;
}

}  // namespace

bool is_python_space(int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string python_lower(std::string_view text) { return encode(python_lower(decode(text))); }

std::string normalize_squad_answer(std::string_view text) {
  std::vector<int32_t> lowered = python_lower(decode(text));

  std::vector<int32_t> no_punct;
  no_punct.reserve(lowered.size());
  std::copy_if(lowered.begin(), lowered.end(), std::back_inserter(no_punct),
               [](int32_t cp) { return !is_ascii_punctuation(cp); });

  // re.sub(r'\b(a|an|the)\b', ' ', s): a match is exactly a whole run of word characters.
  std::vector<int32_t> no_articles;
  no_articles.reserve(no_punct.size());
  for (size_t i = 0; i < no_punct.size();) {
    if (!is_word(no_punct[i])) {
      no_articles.push_back(no_punct[i++]);
      continue;
    }
    size_t end = i;
    while (end < no_punct.size() && is_word(no_punct[end])) ++end;
    if (is_article(no_punct, i, end)) {
      no_articles.push_back(' ');
    } else {
      no_articles.insert(no_articles.end(), no_punct.begin() + i, no_punct.begin() + end);
    }
    i = end;
  }

  // ' '.join(s.split())
  std::vector<int32_t> joined;
  joined.reserve(no_articles.size());
  for (size_t i = 0; i < no_articles.size();) {
    if (is_python_space(no_articles[i])) {
      ++i;
      continue;
    }
    if (!joined.empty()) joined.push_back(' ');
    while (i < no_articles.size() && !is_python_space(no_articles[i])) joined.push_back(no_articles[i++]);
  }
  return encode(joined);
}

double squad_exact_match(std::string_view prediction, std::string_view gold) {
  return normalize_squad_answer(prediction) == normalize_squad_answer(gold) ? 1.0 : 0.0;
}

double squad_f1(std::string_view prediction, std::string_view gold) {
  const std::vector<std::string> predicted = tokens_of(normalize_squad_answer(prediction));
  const std::vector<std::string> expected = tokens_of(normalize_squad_answer(gold));
  std::map<std::string, int64_t> gold_counts;  // Counter(gold) & Counter(prediction): the multiset intersection
  for (const std::string& token : expected) ++gold_counts[token];
  int64_t same = 0;
  for (const std::string& token : predicted) {
    auto it = gold_counts.find(token);
    if (it != gold_counts.end() && it->second > 0) {
      --it->second;
      ++same;
    }
  }
  if (same == 0) return 0.0;
  const double precision = 1.0 * static_cast<double>(same) / static_cast<double>(predicted.size());
  const double recall = 1.0 * static_cast<double>(same) / static_cast<double>(expected.size());
  return (2 * precision * recall) / (precision + recall);
}

QaMetric parse_qa_metric(const std::string& name) {
  if (name == "auto") return QaMetric::automatic;
  if (name == "squad") return QaMetric::squad;
  if (name == "cmrc") return QaMetric::cmrc;
  throw ConfigError("QA metric must be one of auto, squad, cmrc; got '" + name + "'");
}

SquadScore evaluate_squad(const std::vector<QaExample>& gold, const std::map<std::string, std::string>& predictions,
                          QaMetric metric) {
  HR_CHECK(!gold.empty(), "evaluate_squad: no gold questions");
  if (metric == QaMetric::automatic) metric = is_chinese_qa(gold) ? QaMetric::cmrc : QaMetric::squad;
  const bool cmrc = metric == QaMetric::cmrc;
  SquadScore score;
  score.metric = cmrc ? "cmrc" : "squad";
  int64_t exact = 0;
  double f1_sum = 0;
  for (const QaExample& question : gold) {
    HR_CHECK(!question.answers.empty(), "evaluate_squad: question " + question.id + " has no gold answer");
    ++score.questions;
    const auto predicted = predictions.find(question.id);
    if (predicted == predictions.end()) {
      ++score.unanswered;
      continue;
    }
    double best_em = 0, best_f1 = 0;
    for (const Answer& answer : question.answers) {
      const std::string& p = predicted->second;
      best_em = std::max(best_em, cmrc ? cmrc_exact_match(p, answer.text) : squad_exact_match(p, answer.text));
      best_f1 = std::max(best_f1, cmrc ? cmrc_f1(p, answer.text) : squad_f1(p, answer.text));
    }
    exact += static_cast<int64_t>(best_em);
    f1_sum += best_f1;
  }
  score.exact_match = 100.0 * static_cast<double>(exact) / static_cast<double>(score.questions);
  score.f1 = 100.0 * f1_sum / static_cast<double>(score.questions);
  return score;
}

void write_predictions_json(const std::string& path, const std::map<std::string, std::string>& predictions) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [id, answer] : predictions) {
    HR_CHECK(is_valid_utf8(id), path + ": a question id is not valid UTF-8");
    HR_CHECK(is_valid_utf8(answer), path + ": the answer to question " + id + " is not valid UTF-8");
    out[id] = answer;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  HR_CHECK(file, path + ": cannot open for writing");
  file << out.dump(2, ' ', false) << '\n';
  file.close();
  HR_CHECK(file, path + ": write failed");
}

}  // namespace hr
