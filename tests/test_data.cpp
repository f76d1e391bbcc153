// Dataset loaders and the SQuAD v1.1 metric: real files from data/, hand-made bad files for every issue
// type, and metric values computed with the official evaluate-v1.1.py functions (Python 3) on the same inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "tests/error_message.h"
#include "tests/repo_files.h"
#include "tests/temp_dir.h"
#include "framework/regular_file.h"
#include "kernels/base/error.h"
#include "train/data/classification_data.h"
#include "train/data/cmrc_metric.h"
#include "train/data/conll_data.h"
#include "train/data/json_line.h"
#include "train/data/squad_data.h"
#include "train/data/squad_metric.h"
#include "train/data/utf8_codepoints.h"
#include "train/tokenizer/utf8.h"

using namespace hr;
using hr::testing::data_file;
using hr::testing::error_message;
using hr::testing::TempDir;
using hr::testing::write_file;
namespace fs = std::filesystem;

namespace {

std::string line_of_file(const std::string& path, int64_t line) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  for (int64_t n = 1; n <= line && std::getline(in, text); ++n) {
  }
  return text;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

ClassificationDataOptions options_for(DataFormat format, const std::string& path) {
  ClassificationDataOptions options;
  options.format = format;
  options.path = path;
  return options;
}

}  // namespace

// ----------------------------------------------------------------------------------------------------------------
// UTF-8

TEST_CASE("utf8: validation and code-point slicing") {
  CHECK(is_valid_utf8("h\xC3\xA9llo \xE4\xB8\xAD \xF0\x9F\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xC3"));                                              // truncated
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));                                          // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));                                      // surrogate U+D800
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));                                  // above U+10FFFF
  CHECK_FALSE(is_valid_utf8("\x80"));                                              // stray continuation byte
  const std::string s = "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!";  // "café 中文 😀!"
  CHECK(utf8_codepoint_count(s) == 10);
  CHECK(utf8_slice_codepoints(s, 3, 4) == "\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87");
  CHECK(utf8_slice_codepoints(s, 8, 5) == "\xF0\x9F\x98\x80!");  // clamped at the end
  CHECK(utf8_slice_codepoints(s, -3, 4) == "caf\xC3\xA9");
  CHECK(utf8_slice_codepoints(s, 2, INT64_MAX) == utf8_slice_codepoints(s, 2, 8));
  CHECK(utf8_codepoint_offsets(s) == std::vector<size_t>{0, 1, 2, 3, 5, 6, 9, 12, 13, 17, 18});
}

TEST_CASE("utf8: the data layer and the tokenizer decode ill-formed bytes by one rule") {
  // each maximal ill-formed subpart is one bad code point in both (Python's errors='replace'), never one per byte
  for (const std::string text : {"\xE2\x82x", "a\xF0\x9F\x98", "\xED\xA0\x80", "\xC0\xAF!", "\xF4\x90\x80\x80",
                                 "\xE4\xB8\xAD\xFF\xE4", "ok"}) {
    INFO(text);
    std::u32string data_layer;
    for (size_t pos = 0; pos < text.size();) {
      const int32_t cp = decode_utf8_codepoint(text, pos);
      data_layer.push_back(cp < 0 ? utf8::kReplacement : static_cast<char32_t>(cp));
    }
    CHECK(data_layer == utf8::decode(text).code_points);
  }
  size_t pos = 0;
  CHECK(decode_utf8_codepoint("\xE2\x82x", pos) == -1);
  CHECK(pos == 2);  // E2 82 is one truncated sequence
  CHECK_THROWS_WITH_AS(utf8_codepoint_offsets("ab\xE2\x82x"), "invalid UTF-8 at byte 2", Error);
}

// ------------------------------------------------------------------------------------------------------- CLINC150

TEST_CASE("clinc150: real split sizes, labels and line numbers") {
  const std::string path = data_file("clinc150/data_full.json");
  ClassificationDataOptions options = options_for(DataFormat::clinc150, path);
  const LoadResult train = load_classification_data(options);
  CHECK(train.examples.size() == 15000);
  CHECK(train.issues.empty());
  const LabelSet labels = LabelSet::from_examples(train.examples);
  CHECK(labels.size() == 150);
  CHECK(std::is_sorted(labels.labels().begin(), labels.labels().end()));
  CHECK(labels.name(labels.id("translate")) == "translate");
  CHECK_FALSE(labels.find("oos"));

  // The first train pair opens on line 12407 ('[' alone on its line), its text on the next line.
  const TextExample& first = train.examples.front();
  CHECK(first.label == "translate");
  CHECK(first.source == path + ":12407 (train[0])");
  CHECK(contains(line_of_file(path, 12408), "\"" + first.text + "\""));
  const TextExample& last = train.examples.back();
  const int64_t last_line = std::stoll(last.source.substr(path.size() + 1));
  CHECK(contains(line_of_file(path, last_line + 1), "\"" + last.text + "\""));
  CHECK(contains(line_of_file(path, last_line + 2), "\"" + last.label + "\""));

  options.include_oos = true;
  const LoadResult train_oos = load_classification_data(options);
  CHECK(train_oos.examples.size() == 15100);
  CHECK(train_oos.examples.back().label == "oos");
  CHECK(contains(train_oos.examples.back().source, "(oos_train[99])"));
  CHECK(LabelSet::from_examples(train_oos.examples).size() == 151);

  options.split = "val";
  CHECK(load_classification_data(options).examples.size() == 3100);
  options.split = "test";
  CHECK(load_classification_data(options).examples.size() == 5500);
  options.include_oos = false;
  CHECK(load_classification_data(options).examples.size() == 4500);

  // Eval data against the in-scope label set: every oos row is an unknown-label issue naming its line.
  options.split = "val";
  options.include_oos = true;
  options.known_labels = labels;
  const LoadResult val = load_classification_data(options);
  CHECK(val.examples.size() == 3000);
  REQUIRE(val.issues.size() == 100);
  CHECK(contains(val.issues[0].message(), path + ":3 (oos_val[0]): unknown label 'oos'"));
  options.on_error = OnError::fail;
  CHECK(contains(error_message([&] { load_classification_data(options); }), "unknown label 'oos'"));

  ClassificationDataOptions small = options_for(DataFormat::clinc150, data_file("clinc150/data_small.json"));
  CHECK(load_classification_data(small).examples.size() == 7500);
}

TEST_CASE("clinc150: malformed rows, bad files") {
  TempDir tmp;
  const std::string path = write_file(tmp / "bad.json",
                                      "{\n"
                                      "  \"train\": [\n"
                                      "    [\"book a flight\", \"book_flight\"],\n"
                                      "    [\"only text\"],\n"
                                      "    [\"text\", 7],\n"
                                      "    [\"   \", \"greeting\"],\n"
                                      "    \"not a pair\",\n"
                                      "    [\"hello there\", \"\"],\n"
                                      "    [\"what is my balance\", \"balance\"]\n"
                                      "  ]\n"
                                      "}\n");
  ClassificationDataOptions options = options_for(DataFormat::clinc150, path);
  const LoadResult result = load_classification_data(options);
  REQUIRE(result.examples.size() == 2);
  CHECK(result.examples[1].source == path + ":9 (train[6])");
  REQUIRE(result.issues.size() == 5);
  CHECK(result.issues[0].message() == path + ":4 (train[1]): expected a [text, intent] pair, got an array of 1");
  CHECK(result.issues[1].message() == path + ":5 (train[2]): expected [string, string], got [string, number]");
  CHECK(result.issues[2].message() == path + ":6 (train[3]): empty text");
  CHECK(result.issues[3].message() == path + ":2 (train[4]): expected a [text, intent] pair, got string");
  CHECK(result.issues[4].message() == path + ":8 (train[5]): empty label");

  options.on_error = OnError::fail;
  CHECK(error_message([&] { load_classification_data(options); }) == result.issues[0].message());

  options.on_error = OnError::skip;
  options.split = "dev";
  CHECK(contains(error_message([&] { load_classification_data(options); }), "no split 'dev' (the file has: train)"));
  options.split = "train";
  options.include_oos = true;
  CHECK(contains(error_message([&] { load_classification_data(options); }), "no split 'oos_train'"));

  options.path = write_file(tmp / "syntax.json", "{\n  \"train\": [\n    [\"a\", \"b\"]\n    [\"c\", \"d\"]\n  ]\n}\n");
  const std::string syntax = error_message([&] { load_classification_data(options); });
  CHECK(contains(syntax, options.path + ": invalid JSON: parse error at line 4"));
  options.path = write_file(tmp / "utf8.json", "{\"train\": [[\"caf\xC3\", \"x\"]]}");
  CHECK(contains(error_message([&] { load_classification_data(options); }), "invalid JSON"));
  options.path = write_file(tmp / "empty.json", "");
  CHECK(contains(error_message([&] { load_classification_data(options); }), options.path + ": invalid JSON"));
  options.path = write_file(tmp / "array.json", "[1, 2]");
  CHECK(contains(error_message([&] { load_classification_data(options); }),
                 "expected a JSON object of CLINC150 splits"));
  options.path = tmp / "missing.json";
  CHECK(error_message([&] { load_classification_data(options); }) == options.path + ": no such file");
  options.path = tmp.path.string();
  CHECK(error_message([&] { load_classification_data(options); }) == options.path + ": not a regular file");
}

// ---------------------------------------------------------------------------------------------------------- CSV/TSV

TEST_CASE("csv: RFC 4180 quoting, line numbers of multi-line records") {
  TempDir tmp;
  const std::string path = write_file(tmp / "data.csv",
                                      "id,text,label\r\n"
                                      "1,\"hello, world\",greet\r\n"
                                      "2,\"she said \"\"hi\"\"\",greet\r\n"
                                      "3,\"two\nlines\",multi\r\n"
                                      "\r\n"
                                      "4,plain text,\"quoted label\"\r\n"
                                      "5,\"\",empty\n"
                                      "6,ends with delimiter,\n"
                                      "7,caf\xC3\xA9 \xE4\xB8\xAD,unicode");
  const LoadResult result = load_classification_data(options_for(DataFormat::csv, path));
  REQUIRE(result.examples.size() == 5);
  CHECK(result.examples[0].text == "hello, world");
  CHECK(result.examples[1].text == "she said \"hi\"");
  CHECK(result.examples[2].text == "two\nlines");
  CHECK(result.examples[2].source == path + ":4");
  CHECK(result.examples[3].text == "plain text");
  CHECK(result.examples[3].label == "quoted label");
  CHECK(result.examples[3].source == path + ":7");  // line 5 continues record 3, line 6 is blank
  CHECK(result.examples[4].text == "caf\xC3\xA9 \xE4\xB8\xAD");
  CHECK(result.examples[4].source == path + ":10");
  REQUIRE(result.issues.size() == 2);
  CHECK(result.issues[0].message() == path + ":8: empty text");
  CHECK(result.issues[1].message() == path + ":9: empty label");
}

TEST_CASE("csv/tsv: malformed rows and headers") {
  TempDir tmp;
  const std::string path = write_file(tmp / "bad.tsv",
                                      "\xEF\xBB\xBFtext\tlabel\n"
                                      "good row\tyes\n"
                                      "too\tmany\tcolumns\n"
                                      "too few\n"
                                      "bad \xFF byte\tno\n"
                                      "\"quoted\" tail\tno\n"
                                      "\"tab\tinside\"\tyes\n"
                                      "\"never closed\tno\n"
                                      "swallowed\tno\n");
  ClassificationDataOptions options = options_for(DataFormat::tsv, path);
  const LoadResult result = load_classification_data(options);
  REQUIRE(result.examples.size() == 2);
  CHECK(result.examples[1].text == "tab\tinside");
  REQUIRE(result.issues.size() == 5);
  CHECK(result.issues[0].message() == path + ":3: 3 columns, the header has 2");
  CHECK(result.issues[1].message() == path + ":4: 1 columns, the header has 2");
  CHECK(result.issues[2].message() == path + ":5: invalid UTF-8 in column 'text'");
  CHECK(contains(result.issues[3].message(), path + ":6: unexpected character after a closing quote"));
  CHECK(result.issues[4].message() == path + ":8: unterminated quoted field (opened on line 8)");

  options.on_error = OnError::fail;
  CHECK(error_message([&] { load_classification_data(options); }) == result.issues[0].message());

  options.format = DataFormat::csv;  // the header has no ',' so it is one column named "text\tlabel"
  CHECK(error_message([&] { load_classification_data(options); }) ==
        path + ":1: the header has no column 'text' (it has 'text\tlabel')");
  options.path = write_file(tmp / "empty.csv", "");
  CHECK(contains(error_message([&] { load_classification_data(options); }), options.path + ": empty file"));
  options.path = write_file(tmp / "header.csv", "sentence,intent\nhi,greet\n");
  CHECK(contains(error_message([&] { load_classification_data(options); }), "no column 'text'"));
  options.text_field = "sentence";
  options.label_field = "intent";
  CHECK(load_classification_data(options).examples.at(0).label == "greet");
}

// ------------------------------------------------------------------------------------------------------------ JSONL

TEST_CASE("jsonl: text or input_ids, string or int labels, every issue type") {
  TempDir tmp;
  const std::string path = write_file(tmp / "data.jsonl",
                                      "{\"text\": \"turn on the lights\", \"label\": \"lights_on\"}\n"
                                      "{\"input_ids\": [101, 7592, 102], \"label\": 3}\n"
                                      "\n"
                                      "{\"text\": \"no label\"}\n"
                                      "{\"text\": \"float label\", \"label\": 1.5}\n"
                                      "{\"text\": 12, \"label\": \"x\"}\n"
                                      "{\"input_ids\": [1, -2], \"label\": \"x\"}\n"
                                      "{\"input_ids\": [], \"label\": \"x\"}\n"
                                      "{\"text\": \"t\", \"input_ids\": [1], \"label\": \"x\"}\n"
                                      "{\"text\": \"broken\", \n"
                                      "{\"text\": \"bad \xC3\x28\", \"label\": \"x\"}\n"
                                      "[\"not\", \"an object\"]\n"
                                      "{\"text\": \"\", \"label\": \"x\"}\n"
                                      "{\"text\": \"ok \xF0\x9F\x98\x80\", \"label\": \"emoji\"}\r\n");
  ClassificationDataOptions options = options_for(DataFormat::jsonl, path);
  const LoadResult result = load_classification_data(options);
  REQUIRE(result.examples.size() == 3);
  CHECK(result.examples[0].text == "turn on the lights");
  CHECK(result.examples[0].input_ids.empty());
  CHECK(result.examples[1].text.empty());
  CHECK(result.examples[1].input_ids == std::vector<int32_t>{101, 7592, 102});
  CHECK(result.examples[1].label == "3");
  CHECK(result.examples[1].source == path + ":2");
  CHECK(result.examples[2].source == path + ":14");
  const std::vector<std::string> expected = {
      path + ":4: missing field 'label'",
      path + ":5: 'label' must be a string or an integer, got number",
      path + ":6: 'text' must be a string, got number",
      path + ":7: input_ids[1] is not a token id (an integer in [0, 2^31)): -2",
      path + ":8: empty 'input_ids'",
      path + ":9: both 'text' and 'input_ids': give one",
      path + ":10: invalid JSON (at column 20)",
      path + ":11: invalid UTF-8",
      path + ":12: expected a JSON object, got array",
      path + ":13: empty text",
  };
  REQUIRE(result.issues.size() == expected.size());
  for (size_t k = 0; k < expected.size(); ++k) CHECK(result.issues[k].message() == expected[k]);

  // An eval file checked against training labels.
  options.known_labels = LabelSet({"lights_on", "3"});
  const LoadResult known = load_classification_data(options);
  CHECK(known.examples.size() == 2);
  CHECK(known.issues.back().message() == path + ":14: unknown label 'emoji' (not among the 2 training labels)");

  options.on_error = OnError::fail;
  CHECK(error_message([&] { load_classification_data(options); }) == expected[0]);
}

TEST_CASE("label set: sorted, deterministic ids") {
  const LabelSet labels({"weather", "alarm", "oos", "alarm", "10", "9"});
  CHECK(labels.labels() == std::vector<std::string>{"10", "9", "alarm", "oos", "weather"});
  CHECK(labels.id("alarm") == 2);
  CHECK(labels.name(4) == "weather");
  CHECK(contains(error_message([&] { labels.id("timer"); }), "unknown label 'timer'"));
  CHECK(contains(error_message([&] { labels.name(5); }), "label id 5 out of range"));
}

TEST_CASE("a number past the range of double is bad JSON, not an escaping exception (found by fuzzing)") {
  TempDir tmp;
  const std::string clinc = write_file(tmp / "overflow.json", "{\"train\": [[\"a\", \"b\"]], \"val\": 1e999}");
  CHECK(error_message([&] { load_classification_data(options_for(DataFormat::clinc150, clinc)); }) ==
        clinc + ": invalid JSON: number overflow parsing '1e999'");
  const std::string long_number = "{\"data\": " + std::string(500, '9') + "e999}";
  const std::string squad = write_file(tmp / "overflow_squad.json", long_number);
  const std::string message = error_message([&] { load_squad(squad); });
  CHECK(contains(message, squad + ": invalid JSON: number overflow parsing '999"));
  CHECK(message.size() < squad.size() + 250);  // the number is not echoed whole
  const std::string jsonl =
      write_file(tmp / "overflow.jsonl", "{\"text\": \"ok\", \"label\": \"a\"}\n{\"text\": 1e999}\n");
  const LoadResult rows = load_classification_data(options_for(DataFormat::jsonl, jsonl));
  CHECK(rows.examples.size() == 1);
  REQUIRE(rows.issues.size() == 1);
  CHECK(rows.issues[0].message() == jsonl + ":2: invalid JSON (a number out of range)");
}

TEST_CASE("a data file nesting a million arrays is refused while it is parsed, naming the file") {
  TempDir tmp;
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  const std::string squad = write_file(tmp / "deep_squad.json", "{\"data\": " + deep + "}");
  CHECK(error_message([&] { load_squad(squad); }) == squad + ": invalid JSON: nested deeper than 100 levels");
  const std::string clinc = write_file(tmp / "deep.json", deep);
  CHECK(error_message([&] { load_classification_data(options_for(DataFormat::clinc150, clinc)); }) ==
        clinc + ": invalid JSON: nested deeper than 100 levels");
  // 100 levels (the object and 99 arrays in it) are the bound, not an error
  const std::string ok = write_file(tmp / "ok.json", "{\"train\": [[\"a\", \"b\"]], \"x\": " + std::string(99, '[') +
                                                       std::string(99, ']') + "}");
  CHECK(load_classification_data(options_for(DataFormat::clinc150, ok)).examples.size() == 1);
}

TEST_CASE("stdin read as JSONL (embed, tokenize): the text of a line, nothing for a blank one, a bad one named") {
  CHECK(stdin_jsonl_text("{\"text\": \"play a song\", \"id\": 7}", 1) == "play a song");
  CHECK_FALSE(stdin_jsonl_text(" \t\r", 2).has_value());
  const auto usage_error = [](std::string_view line) {
    return error_message<UsageError>([&] { stdin_jsonl_text(line, 3); });
  };
  CHECK(usage_error("{\"text\": 1}") == "stdin line 3: expected a JSON object with a string \"text\"");
  CHECK(usage_error("[\"a\"]") == "stdin line 3: expected a JSON object with a string \"text\"");
  CHECK(usage_error("{\"text\": \"a\"") ==
        "stdin line 3: invalid JSON (at column 13); expected a JSON object with a string \"text\"");
  CHECK(usage_error(std::string(200, '[')).find("stdin line 3: JSON nested deeper than 100 levels") == 0);
}

TEST_CASE("loaders never crash on binary garbage") {
  TempDir tmp;
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 40; ++trial) {
    std::string bytes(static_cast<size_t>(rng() % 400), '\0');
    for (char& b : bytes) b = static_cast<char>(rng() % 256);
    if (trial % 4 == 0) bytes = "text,label\n" + bytes;  // get past the header sometimes
    if (trial % 4 == 1) bytes = "{\"text\": \"a\", \"label\": \"b\"}\n" + bytes;
    const std::string path = write_file(tmp / ("garbage" + std::to_string(trial)), bytes);
    for (DataFormat format : {DataFormat::clinc150, DataFormat::csv, DataFormat::tsv, DataFormat::jsonl}) {
      try {
        const LoadResult result = load_classification_data(options_for(format, path));
        for (const DataIssue& issue : result.issues) CHECK(issue.where.rfind(path + ":", 0) == 0);
      } catch (const Error& e) {
        CHECK(contains(e.what(), path));
      }
    }
    try {
      load_squad(path);
    } catch (const Error& e) {
      CHECK(contains(e.what(), path));
    }
  }
}

// ------------------------------------------------------------------------------------------------------------ CoNLL

TEST_CASE("conll: sentences by blank lines, the tag in the last column, every issue with its file and line") {
  TempDir tmp;
  const std::string path = write_file(tmp / "ner.conll",
                                      "-DOCSTART- -X- -X- O\n"
                                      "\n"
                                      "EU NNP B-NP B-ORG\n"
                                      "rejects VBZ B-VP O\r\n"
                                      "German\tB-MISC\n"
                                      " \t\n"                   // white space alone ends a sentence too
                                      "Peter B-PER\n"
                                      "Blackburn\n"              // 8: no tag
                                      "says O\n"
                                      "\n"
                                      "in O\n"
                                      "Rome S-LOC\n"             // 12: not IOB
                                      "\n"
                                      "bad \xC3\x28 O\n"         // 14
                                      "\n"
                                      "Lily I-PER\n"
                                      "Allen I-PER");             // no final newline
  const ConllData d = load_conll(path, OnError::skip);
  REQUIRE(d.sentences.size() == 2);
  CHECK(d.sentences[0].words == std::vector<std::string>{"EU", "rejects", "German"});
  CHECK(d.sentences[0].tags == std::vector<std::string>{"B-ORG", "O", "B-MISC"});
  CHECK(d.sentences[0].source == path + ":3");
  CHECK(d.sentences[1].tags == std::vector<std::string>{"I-PER", "I-PER"});
  CHECK(d.sentences[1].source == path + ":16");
  const std::vector<std::string> expected = {
      path + ":8: expected a token and its tag, separated by white space (the sentence is skipped)",
      path + ":12: tag 'S-LOC' is not O, B-TYPE or I-TYPE (IOB) (the sentence is skipped)",
      path + ":14: invalid UTF-8 (the sentence is skipped)"};
  REQUIRE(d.issues.size() == expected.size());
  for (size_t k = 0; k < expected.size(); ++k) CHECK(d.issues[k].message() == expected[k]);
  CHECK(error_message([&] { load_conll(path, OnError::fail); }) == expected[0]);
  CHECK(contains(error_message([&] { load_conll(tmp / "missing.conll", OnError::skip); }), "missing.conll"));
}

TEST_CASE("conll: entities are conlleval's chunks, scored by span and type") {
  using Spans = std::vector<EntitySpan>;
  CHECK(entity_spans({"B-PER", "I-PER", "O", "B-LOC"}) == Spans{{0, 2, "PER"}, {3, 4, "LOC"}});
  // IOB1: I- opens a chunk after O or another type; B- after the same type opens a new one
  CHECK(entity_spans({"I-ORG", "I-ORG", "I-LOC", "B-LOC", "I-LOC", "O", "I-PER"}) ==
        Spans{{0, 2, "ORG"}, {2, 3, "LOC"}, {3, 5, "LOC"}, {6, 7, "PER"}});
  CHECK(entity_spans({"O", "O"}).empty());

  // gold: PER(0,2) LOC(3,4) | ORG(0,1); predicted: PER(0,2) LOC(3,4) as ORG | ORG(0,1) MISC(1,2)
  const std::vector<std::vector<std::string>> gold = {{"B-PER", "I-PER", "O", "B-LOC"}, {"B-ORG", "O"}};
  const std::vector<std::vector<std::string>> pred = {{"B-PER", "I-PER", "O", "B-ORG"}, {"B-ORG", "B-MISC"}};
  const auto m = entity_scores(gold, pred);
  CHECK(m.at("precision") == doctest::Approx(2.0 / 4));  // 2 of 4 predicted entities are right
  CHECK(m.at("recall") == doctest::Approx(2.0 / 3));     // 2 of 3 gold entities are found
  CHECK(m.at("f1") == doctest::Approx(2 * 0.5 * (2.0 / 3) / (0.5 + 2.0 / 3)));
  CHECK(m.at("accuracy") == doctest::Approx(4.0 / 6));
  // a partial span is no hit
  CHECK(entity_scores({{"B-PER", "I-PER"}}, {{"B-PER", "O"}}).at("f1") == 0.0);
}

// ------------------------------------------------------------------------------------------------------------ SQuAD

TEST_CASE("squad: real files load with every offset verified") {
  const SquadData part1 = load_squad(data_file("squad_v1.1/dev-v1.1.part1of2.json"));
  CHECK(part1.eval.size() == 5696);
  CHECK(part1.train.size() == 5696);
  CHECK(part1.issues.empty());
  CHECK(part1.misplaced_answers == 0);
  const QaExample& q0 = part1.eval.front();
  CHECK(q0.title == "Super_Bowl_50");
  CHECK(q0.id == "56be4db0acb8001400a502ec");
  CHECK(q0.question == "Which NFL team represented the AFC at Super Bowl 50?");
  REQUIRE(q0.answers.size() == 3);
  CHECK(q0.answers[0].text == "Denver Broncos");
  CHECK(q0.answers[0].start == 177);
  CHECK(utf8_slice_codepoints(q0.context, 177, 14) == "Denver Broncos");
  size_t answers = 0;
  for (const QaExample& q : part1.eval) answers += q.answers.size();
  CHECK(answers == 18389);

  CHECK(load_squad(data_file("squad_v1.1/dev-v1.1.part2of2.json")).eval.size() == 4874);
  const SquadData babi_train = load_squad(data_file("babi_qa1/babi_qa1_en10k_train.squad.json"));
  CHECK(babi_train.train.size() == 10000);
  CHECK(babi_train.issues.empty());
  const SquadData babi_test = load_squad(data_file("babi_qa1/babi_qa1_en10k_test.squad.json"));
  CHECK(babi_test.eval.size() == 1000);
  CHECK(babi_test.eval[0].answers[0].text == "hallway");
}

TEST_CASE("squad: CMRC 2018 trial's UTF-16 offsets are found and reported, never trained on") {
  const std::string path = data_file("cmrc2018/cmrc2018_trial.json");
  const SquadData cmrc = load_squad(path);
  CHECK(cmrc.eval.size() == 1002);
  CHECK(cmrc.train.size() == 995);
  CHECK(cmrc.misplaced_answers == 5);
  // 5 answers at UTF-16 offsets (one paragraph holds a character above U+FFFF) and 2 empty questions.
  REQUIRE(cmrc.issues.size() == 7);
  for (int k = 0; k < 5; ++k) {
    const DataIssue& issue = cmrc.issues[k];
    const std::string id = "TRIAL_210_QUERY_" + std::to_string(k);
    CHECK(contains(issue.what, "question " + id + ": answer_start "));
    CHECK(contains(issue.what, "answer_start counts UTF-16 code units here"));
    // where = "path:LINE (data[..].paragraphs[..].qas[k].answers[0])": LINE opens the answer, its text follows.
    REQUIRE(issue.where.rfind(path + ":", 0) == 0);
    const int64_t line = std::stoll(issue.where.substr(path.size() + 1));
    CHECK(contains(issue.where, ".qas[" + std::to_string(k) + "].answers[0])"));
    const auto in_eval =
        std::find_if(cmrc.eval.begin(), cmrc.eval.end(), [&](const QaExample& q) { return q.id == id; });
    REQUIRE(in_eval != cmrc.eval.end());
    CHECK(contains(line_of_file(path, line + 1), "\"text\": \"" + in_eval->answers[0].text + "\""));
    CHECK(std::none_of(cmrc.train.begin(), cmrc.train.end(), [&](const QaExample& q) { return q.id == id; }));
  }
  CHECK(
      cmrc.issues[0].what ==
      "question TRIAL_210_QUERY_0: answer_start 14 should begin \"俗名龙尖\" but the context there reads \"名龙尖，\"; "
      "answer_start counts UTF-16 code units here (the answer is at code point 13)");
  CHECK(contains(cmrc.issues[0].where, path + ":1470 (data["));
  for (const char* id : {"TRIAL_776_QUERY_4", "TRIAL_20_QUERY_0"}) {
    CHECK(std::count_if(cmrc.issues.begin(), cmrc.issues.end(), [&](const DataIssue& issue) {
            return issue.what == std::string("question ") + id + ": empty question text: kept for evaluation only";
          }) == 1);
    CHECK(std::none_of(cmrc.train.begin(), cmrc.train.end(), [&](const QaExample& q) { return q.id == id; }));
  }
  CHECK(contains(error_message([&] { load_squad(path, OnError::fail); }), "TRIAL_210_QUERY_0"));
}

TEST_CASE("squad: code-point offsets in multi-byte contexts, structure issues") {
  TempDir tmp;
  // Contexts with accents (2 bytes), Chinese (3 bytes) and an emoji (4 bytes, 2 UTF-16 units) before the answers.
  const std::string path = write_file(tmp / "qa.json", R"({"data": [
{"title": "multi", "paragraphs": [
  {"context": "Café crème à Zürich, 北京 then 😀 Paris.", "qas": [
    {"id": "accents", "question": "Where?", "answers": [{"text": "Zürich", "answer_start": 13}]},
    {"id": "chinese", "question": "Which city?", "answers": [{"text": "北京", "answer_start": 21}]},
    {"id": "emoji", "question": "After the emoji?", "answers": [{"text": "Paris", "answer_start": 31},
                                                                {"text": "Paris", "answer_start": 32}]},
    {"id": "bytes", "question": "Byte offset?", "answers": [{"text": "Zürich", "answer_start": 16}]}
  ]},
  {"qas": []},
  {"context": "x", "qas": [
    {"question": "no id", "answers": [{"text": "x", "answer_start": 0}]},
    {"id": "accents", "question": "dup", "answers": [{"text": "x", "answer_start": 0}]},
    {"id": "bad_answer", "question": "q", "answers": [{"text": "x"}]},
    {"id": "no_answers", "question": "q", "answers": []},
    {"id": "beyond", "question": "q", "answers": [{"text": "x", "answer_start": 5},
                                                  {"text": "x", "answer_start": 9223372036854775807}]},
    {"id": "empty_question", "question": "", "answers": [{"text": "x", "answer_start": 0}]}
  ]}
]},
{"title": "no paragraphs"}
]})");
  const SquadData data = load_squad(path);
  REQUIRE(data.eval.size() == 6);
  CHECK(data.eval[0].id == "accents");
  CHECK(data.eval[3].id == "bytes");
  CHECK(data.eval[4].id == "beyond");
  CHECK(data.eval[5].id == "empty_question");
  REQUIRE(data.train.size() == 3);
  CHECK(data.train[0].answers[0].start == 13);
  CHECK(data.train[1].answers[0].start == 21);
  REQUIRE(data.train[2].answers.size() == 1);  // only the code-point offset survives
  CHECK(data.train[2].answers[0].start == 31);
  CHECK(utf8_slice_codepoints(data.train[2].context, 31, 5) == "Paris");
  CHECK(data.misplaced_answers == 4);

  std::vector<std::string> messages;
  for (const DataIssue& issue : data.issues) messages.push_back(issue.message());
  const std::vector<std::string> expected = {
      path +
          ":7 (data[0].paragraphs[0].qas[2].answers[1]): question emoji: answer_start 32 should begin \"Paris\" but "
          "the context there reads \"aris.\"; answer_start counts UTF-16 code units here (the answer is at code "
          "point 31)",
      path +
          ":8 (data[0].paragraphs[0].qas[3].answers[0]): question bytes: answer_start 16 should begin "
          "\"Zürich\" but the context there reads \"ich, 北\"",
      path + ":10 (data[0].paragraphs[1]): paragraph without a \"context\" string",
      path + ":12 (data[0].paragraphs[2].qas[0]): question without an \"id\" string",
      path + ":13 (data[0].paragraphs[2].qas[1]): question accents: duplicate id",
      path +
          ":14 (data[0].paragraphs[2].qas[2].answers[0]): question bad_answer: an answer needs a non-empty "
          "\"text\" string and an integer \"answer_start\"",
      path + ":14 (data[0].paragraphs[2].qas[2]): question bad_answer: no usable answer",
      path + ":15 (data[0].paragraphs[2].qas[3]): question no_answers: no usable answer",
      path +
          ":16 (data[0].paragraphs[2].qas[4].answers[0]): question beyond: answer \"x\" at answer_start 5 does "
          "not fit in the context (1 code points)",
      path +
          ":17 (data[0].paragraphs[2].qas[4].answers[1]): question beyond: answer \"x\" at answer_start "
          "9223372036854775807 does not fit in the context (1 code points)",
      path +
          ":18 (data[0].paragraphs[2].qas[5]): question empty_question: empty question text: kept for evaluation only",
      path + ":21 (data[1]): article without a \"paragraphs\" list",
  };
  CHECK(messages.size() == expected.size());
  for (size_t k = 0; k < std::min(messages.size(), expected.size()); ++k) CHECK(messages[k] == expected[k]);

  CHECK(error_message([&] { load_squad(path, OnError::fail); }) == expected[0]);
  const std::string no_data = write_file(tmp / "no_data.json", "{\"version\": \"1.1\"}");
  CHECK(error_message([&] { load_squad(no_data); }) ==
        no_data + ":1: expected a top-level object with a \"data\" list (SQuAD v1.1 schema)");
}

// ----------------------------------------------------------------------------------------------------------- metric

TEST_CASE("squad metric: normalisation matches evaluate-v1.1.py") {
  // Expected values printed by the official normalize_answer under Python 3.
  CHECK(normalize_squad_answer("The Cat") == "cat");
  CHECK(normalize_squad_answer("  A  man, a plan; an ANALYST!  ") == "man plan analyst");
  CHECK(normalize_squad_answer("theatre") == "theatre");  // articles only as whole words
  CHECK(normalize_squad_answer("the") == "");
  CHECK(normalize_squad_answer("") == "");
  CHECK(normalize_squad_answer("a_b") == "ab");  // '_' is punctuation
  CHECK(normalize_squad_answer("\xE2\x82\xAC"
                               "a"
                               "\xE2\x82\xAC") == "\xE2\x82\xAC \xE2\x82\xAC");  // "€a€" -> "€ €"
  CHECK(normalize_squad_answer("\xC3\x9Cn\xC3\xAF"
                               "code \xC3\x89"
                               "COLE") ==
        "\xC3\xBCn\xC3\xAF"
        "code \xC3\xA9"
        "cole");
  CHECK(normalize_squad_answer("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3") ==
        "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82");                                                 // ΟΔΟΣ -> οδος
  CHECK(normalize_squad_answer("\xCE\x91\xCE\xA3.\xCE\x92") == "\xCE\xB1\xCF\x83\xCE\xB2");  // ΑΣ.Β -> ασβ
  CHECK(normalize_squad_answer("\xCE\x91\xCE\xA3'\xCE\xA3") == "\xCE\xB1\xCF\x83\xCF\x82");  // ΑΣ'Σ -> ασς
  CHECK(normalize_squad_answer("\xC4\xB0stanbul") == "i\xCC\x87stanbul");                    // İ -> i + U+0307
  CHECK(normalize_squad_answer("the\xCC\x81 end") == "\xCC\x81 end");   // U+0301 is no word character
  CHECK(normalize_squad_answer("x\xC2\xA0y\xE3\x80\x80z") == "x y z");  // NBSP and ideographic space split
  CHECK(normalize_squad_answer("caf\xC3") == "caf\xEF\xBF\xBD");        // invalid UTF-8 becomes U+FFFD
}

TEST_CASE("squad metric: EM and F1 on hand-made cases") {
  CHECK(squad_exact_match("The Cat", "cat") == 1.0);
  CHECK(squad_exact_match("the cat.", "A cat!") == 1.0);
  CHECK(squad_exact_match("cats", "cat") == 0.0);
  CHECK(squad_f1("the big black cat sat", "a black cat") == doctest::Approx(2.0 / 3.0).epsilon(1e-15));  // P 2/4, R 1
  CHECK(squad_f1("cat cat dog", "cat dog dog") == doctest::Approx(2.0 / 3.0).epsilon(1e-15));            // Counter &
  CHECK(squad_f1("Denver Broncos won", "the Denver Broncos") == doctest::Approx(0.8).epsilon(1e-15));
  CHECK(squad_exact_match("", "") == 1.0);  // both normalise to "": equal, yet no common token
  CHECK(squad_f1("", "") == 0.0);
  CHECK(squad_exact_match("a", "the") == 1.0);
  CHECK(squad_f1("cat", "") == 0.0);

  QaExample q;
  q.id = "q1";
  q.answers = {{"Denver Broncos", 0}, {"the Broncos", 0}, {"Broncos won", 0}};
  QaExample unanswered;
  unanswered.id = "q2";
  unanswered.answers = {{"x", 0}};
  const SquadScore score = evaluate_squad({q, unanswered}, {{"q1", "Broncos"}, {"extra", "ignored"}});
  CHECK(score.questions == 2);
  CHECK(score.unanswered == 1);
  CHECK(score.exact_match == doctest::Approx(50.0));  // "Broncos" == normalised "the Broncos"
  CHECK(score.f1 == doctest::Approx(50.0));
  const SquadScore partial = evaluate_squad({q}, {{"q1", "Denver won"}});
  CHECK(partial.exact_match == 0.0);
  CHECK(partial.f1 == doctest::Approx(50.0));  // "denver won" shares one of two tokens with two golds
  CHECK(contains(error_message([] { evaluate_squad({}, {}); }), "no gold questions"));
}

TEST_CASE("squad metric: whole dev halves against the official script") {
  // Deterministic predictions of every kind (exact, too long, shifted, wrong, missing); the official evaluate()
  // gave these numbers for the same predictions.
  struct Expected {
    const char* file;
    size_t unanswered;
    double exact_match, f1;
  };
  for (const Expected& expected :
       {Expected{"squad_v1.1/dev-v1.1.part1of2.json", 712, 27.861657303370787, 51.84084653941759},
        Expected{"squad_v1.1/dev-v1.1.part2of2.json", 609, 27.944193680755028, 52.60399459120169}}) {
    const SquadData data = load_squad(data_file(expected.file));
    std::map<std::string, std::string> predictions;
    for (size_t n = 0; n < data.eval.size(); ++n) {
      const QaExample& q = data.eval[n];
      const Answer& a = q.answers[0];
      const int64_t length = utf8_codepoint_count(a.text);
      const int64_t shifted = std::max<int64_t>(0, a.start - 10);
      switch (n % 4) {
        case 0: predictions[q.id] = a.text; break;
        case 1: predictions[q.id] = utf8_slice_codepoints(q.context, a.start, length + 6); break;
        case 2: predictions[q.id] = utf8_slice_codepoints(q.context, shifted, 10 + length / 2); break;
        default:
          if (n % 8 != 3) predictions[q.id] = q.question;
      }
    }
    const SquadScore score = evaluate_squad(data.eval, predictions);
    CHECK(score.unanswered == static_cast<int64_t>(expected.unanswered));
    CHECK(score.exact_match == doctest::Approx(expected.exact_match).epsilon(1e-12));
    CHECK(score.f1 == doctest::Approx(expected.f1).epsilon(1e-12));
  }
}

// Hand-computed with the official cmrc2018_evaluate.py algorithm (mixed_segmentation with rm_punc, find_lcs,
// remove_punctuation); each case says why it scores what it does.
TEST_CASE("cmrc metric: character-level F1 and EM of the official CMRC 2018 script") {
  using Segments = std::vector<std::string>;
  CHECK(cmrc_segments("1990年NBA总冠军") == Segments{"1990", "年", "nba", "总", "冠", "军"});
  CHECK(cmrc_segments("《红楼梦》，曹雪芹") == Segments{"红", "楼", "梦", "曹", "雪", "芹"});
  CHECK(cmrc_segments("co-op 在 (1990),") == Segments{"coop", "在", "(", "1990", ")", ","});  // '-' gone, not split

  CHECK(cmrc_f1("北京大学", "北京大学") == 1.0);
  CHECK(cmrc_exact_match("北京大学", "北京大学") == 1.0);
  // [在 北 京] vs [北 京]: common run 2, P 2/3, R 1
  CHECK(cmrc_f1("在北京", "北京") == doctest::Approx(0.8).epsilon(1e-15));
  CHECK(cmrc_exact_match("在北京", "北京") == 0.0);
  // SQuAD's F1 sees one whitespace token on each side and scores this 0
  CHECK(squad_f1("在北京", "北京") == 0.0);
  // mixed: [nba 总 冠 军] inside [1990 年 nba 总 冠 军]: P 1, R 4/6
  CHECK(cmrc_f1("NBA总冠军", "1990年NBA总冠军") == doctest::Approx(0.8).epsilon(1e-15));
  // the longest common *contiguous* run: [丙 丁], P 1/2, R 1/2 (a bag of characters would give 1)
  CHECK(cmrc_f1("甲乙丙丁", "甲丙丁乙") == doctest::Approx(0.5).epsilon(1e-15));
  // punctuation removed on both sides before comparing
  CHECK(cmrc_f1("红楼梦", "《红楼梦》") == 1.0);
  CHECK(cmrc_exact_match("红楼梦", "《红楼梦》") == 1.0);
  // lower-cased and stripped; EM keeps inner spaces, the segments do not
  CHECK(cmrc_f1(" iPhone 手机", "iphone手机") == 1.0);
  CHECK(cmrc_exact_match(" iPhone 手机", "iphone手机") == 0.0);
  // empty answers: equal texts, yet no common segment
  CHECK(cmrc_exact_match("", "") == 1.0);
  CHECK(cmrc_f1("", "") == 0.0);
  CHECK(cmrc_exact_match("，", "。") == 1.0);
  CHECK(cmrc_f1("", "北京") == 0.0);
  CHECK(cmrc_exact_match("", "北京") == 0.0);
}

TEST_CASE("qa metric: Chinese sets are scored with the CMRC metric, and the score names its metric") {
  QaExample zh;
  zh.id = "z";
  zh.question = "哪一年夺得总冠军？";
  zh.answers = {{"1990年", 0}};
  const std::map<std::string, std::string> predicted = {{"z", "1990年夏天"}, {"e", "Denver"}};
  const SquadScore chinese = evaluate_squad({zh}, predicted);
  CHECK(chinese.metric == "cmrc");
  CHECK(chinese.f1 == doctest::Approx(100.0 * 2 * (2.0 / 4) / (2.0 / 4 + 1)));  // [1990 年] in [1990 年 夏 天]
  CHECK(evaluate_squad({zh}, predicted, QaMetric::squad).metric == "squad");
  CHECK(evaluate_squad({zh}, predicted, QaMetric::squad).f1 == 0.0);  // one whitespace token each, unequal

  QaExample en;
  en.id = "e";
  en.question = "Who won Super Bowl 50?";
  en.answers = {{"Denver Broncos", 0}};
  CHECK(evaluate_squad({en}, predicted).metric == "squad");
  CHECK(evaluate_squad({en}, predicted, QaMetric::cmrc).metric == "cmrc");
  CHECK(evaluate_squad({en}, predicted).f1 == doctest::Approx(100.0 * 2 / 3));

  CHECK(parse_qa_metric("cmrc") == QaMetric::cmrc);
  CHECK(parse_qa_metric("auto") == QaMetric::automatic);
  CHECK_THROWS_AS(parse_qa_metric("bleu"), ConfigError);
}

TEST_CASE("cmrc metric: the CMRC 2018 trial set is picked out as Chinese, SQuAD as not") {
  CHECK(is_chinese_qa(load_squad(data_file("cmrc2018/cmrc2018_trial.json")).eval));
  CHECK(!is_chinese_qa(load_squad(data_file("babi_qa1/babi_qa1_en10k_test.squad.json")).eval));
}

TEST_CASE("squad metric: predictions file") {
  TempDir tmp;
  const std::string path = tmp / "predictions.json";
  const std::map<std::string, std::string> predictions = {{"q1", "Zürich"}, {"q2", "北京 \"quoted\""}, {"q3", ""}};
  write_predictions_json(path, predictions);
  const std::string text = read_file_bytes(path);
  CHECK(contains(text, "Zürich"));  // UTF-8, not \u-escaped
  CHECK(nlohmann::json::parse(text).get<std::map<std::string, std::string>>() == predictions);
  CHECK(contains(error_message([&] {
                   write_predictions_json(path, {{"q9", "caf\xC3"}});
                 }),
                 "question q9 is not valid UTF-8"));
  CHECK(contains(error_message([&] { write_predictions_json(tmp / "no/such/dir.json", predictions); }),
                 "cannot open for writing"));
}
