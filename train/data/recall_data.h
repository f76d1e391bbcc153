// Multi-query associative recall (Arora et al. 2023, "Zoology"), generated as extractive QA so that the span head,
// EM/F1 and every QA tool apply: a context of key-value pairs, a question naming a key, the answer the span of its
// value. A testbed where attention structure matters: the answer is wherever the key happens to be, not at a fixed
// place, and with 2 hops the model must find the key's value, then find that value as a key.
//
//   hops 1:  context "k12 v7 x3 k40 v19 x0 k5 v33"   question "k40"   answer "v19"
//   hops 2:  context "k12 k31 k31 v7 k5 k8 k8 v33"   question "k12"   answer "v7"  (k12 -> k31 -> v7)
//
// Words: keys k0..k{keys-1}, values v0..v{values-1}, distractors x0..x15 (short ASCII words that a learned WordPiece
// vocabulary keeps whole once vocab_size exceeds the number of distinct words). In a context every key and every value
// is distinct, so the answer occurs exactly once.
//
// Train vs eval/test: each ordered link (key -> key, key -> value) is held out with probability 1/5, from a hash of
// the seed. Training contexts use only links that are not held out, eval and test contexts only held-out ones: no
// link of a test context, the asked key -> answer among them, ever occurs in training, so the model must read the
// context rather than remember an assignment, and no test context can equal a training one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/data/squad_data.h"

namespace hr {

struct RecallOptions {
  int64_t keys = 64;        // distinct key words
  int64_t values = 64;      // distinct value words
  int64_t pairs = 8;        // chains per context; a context holds pairs x hops key-value pairs
  int64_t queries = 4;      // questions per context, each about a different chain (<= pairs)
  int64_t distractors = 0;  // distractor words between two consecutive pairs
  int64_t hops = 1;         // 1: key -> value; 2: key -> key -> value; ...
  bool mixed_hops = false;  // training contexts take 1..hops hops (drawn per context); eval and test keep hops
  int64_t train_size = 2000, eval_size = 200, test_size = 200;  // contexts per split; test 0: no test split
  int64_t seed = 0;
};

constexpr int64_t kRecallDistractorWords = 16;
constexpr int64_t kRecallMaxHops = 4;

struct RecallData {
  // the questions of one context follow each other and share its text; ids "recall-<split>-<context>-<query>"
  std::vector<QaExample> train, eval, test;
};

// The words of the three vocabularies.
std::string recall_key(int64_t i);
std::string recall_value(int64_t i);
std::string recall_distractor(int64_t i);

// Whether the link from -> to is held out for eval/test (from: a key; to: a key when value_is_key, else a value).
bool recall_held_out(const RecallOptions& o, int64_t from, int64_t to, bool value_is_key);

// Deterministic in the options (the same seed gives the same data on every platform: no std distributions). hr::Error
// when a knob is out of range (run_config.cpp checks them first, naming the config key).
RecallData make_recall_data(const RecallOptions& o);

}  // namespace hr
