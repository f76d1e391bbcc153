#include "train/data/squad_data.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_set>

#include "kernels/base/error.h"
#include "train/data/located_json.h"
#include "train/data/utf8_codepoints.h"

namespace hr {

namespace {

using nlohmann::json;

std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

// If answer_start is a UTF-16 code-unit offset (as CMRC 2018 trial's are), the code point it stands for; the message
// then says so. offsets: code-point offsets of the context.
std::optional<int64_t> utf16_reading(std::string_view context, const std::vector<size_t>& offsets,
                                     const Answer& answer) {
  int64_t units = 0;
  for (size_t k = 0; k + 1 < offsets.size() && units <= answer.start; ++k) {
    if (units == answer.start && context.substr(offsets[k], answer.text.size()) == answer.text) {
      return static_cast<int64_t>(k);
    }
    units += offsets[k + 1] - offsets[k] == 4 ? 2 : 1;  // code points above U+FFFF take a surrogate pair
  }
  return std::nullopt;
}

// "" when answer.text sits at code point answer.start of the context; else what is there instead.
std::string misplacement(std::string_view context, const std::vector<size_t>& offsets, const Answer& answer) {
  const int64_t length = utf8_codepoint_count(answer.text);
  const int64_t context_length = static_cast<int64_t>(offsets.size()) - 1;
  if (answer.start < 0 || answer.start > context_length - length) {  // (no overflow for huge starts)
    return "answer " + quoted(answer.text) + " at answer_start " + std::to_string(answer.start) +
           " does not fit in the context (" + std::to_string(context_length) + " code points)";
  }
  const std::string found(
      context.substr(offsets[answer.start], offsets[answer.start + length] - offsets[answer.start]));
  if (found == answer.text) return "";
  std::string what = "answer_start " + std::to_string(answer.start) + " should begin " + quoted(answer.text) +
                     " but the context there reads " + quoted(found);
  if (const std::optional<int64_t> at = utf16_reading(context, offsets, answer)) {
    what += "; answer_start counts UTF-16 code units here (the answer is at code point " + std::to_string(*at) + ")";
  }
  return what;
}

class SquadReader {
 public:
  SquadReader(const LocatedJson& doc, OnError on_error) : doc_(doc), on_error_(on_error) {}

  SquadData read() {
    const json& root = doc_.root();
    HR_CHECK(root.is_object() && root.contains("data") && root.at("data").is_array(),
             doc_.where("") + ": expected a top-level object with a \"data\" list (SQuAD v1.1 schema)");
    const json& articles = root.at("data");
    for (size_t a = 0; a < articles.size(); ++a) read_article(articles[a], json_index_path("data", a));
    return std::move(out_);
  }

 private:
  void issue(std::string where, std::string what) {
    report_issue(out_.issues, on_error_, {std::move(where), std::move(what)});
  }

  void read_article(const json& article, const std::string& path) {
    if (!article.is_object())
      return issue(doc_.where(path, "data"), std::string("expected an article object, got ") + article.type_name());
    std::string title;
    if (article.contains("title")) {
      if (!article.at("title").is_string()) return issue(doc_.where(path), "\"title\" is not a string");
      title = article.at("title").get<std::string>();
    }
    if (!article.contains("paragraphs") || !article.at("paragraphs").is_array()) {
      return issue(doc_.where(path), "article without a \"paragraphs\" list");
    }
    const json& paragraphs = article.at("paragraphs");
    const std::string list_path = json_child_path(path, "paragraphs");
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      read_paragraph(paragraphs[p], json_index_path(list_path, p), list_path, title);
    }
  }

  void read_paragraph(const json& paragraph, const std::string& path, const std::string& list_path,
                      const std::string& title) {
    if (!paragraph.is_object()) {
      return issue(doc_.where(path, list_path),
                   std::string("expected a paragraph object, got ") + paragraph.type_name());
    }
    if (!paragraph.contains("context") || !paragraph.at("context").is_string()) {
      return issue(doc_.where(path), "paragraph without a \"context\" string");
    }
    if (!paragraph.contains("qas") || !paragraph.at("qas").is_array()) {
      return issue(doc_.where(path), "paragraph without a \"qas\" list");
    }
    const std::string& context = paragraph.at("context").get_ref<const std::string&>();
    const std::vector<size_t> offsets = utf8_codepoint_offsets(context);  // the JSON parser has checked the UTF-8
    const json& qas = paragraph.at("qas");
    const std::string qas_path = json_child_path(path, "qas");
    for (size_t q = 0; q < qas.size(); ++q) {
      read_question(qas[q], json_index_path(qas_path, q), qas_path, context, offsets, title);
    }
  }

  void read_question(const json& qa, const std::string& path, const std::string& list_path, const std::string& context,
                     const std::vector<size_t>& offsets, const std::string& title) {
    if (!qa.is_object())
      return issue(doc_.where(path, list_path), std::string("expected a question object, got ") + qa.type_name());
    if (!qa.contains("id") || !qa.at("id").is_string())
      return issue(doc_.where(path), "question without an \"id\" string");
    QaExample example;
    example.id = qa.at("id").get<std::string>();
    example.title = title;
    example.context = context;
    const std::string about = "question " + example.id + ": ";
    if (!qa.contains("question") || !qa.at("question").is_string()) {
      return issue(doc_.where(path), about + "no \"question\" string");
    }
    example.question = qa.at("question").get<std::string>();
    if (!seen_ids_.insert(example.id).second) return issue(doc_.where(path), about + "duplicate id");
    // Nothing to learn from an empty question, but its gold answers still score predictions.
    const bool trainable = !example.question.empty();
    if (!trainable) issue(doc_.where(path), about + "empty question text: kept for evaluation only");
    if (!qa.contains("answers") || !qa.at("answers").is_array())
      return issue(doc_.where(path), about + "no \"answers\" list");

    const json& answers = qa.at("answers");
    const std::string answers_path = json_child_path(path, "answers");
    std::vector<Answer> verified;
    for (size_t n = 0; n < answers.size(); ++n) {
      const json& given = answers[n];
      const std::string answer_path = json_index_path(answers_path, n);
      const std::string where = doc_.where(answer_path, answers_path);
      if (!given.is_object() || !given.contains("text") || !given.at("text").is_string() ||
          given.at("text").get_ref<const std::string&>().empty() || !given.contains("answer_start") ||
          !given.at("answer_start").is_number_integer()) {
        issue(where, about + "an answer needs a non-empty \"text\" string and an integer \"answer_start\"");
        continue;
      }
      Answer answer{given.at("text").get<std::string>(), given.at("answer_start").get<int64_t>()};
      if (const std::string wrong = misplacement(context, offsets, answer); !wrong.empty()) {
        ++out_.misplaced_answers;
        issue(where, about + wrong);
      } else {
        verified.push_back(answer);
      }
      example.answers.push_back(std::move(answer));
    }
    if (example.answers.empty()) return issue(doc_.where(path), about + "no usable answer");
    if (trainable && !verified.empty()) {
      QaExample trainable = example;
      trainable.answers = std::move(verified);
      out_.train.push_back(std::move(trainable));
    }
    out_.eval.push_back(std::move(example));
  }

  const LocatedJson& doc_;
  OnError on_error_;
  std::unordered_set<std::string> seen_ids_;
  SquadData out_;
};

}  // namespace

SquadData load_squad(const std::string& path, OnError on_error) {
  const LocatedJson doc = LocatedJson::parse_file(path);
  return SquadReader(doc, on_error).read();
}

}  // namespace hr
