// `headroom heads --roles`: the per-head role statistics on hand-made attention patterns, and the command end to end.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "tests/tiny_run.h"
#include "train/tools/head_roles.h"

using namespace hr;
using namespace hr::testing;

namespace {

constexpr int32_t kPad = 0, kCls = 1, kSep = 2;

double at(const RoleStats& s, HeadRole r) { return s.attention[static_cast<size_t>(r)]; }

}  // namespace

TEST_CASE("head roles: a previous-token head, a uniform head and a [SEP] head give their averages and entropy") {
  // one row [CLS] a b [SEP] [PAD]: T = 5, four real tokens; weights are (B, H, T, T), query rows over key columns
  const int64_t B = 1, H = 3, T = 5;
  const std::vector<int32_t> ids = {kCls, 7, 8, kSep, kPad};
  std::vector<float> p(static_cast<size_t>(B * H * T * T), 0.f);
  auto w = [&](int64_t h, int64_t q, int64_t k) -> float& { return p[static_cast<size_t>((h * T + q) * T + k)]; };
  for (int64_t q = 0; q < 4; ++q) {
    w(0, q, q == 0 ? 0 : q - 1) = 1.f;            // head 0: the previous token (the first token: itself)
    for (int64_t k = 0; k < 4; ++k) w(1, q, k) = 0.25f;  // head 1: uniform over the real tokens
    w(2, q, 3) = 1.f;                             // head 2: [SEP]
  }
  w(1, 4, 0) = 1.f;  // a padded query's weights never count
  HeadRoleAccumulator acc({H}, kPad, kCls, kSep);
  acc.add(0, p, ids, B, T);
  const auto s = acc.averages();
  REQUIRE(s.size() == 1);
  REQUIRE(s[0].size() == 3);
  CHECK(acc.tokens() == 4);

  CHECK(at(s[0][0], HeadRole::Prev) == doctest::Approx(1.0));   // queries 1-3 each put 1 on the token before
  CHECK(at(s[0][0], HeadRole::Next) == doctest::Approx(0.0));
  CHECK(at(s[0][0], HeadRole::Self) == doctest::Approx(0.25));  // only query 0
  CHECK(at(s[0][0], HeadRole::Cls) == doctest::Approx(0.5));    // queries 0 and 1
  CHECK(at(s[0][0], HeadRole::Sep) == doctest::Approx(0.0));
  CHECK(s[0][0].entropy == doctest::Approx(0.0));

  for (HeadRole r : {HeadRole::Prev, HeadRole::Next, HeadRole::Self, HeadRole::Cls, HeadRole::Sep})
    CHECK(at(s[0][1], r) == doctest::Approx(0.25));
  CHECK(s[0][1].entropy == doctest::Approx(std::log(4.0)));

  CHECK(at(s[0][2], HeadRole::Sep) == doctest::Approx(1.0));
  CHECK(at(s[0][2], HeadRole::Next) == doctest::Approx(1.0 / 3));  // query 2 of the three with a next token
  CHECK(at(s[0][2], HeadRole::Self) == doctest::Approx(0.25));     // query 3 is [SEP]

  CHECK(dominant_role(s[0][0], 4) == "prev");
  CHECK(dominant_role(s[0][1], 4) == "broad");
  CHECK(dominant_role(s[0][2], 4) == "sep");
  RoleStats mixed;
  mixed.attention = {0.3, 0.2, 0.1, 0.1, 0.1};
  mixed.entropy = 0.5;
  CHECK(dominant_role(mixed, 4) == "mixed");
}

TEST_CASE("head roles: batches add up as one pass over all rows") {
  const int64_t H = 1, T = 3;
  const std::vector<int32_t> a = {kCls, 5, kSep}, b = {kCls, kSep, kPad};
  std::vector<float> pa(9, 0.f), pb(9, 0.f);
  for (int q = 0; q < 3; ++q) pa[static_cast<size_t>(q * 3)] = 1.f;  // everything on [CLS]
  pb[0] = 0.5f, pb[1] = 0.5f, pb[3] = 1.f;                           // row b: query 0 half-half, query 1 on [CLS]
  HeadRoleAccumulator one({H}, kPad, kCls, kSep), two({H}, kPad, kCls, kSep);
  std::vector<float> both(pa);
  both.insert(both.end(), pb.begin(), pb.end());
  std::vector<int32_t> ids(a);
  ids.insert(ids.end(), b.begin(), b.end());
  one.add(0, both, ids, 2, T);
  two.add(0, pa, a, 1, T);
  two.add(0, pb, b, 1, T);
  const RoleStats x = one.averages()[0][0], y = two.averages()[0][0];
  CHECK(one.tokens() == 5);
  CHECK(at(x, HeadRole::Cls) == doctest::Approx((3 + 0.5 + 1) / 5.0));
  CHECK(at(x, HeadRole::Prev) == doctest::Approx(at(y, HeadRole::Prev)));
  CHECK(at(x, HeadRole::Cls) == doctest::Approx(at(y, HeadRole::Cls)));
  CHECK(x.entropy == doctest::Approx(y.entropy));
  CHECK(x.entropy == doctest::Approx(std::log(2.0) / 5));
  CHECK_THROWS(two.add(0, pa, b, 2, T));  // weights that do not match the batch

  // a model whose first layer has no attention counts its tokens on the first layer that has
  HeadRoleAccumulator later({0, H}, kPad, kCls, kSep);
  later.add(1, both, ids, 2, T);
  CHECK(later.tokens() == 5);
  CHECK(at(later.averages()[1][0], HeadRole::Cls) == doctest::Approx(at(x, HeadRole::Cls)));
}

TEST_CASE("headroom heads --roles on a trained run: the table, six heatmaps, the text-file mode, bad input") {
  TempDir d;
  const std::string config = setup(d);
  const std::string run = d / "run";
  REQUIRE(headroom("train " + quote(config) + " --quiet --out " + quote(run)).code == 0);
  const Result r = headroom("heads --run " + quote(run) + " --roles --png " + quote(d / "roles.png"));
  INFO(r.output);
  REQUIRE(r.code == 0);
  for (const char* column : {"prev", "next", "self", "cls", "sep", "entropy", "role"})
    CHECK(r.output.find(column) != std::string::npos);
  CHECK(r.output.find("'eval' rows") != std::string::npos);
  for (const char* stat : {"prev", "next", "self", "cls", "sep", "entropy"})
    CHECK(std::filesystem::file_size(d / ("roles-" + std::string(stat) + ".png")) > 1000);

  write_file(d / "texts.txt", "alpha beta gamma\n\nbeta beta alpha gamma\n");
  const Result t = headroom("heads --run " + quote(run) + " --roles --text-file " + quote(d / "texts.txt") +
                            " --png " + quote(d / "t.png"));
  INFO(t.output);
  CHECK(t.code == 0);
  CHECK(t.output.find("of 2 lines") != std::string::npos);

  CHECK(headroom("heads --run " + quote(run) + " --roles --text-file " + quote(d / "missing.txt")).code == 2);
  CHECK(headroom("heads --run " + quote(run) + " --roles --importance").code == 2);
  CHECK(headroom("heads --run " + quote(run) + " --text-file " + quote(d / "texts.txt")).code == 2);
}
