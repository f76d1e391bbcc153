// The CMRC 2018 metric (cmrc2018_evaluate.py in data/cmrc2018/), the official score of Chinese span-extraction sets
// (CMRC 2018, DRCD): SQuAD's whitespace tokens would make one token of a whole Chinese answer, so its F1 would be
// exact match in disguise. Text is lower-cased and stripped, the script's punctuation marks removed (without
// splitting what surrounds them); each CJK character (U+4E00..U+9FA5) is a segment of its own, the runs of other
// characters between them are split into words. F1 comes from the longest common contiguous run of segments; EM
// compares the texts with the punctuation removed (spaces kept). Each question scores its best over its gold answers
// (evaluate_squad).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "train/data/squad_data.h"

namespace hr {

// The segments F1 counts. The script splits the runs of other characters with nltk.word_tokenize; here they split at
// white space, with ASCII punctuation at either end of a word its own segment ("(1990," -> "(", "1990", ","), which
// is what word_tokenize does to such runs short of its contractions ("can't" -> "ca", "n't").
std::vector<std::string> cmrc_segments(std::string_view text);

double cmrc_exact_match(std::string_view prediction, std::string_view gold);  // 1 or 0
double cmrc_f1(std::string_view prediction, std::string_view gold);           // in [0, 1]

// Whether the questions are mostly Chinese: at least half the letters of their question and answer texts are CJK
// ideographs. evaluate_squad then scores with the CMRC metric.
bool is_chinese_qa(const std::vector<QaExample>& gold);

}  // namespace hr
