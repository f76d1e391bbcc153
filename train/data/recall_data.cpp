#include "train/data/recall_data.h"

#include <utility>

#include "kernels/base/error.h"

namespace hr {

namespace {

// splitmix64: a seed and a counter to well-mixed 64 bits; the generator and the hold-out hash both use it.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // uniform in [0, n) (the modulo bias is below 2^-40 for the sizes used here)
  int64_t below(int64_t n) { return static_cast<int64_t>(mix(state_++) % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

constexpr int kTriesPerWord = 200;  // draws for one word before the context is started again
constexpr int kTriesPerContext = 1000;

// One context: pairs x hops (from, to) links of global word ids (keys 0..K-1, values K..K+V-1), chain c's links
// at [c * hops, (c + 1) * hops), the last of each ending in a value. Empty when the draws ran out (start again).
std::vector<std::pair<int64_t, int64_t>> draw_chains(const RecallOptions& o, bool held_out, Rng& rng,
                                                     std::vector<char>& used) {
  std::vector<std::pair<int64_t, int64_t>> links;
  std::vector<int64_t> taken;
  const auto give_up = [&] {
    for (int64_t w : taken) used[static_cast<size_t>(w)] = 0;
    links.clear();
    return links;
  };
  // an unused word of [base, base + n) whose link from `from` (-1: none) is in this split
  const auto pick = [&](int64_t base, int64_t n, int64_t from) -> int64_t {
    for (int t = 0; t < kTriesPerWord; ++t) {
      const int64_t w = base + rng.below(n);
      if (used[static_cast<size_t>(w)]) continue;
      if (from >= 0 && recall_held_out(o, from, w - base, base == 0) != held_out) continue;
      used[static_cast<size_t>(w)] = 1;
      taken.push_back(w);
      return w;
    }
    return -1;
  };
  for (int64_t c = 0; c < o.pairs; ++c) {
    int64_t from = pick(0, o.keys, -1);
    if (from < 0) return give_up();
    for (int64_t h = 0; h < o.hops; ++h) {
      const bool last = h + 1 == o.hops;
      const int64_t to = last ? pick(o.keys, o.values, from) : pick(0, o.keys, from);
      if (to < 0) return give_up();
      links.emplace_back(from, to);
      from = to;
    }
  }
  for (int64_t w : taken) used[static_cast<size_t>(w)] = 0;
  return links;
}

template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(rng.below(static_cast<int64_t>(i)))]);
}

std::vector<QaExample> make_split(const RecallOptions& o, const std::string& split, int64_t contexts, bool held_out,
                                  uint64_t stream) {
  Rng rng(mix(static_cast<uint64_t>(o.seed) * 4 + stream));
  std::vector<char> used(static_cast<size_t>(o.keys + o.values), 0);
  const auto word = [&](int64_t id) { return id < o.keys ? recall_key(id) : recall_value(id - o.keys); };
  std::vector<QaExample> out;
  for (int64_t n = 0; n < contexts; ++n) {
    // a curriculum inside one run: with mixed_hops a training context is 1..hops hops deep, so the one-hop questions
    // that a model learns first teach the lookup the deeper ones repeat
    RecallOptions oc = o;
    if (o.mixed_hops && !held_out) oc.hops = 1 + rng.below(o.hops);
    std::vector<std::pair<int64_t, int64_t>> links;
    for (int t = 0; t < kTriesPerContext && links.empty(); ++t) links = draw_chains(oc, held_out, rng, used);
    HR_CHECK(!links.empty(), "data.recall: cannot draw " + std::to_string(o.pairs) + " chains of " +
                                 std::to_string(o.hops) + " hops with distinct words from " + std::to_string(o.keys) +
                                 " keys and " + std::to_string(o.values) + " values; raise keys or values");
    // the context: the links in random order, distractors between them; answer_start of each value word
    std::vector<size_t> order(links.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    shuffle(order, rng);
    std::string context;
    std::vector<int64_t> value_start(links.size());  // code points (all ASCII) of each link's `to` word
    for (size_t i = 0; i < order.size(); ++i) {
      if (i > 0)
        for (int64_t d = 0; d < o.distractors; ++d) context += recall_distractor(rng.below(kRecallDistractorWords)) + " ";
      const auto& [from, to] = links[order[i]];
      context += word(from) + " ";
      value_start[order[i]] = static_cast<int64_t>(context.size());
      context += word(to) + (i + 1 < order.size() ? " " : "");
    }
    // the questions: the first key of `queries` different chains, the answer the last link's value
    std::vector<int64_t> chains(static_cast<size_t>(o.pairs));
    for (int64_t c = 0; c < o.pairs; ++c) chains[static_cast<size_t>(c)] = c;
    shuffle(chains, rng);
    for (int64_t q = 0; q < o.queries; ++q) {
      const size_t first = static_cast<size_t>(chains[static_cast<size_t>(q)] * oc.hops);
      const size_t last = first + static_cast<size_t>(oc.hops) - 1;
      QaExample e;
      e.id = "recall-" + split + "-" + std::to_string(n) + "-" + std::to_string(q);
      e.question = word(links[first].first);
      e.context = context;
      e.answers = {Answer{word(links[last].second), value_start[last]}};
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace

std::string recall_key(int64_t i) { return "k" + std::to_string(i); }
std::string recall_value(int64_t i) { return "v" + std::to_string(i); }
std::string recall_distractor(int64_t i) { return "x" + std::to_string(i); }

bool recall_held_out(const RecallOptions& o, int64_t from, int64_t to, bool value_is_key) {
  const uint64_t link = (static_cast<uint64_t>(from) << 32) ^ static_cast<uint64_t>(to) ^ (value_is_key ? 1ull << 63 : 0);
  return mix(mix(static_cast<uint64_t>(o.seed) ^ 0x5eedull) ^ link) % 5 == 0;
}

RecallData make_recall_data(const RecallOptions& o) {
  HR_CHECK(o.keys > 0 && o.values > 0 && o.pairs > 0 && o.hops >= 1 && o.hops <= kRecallMaxHops,
           "data.recall: keys, values, pairs must be > 0 and hops in [1, " + std::to_string(kRecallMaxHops) + "]");
  HR_CHECK(o.queries > 0 && o.queries <= o.pairs, "data.recall: queries must be in [1, pairs]");
  HR_CHECK(o.distractors >= 0 && o.train_size >= 0 && o.eval_size >= 0 && o.test_size >= 0,
           "data.recall: distractors and sizes must be >= 0");
  RecallData d;
  d.train = make_split(o, "train", o.train_size, /*held_out=*/false, 0);
  d.eval = make_split(o, "eval", o.eval_size, true, 1);
  d.test = make_split(o, "test", o.test_size, true, 2);
  return d;
}

}  // namespace hr
