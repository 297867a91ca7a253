// match_round() and message_sizes_agree() (compiler/ir/schedule.h), the matching rule the
// verifier and the cost model share. Oracle: a brute-force reading of the rule (count the
// earlier sends of x to y and the earlier receives of y from x, pair equal counts) on
// random rounds with repeated peers, non-transfer ops interleaved and missing partners.
#include <doctest/doctest.h>

#include <random>

#include "schedule.h"

namespace bine::test {

namespace {
/// Op j of rank r: the number of earlier ops of the same direction with the same peer.
size_t ordinal(const Round& rd, size_t j) {
  size_t k = 0;
  for (size_t i = 0; i < j; ++i)
    k += is_transfer(rd[i]) && peer_of(rd[i]) == peer_of(rd[j]) && rd[i].index() == rd[j].index();
  return k;
}
/// The op of rank y in `rd` that the rule pairs with op j of rank x, or -1.
int64_t brute_mate(const Round& mine, size_t j, const Round& theirs, int64_t x) {
  const size_t k = ordinal(mine, j);
  const bool send = std::holds_alternative<SendOp>(mine[j]);
  size_t seen = 0;
  for (size_t i = 0; i < theirs.size(); ++i)
    if (is_transfer(theirs[i]) && peer_of(theirs[i]) == x && std::holds_alternative<SendOp>(theirs[i]) != send && seen++ == k)
      return int64_t(i);
  return -1;
}
}  // namespace

TEST_CASE("match_round pairs the k-th send of x to y with the k-th receive of y from x") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    Schedule s;
    s.p = 2 + int64_t(rng() % 5);
    s.blocks = 4;
    s.num_rounds = 1;
    std::vector<RoundOps> built(size_t(s.p));  // round 0 of each rank
    // Balanced traffic, then (in half the trials) one op removed: an unmatched transfer.
    for (int m = 0; m < 8; ++m) {
      const int64_t x = int64_t(rng() % uint64_t(s.p));
      int64_t y = int64_t(rng() % uint64_t(s.p - 1));
      if (y >= x) ++y;
      const BlockSet b = BlockSet::block(int64_t(rng() % 4), 4);
      built[size_t(x)].push_back(SendOp{y, b, {}});
      if (rng() % 3 == 0) built[size_t(x)].push_back(LocalOp{b, b, false, {}});
      built[size_t(y)].push_back(RecvOp{x, b, false, {}});
    }
    for (auto& r : built) std::shuffle(r.begin(), r.end(), rng);
    const bool drop = trial % 2 == 1;
    if (drop) {
      for (auto& r : built)
        if (!r.empty()) {
          r.erase(r.begin());
          break;
        }
    }
    for (const RoundOps& r : built) s.ranks.push_back(RankRounds(std::vector<RoundOps>{r}));
    RoundMatching m;
    const bool complete = match_round(s, 0, m);
    bool brute_complete = true;
    for (int64_t x = 0; x < s.p; ++x) {
      const Round& rd = s.ranks[size_t(x)][0];
      for (size_t j = 0; j < rd.size(); ++j) {
        const int64_t want = is_transfer(rd[j]) ? brute_mate(rd, j, s.ranks[size_t(peer_of(rd[j]))][0], x) : -1;
        if (is_transfer(rd[j]) && want < 0) brute_complete = false;
        CAPTURE(trial);
        CAPTURE(x);
        CAPTURE(j);
        CHECK(m.mate_of(x, j) == want);
      }
    }
    CHECK(complete == brute_complete);
    CHECK(m.complete == complete);
    if (!complete) {
      // the reported transfer is unmatched in the brute-force reading too
      const int64_t r = m.unmatched_send ? m.src : m.dst, q = m.unmatched_send ? m.dst : m.src;
      const Round& rd = s.ranks[size_t(r)][0];
      size_t k = 0;
      bool found = false;
      for (size_t j = 0; j < rd.size() && !found; ++j)
        if (is_transfer(rd[j]) && peer_of(rd[j]) == q && std::holds_alternative<SendOp>(rd[j]) == m.unmatched_send &&
            ++k == m.k) {
          CHECK(brute_mate(rd, j, s.ranks[size_t(q)][0], r) == -1);
          found = true;
        }
      CHECK(found);
    }
  }
}

TEST_CASE("message_sizes_agree: equal sets for vector blocks, equal counts for rank-indexed blocks") {
  Schedule s;
  s.blocks = 4;
  s.collective = Collective::allreduce;
  const BlockSet a = BlockSet::block(0, 4), b = BlockSet::block(1, 4);
  CHECK(message_sizes_agree(s, a, a));
  CHECK_FALSE(message_sizes_agree(s, a, b));  // B = 4 blocks of n = 5 elements: 2 and 1
  s.scratch = 1;                              // block 4 is block 0 of the scratch buffer
  CHECK(message_sizes_agree(s, a, BlockSet::block(4, 8)));
  CHECK_FALSE(message_sizes_agree(s, a, BlockSet::block(5, 8)));
  s.scratch = 0;
  s.collective = Collective::allgather;
  CHECK(message_sizes_agree(s, a, b));
  CHECK_FALSE(message_sizes_agree(s, a, BlockSet::all(4)));
}

}  // namespace bine::test
