// CoNLL-style token tagging data (CoNLL-2003, WNUT-17): one token a line with its tag in the last whitespace-separated
// column, sentences separated by blank lines, `-DOCSTART-` lines skipped. Tags are IOB (IOB1 or IOB2): O, B-TYPE,
// I-TYPE. Entities are conlleval's chunks, so entity-level scores match the CoNLL shared tasks' script.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/data_issue.h"

namespace hr {

struct TaggedSentence {
  std::vector<std::string> words, tags;
  std::string source;  // "file:line" of its first token
};

struct ConllData {
  std::vector<TaggedSentence> sentences;
  std::vector<DataIssue> issues;  // each skips its whole sentence
};

// `name` is the file name issues are reported with ("train.conll:12").
ConllData parse_conll(std::string_view text, const std::string& name, OnError on_error);
ConllData load_conll(const std::string& path, OnError on_error);

// Why `tag` is not an IOB tag, or empty.
std::string iob_tag_problem(const std::string& tag);

struct EntitySpan {
  int64_t begin = 0, end = 0;  // words [begin, end)
  std::string type;
  bool operator==(const EntitySpan&) const = default;
};
// The entities of a tag sequence, as conlleval chunks them: one starts at B-X, or at I-X after O or another type.
std::vector<EntitySpan> entity_spans(const std::vector<std::string>& tags);

// Micro-averaged entity precision, recall and f1 (an entity counts when its span and type match), and per-word
// accuracy, over sentences of gold and predicted tags.
std::map<std::string, double> entity_scores(const std::vector<std::vector<std::string>>& gold,
                                            const std::vector<std::vector<std::string>>& pred);

}  // namespace hr
