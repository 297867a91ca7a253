// BlockSet operations against a brute-force model (std::set of block indices).
#include <doctest/doctest.h>

#include <random>
#include <set>
#include <vector>

#include "bine/blockset.hpp"

namespace {
std::set<int64_t> model(const bine::BlockSet& s) {
  std::set<int64_t> m;
  for (const auto& [lo, hi] : s.ranges())
    for (int64_t i = lo; i < hi; ++i) m.insert(i);
  return m;
}
bool normalized(const bine::BlockSet& s) {
  for (size_t i = 0; i < s.ranges().size(); ++i) {
    if (s.ranges()[i].first >= s.ranges()[i].second) return false;
    if (i && s.ranges()[i - 1].second >= s.ranges()[i].first) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("wrap, stride, union, intersection and difference match the set model") {
  const int64_t B = 11;
  for (int64_t a = -12; a < 14; ++a)
    for (int64_t len = 0; len <= B; ++len) {
      const bine::BlockSet w = bine::BlockSet::wrap(a, a + len, B);
      std::set<int64_t> want;
      for (int64_t j = 0; j < len; ++j) want.insert(((a + j) % B + B) % B);
      CHECK(model(w) == want);
      CHECK(normalized(w));
      const bine::BlockSet st = bine::BlockSet::stride(a, 3, len, B);
      std::set<int64_t> sw;
      for (int64_t j = 0; j < len; ++j) sw.insert(((a + 3 * j) % B + B) % B);
      CHECK(model(st) == sw);
      const auto x = model(w), y = model(st);
      std::set<int64_t> u = x, in, diff;
      u.insert(y.begin(), y.end());
      for (int64_t i : x) (y.count(i) ? in : diff).insert(i);
      CHECK(model(w | st) == u);
      CHECK(model(w & st) == in);
      CHECK(model(w - st) == diff);
      CHECK(normalized(w | st));
      CHECK((w | st).size() == int64_t(u.size()));
    }
  CHECK(bine::take_domain_error() == nullptr);
  bine::BlockSet::range(0, B + 1, B);
  CHECK(bine::take_domain_error() != nullptr);
}

TEST_CASE("union_of: ranges in any order, overlapping, adjacent or empty, united as by |") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t B = 1 + int64_t(rng() % 64);
    std::vector<bine::BlockSet::Range> rs;
    bine::BlockSet folded;  // the reference: one union per range
    std::set<int64_t> want;
    for (int k = int(rng() % 12); k > 0; --k) {
      const int64_t lo = int64_t(rng() % uint64_t(B)), hi = lo + int64_t(rng() % uint64_t(B - lo + 1));
      rs.push_back({lo, hi});
      folded = folded | bine::BlockSet::range(lo, hi, B);
      for (int64_t i = lo; i < hi; ++i) want.insert(i);
    }
    const bine::BlockSet u = bine::BlockSet::union_of(rs);
    CHECK(model(u) == want);
    CHECK(normalized(u));
    CHECK(u == folded);
  }
}

TEST_CASE("block_begin: balanced split, first n mod B blocks one element longer") {
  for (uint64_t n : {0u, 1u, 7u, 1000u, 1001u})
    for (uint64_t B = 1; B <= 17; ++B) {
      CHECK(bine::block_begin(n, B, 0) == 0);
      CHECK(bine::block_begin(n, B, B) == n);
      for (uint64_t i = 0; i < B; ++i) {
        const uint64_t len = bine::block_begin(n, B, i + 1) - bine::block_begin(n, B, i);
        CHECK(len == n / B + (i < n % B ? 1 : 0));
      }
    }
}
