#include "train/tokenizer/wordpiece_trainer.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kernels/base/error.h"
#include "train/tokenizer/utf8.h"

namespace hr {
namespace {

using PairKey = uint64_t;  // (left symbol << 32) | right symbol
PairKey pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }
int32_t left_of(PairKey p) { return static_cast<int32_t>(p >> 32); }
int32_t right_of(PairKey p) { return static_cast<int32_t>(p & 0xFFFFFFFFu); }

struct WordEntry {
  std::vector<int32_t> symbols;  // current segmentation
  int64_t count;                 // occurrences in the corpus
};

// The merge state, with every count kept up to date incrementally so a merge only touches the words that hold it.
class Merger {
 public:
  Merger(const std::map<std::string, int64_t>& word_counts) {
    for (const auto& [text, count] : word_counts) {
      WordEntry& w = words_.emplace_back(WordEntry{{}, count});
      const std::u32string cps = utf8::decode(text).code_points;
      for (size_t i = 0; i < cps.size(); ++i) {
        std::string s = i == 0 ? "" : "##";
        utf8::append(s, cps[i]);
        w.symbols.push_back(symbol(s));
      }
    }
    for (int32_t w = 0; w < static_cast<int32_t>(words_.size()); ++w) {
      const WordEntry& word = words_[w];
      for (int32_t s : word.symbols) symbol_count_[s] += word.count;
      for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
        const PairKey p = pair_key(word.symbols[i], word.symbols[i + 1]);
        add_pair_count(p, word.count);
        note_word(p, w);
      }
    }
    rebuild_heap();
  }

  const std::vector<std::string>& symbols() const { return symbol_str_; }

  // Merges the best pair everywhere and returns the merged token, or nothing when no pair is left.
  std::optional<std::string> merge_best() {
    PairKey best;
    for (;;) {
      if (heap_.empty()) return std::nullopt;
      const Candidate top = heap_.top();
      heap_.pop();
      if (pair_count_.contains(top.pair) && score(top.pair) == top.score) {  // else stale: a newer entry exists
        best = top.pair;
        break;
      }
    }
    const int32_t a = left_of(best), b = right_of(best);
    const std::string merged = symbol_str_[a] + symbol_str_[b].substr(2);  // b is never word-initial: "##..."
    const int32_t c = symbol(merged);

    std::unordered_map<PairKey, int64_t> delta;
    std::vector<int32_t> holders = std::move(pair_words_[best]);
    pair_words_.erase(best);
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    for (int32_t w : holders) merge_in_word(w, a, b, c, delta);

    std::vector<PairKey> changed;
    for (const auto& [p, d] : delta) {
      if (d == 0) continue;
      add_pair_count(p, d);
      changed.push_back(p);
    }
    // Scores of every pair holding a, b or c moved with their counts.
    for (int32_t s : {a, b, c}) changed.insert(changed.end(), symbol_pairs_[s].begin(), symbol_pairs_[s].end());
    for (PairKey p : changed) {
      if (pair_count_.contains(p)) push(p);
    }
    if (heap_.size() > 4 * pair_count_.size() + 4096) rebuild_heap();  // bound the stale entries
    return merged;
  }

 private:
  struct Candidate {
    double score;
    PairKey pair;
  };

  int32_t symbol(const std::string& s) {
    const auto [it, inserted] = symbol_id_.emplace(s, static_cast<int32_t>(symbol_str_.size()));
    if (inserted) {
      symbol_str_.push_back(s);
      symbol_count_.push_back(0);
      symbol_pairs_.emplace_back();
    }
    return it->second;
  }

  double score(PairKey p) const {
    return static_cast<double>(pair_count_.at(p)) /
           (static_cast<double>(symbol_count_[left_of(p)]) * static_cast<double>(symbol_count_[right_of(p)]));
  }

  void add_pair_count(PairKey p, int64_t d) {
    int64_t& n = pair_count_[p];
    const bool was_present = n > 0;
    n += d;
    if (n == 0) {
      pair_count_.erase(p);
      symbol_pairs_[left_of(p)].erase(p);
      symbol_pairs_[right_of(p)].erase(p);
    } else if (!was_present) {
      symbol_pairs_[left_of(p)].insert(p);
      symbol_pairs_[right_of(p)].insert(p);
    }
  }

  void note_word(PairKey p, int32_t w) {
    std::vector<int32_t>& ws = pair_words_[p];
    if (ws.empty() || ws.back() != w) ws.push_back(w);
  }

  // Replaces every (a, b) in word w by c, recording the pair-count changes in delta.
  void merge_in_word(int32_t w, int32_t a, int32_t b, int32_t c, std::unordered_map<PairKey, int64_t>& delta) {
    WordEntry& word = words_[w];
    const std::vector<int32_t>& old = word.symbols;
    std::vector<int32_t> merged;
    merged.reserve(old.size());
    int64_t merges = 0;
    for (size_t i = 0; i < old.size();) {
      if (i + 1 < old.size() && old[i] == a && old[i + 1] == b) {
        merged.push_back(c);
        ++merges;
        i += 2;
      } else {
        merged.push_back(old[i]);
        ++i;
      }
    }
    if (merges == 0) return;  // a stale holder
    for (size_t i = 0; i + 1 < old.size(); ++i) delta[pair_key(old[i], old[i + 1])] -= word.count;
    for (size_t i = 0; i + 1 < merged.size(); ++i) {
      const PairKey p = pair_key(merged[i], merged[i + 1]);
      delta[p] += word.count;
      if (merged[i] == c || merged[i + 1] == c) note_word(p, w);
    }
    symbol_count_[a] -= merges * word.count;
    symbol_count_[b] -= merges * word.count;
    symbol_count_[c] += merges * word.count;
    word.symbols = std::move(merged);
  }

  void push(PairKey p) { heap_.push({score(p), p}); }

  void rebuild_heap() {
    heap_ = decltype(heap_)(CandidateOrder{&symbol_str_});
    for (const auto& [p, n] : pair_count_) push(p);
  }

  // Max-heap order: higher score first, then the lexicographically smaller (left, right) pair.
  struct CandidateOrder {
    const std::vector<std::string>* str;
    bool operator()(const Candidate& x, const Candidate& y) const {  // true when x ranks below y
      if (x.score != y.score) return x.score < y.score;
      const std::string& xl = (*str)[left_of(x.pair)];
      const std::string& yl = (*str)[left_of(y.pair)];
      if (xl != yl) return xl > yl;
      return (*str)[right_of(x.pair)] > (*str)[right_of(y.pair)];
    }
  };

  std::vector<WordEntry> words_;
  std::vector<std::string> symbol_str_;
  std::unordered_map<std::string, int32_t> symbol_id_;
  std::vector<int64_t> symbol_count_;                       // occurrences of each symbol in the current segmentation
  std::vector<std::unordered_set<PairKey>> symbol_pairs_;   // the live pairs each symbol takes part in
  std::unordered_map<PairKey, int64_t> pair_count_;         // live pairs only (count > 0)
  std::unordered_map<PairKey, std::vector<int32_t>> pair_words_;  // words that hold (or once held) each pair
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> heap_{CandidateOrder{&symbol_str_}};
};

}  // namespace

Vocab learn_wordpiece_vocab(const std::vector<std::string>& texts, int vocab_size, const BasicTokenizer& basic) {
  std::map<std::string, int64_t> word_counts;
  std::set<char32_t> alphabet;
  for (const std::string& text : texts) {
    for (const Word& w : basic.split(text)) {
      ++word_counts[w.utf8()];
      alphabet.insert(w.text.begin(), w.text.end());
    }
  }

  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const char* prefix : {"", "##"}) {
    for (char32_t cp : alphabet) {
      std::string s = prefix;
      utf8::append(s, cp);
      tokens.push_back(s);
    }
  }
  if (vocab_size < static_cast<int>(tokens.size())) {
    throw Error("learn_wordpiece_vocab: vocab_size " + std::to_string(vocab_size) + " cannot hold the 5 special" +
                " tokens and the " + std::to_string(alphabet.size()) + " characters seen (twice, with and without" +
                " \"##\"): need at least " + std::to_string(tokens.size()));
  }

  std::unordered_set<std::string> known(tokens.begin(), tokens.end());
  Merger merger(word_counts);
  while (static_cast<int>(tokens.size()) < vocab_size) {
    const std::optional<std::string> merged = merger.merge_best();
    if (!merged) break;
    if (known.insert(*merged).second) tokens.push_back(*merged);
  }
  return Vocab(std::move(tokens), "<learned vocabulary>");
}

}  // namespace hr
