#include "train/data/conll_data.h"

#include "train/data/data_file.h"
#include "train/data/utf8_codepoints.h"

namespace hr {

namespace {

std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

std::string iob_tag_problem(const std::string& tag) {
  if (tag == "O") return "";
  if (tag.size() > 2 && (tag[0] == 'B' || tag[0] == 'I') && tag[1] == '-') return "";
  return "tag '" + tag + "' is not O, B-TYPE or I-TYPE (IOB)";
}

ConllData parse_conll(std::string_view text, const std::string& name, OnError on_error) {
  ConllData out;
  TaggedSentence sentence;
  bool bad = false;  // the sentence being read had an issue: it is skipped whole
  const auto finish = [&]() {
    if (!bad && !sentence.words.empty()) out.sentences.push_back(std::move(sentence));
    sentence = TaggedSentence{};
    bad = false;
  };
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t begin = 0;
  for (int64_t line_number = 1; begin < text.size(); ++line_number) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string> fields = fields_of(line);
    if (fields.empty()) {
      finish();
      continue;
    }
    if (fields[0] == "-DOCSTART-") {
      finish();
      continue;
    }
    const std::string where = name + ":" + std::to_string(line_number);
    if (sentence.words.empty() && !bad) sentence.source = where;
    if (bad) continue;
    std::string problem;
    if (!is_valid_utf8(line)) problem = "invalid UTF-8";
    else if (fields.size() < 2) problem = "expected a token and its tag, separated by white space";
    else problem = iob_tag_problem(fields.back());
    if (!problem.empty()) {
      report_issue(out.issues, on_error, {where, problem + " (the sentence is skipped)"});
      bad = true;
      continue;
    }
    sentence.words.push_back(fields.front());
    sentence.tags.push_back(fields.back());
  }
  finish();
  return out;
}

ConllData load_conll(const std::string& path, OnError on_error) {
  return parse_conll(read_data_file(path), path, on_error);
}

std::vector<EntitySpan> entity_spans(const std::vector<std::string>& tags) {
  std::vector<EntitySpan> spans;
  bool open = false;
  for (size_t i = 0; i < tags.size(); ++i) {
    const std::string& t = tags[i];
    if (t.size() < 3 || (t[0] != 'B' && t[0] != 'I') || t[1] != '-') {  // O (or anything that is not an entity tag)
      open = false;
      continue;
    }
    const std::string type = t.substr(2);
    if (t[0] == 'B' || !open || spans.back().type != type) {
      spans.push_back({static_cast<int64_t>(i), static_cast<int64_t>(i), type});
      open = true;
    }
    spans.back().end = static_cast<int64_t>(i) + 1;
  }
  return spans;
}

std::map<std::string, double> entity_scores(const std::vector<std::vector<std::string>>& gold,
                                            const std::vector<std::vector<std::string>>& pred) {
  int64_t found = 0, guessed = 0, correct = 0, words = 0, right = 0;
  for (size_t s = 0; s < gold.size(); ++s) {
    const std::vector<EntitySpan> g = entity_spans(gold[s]), p = entity_spans(pred[s]);
    found += static_cast<int64_t>(g.size());
    guessed += static_cast<int64_t>(p.size());
    for (const EntitySpan& e : p)
      for (const EntitySpan& f : g) correct += e == f;
    for (size_t w = 0; w < gold[s].size(); ++w, ++words) right += w < pred[s].size() && pred[s][w] == gold[s][w];
  }
  const double precision = guessed ? static_cast<double>(correct) / static_cast<double>(guessed) : 0.0;
  const double recall = found ? static_cast<double>(correct) / static_cast<double>(found) : 0.0;
  return {{"precision", precision},
          {"recall", recall},
          {"f1", precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0},
          {"accuracy", words ? static_cast<double>(right) / static_cast<double>(words) : 0.0}};
}

}  // namespace hr
