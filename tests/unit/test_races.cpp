// The verifier's race check (verify.cpp round_races(): pairwise for rounds of at most 8
// ops, a sweep over the receives' block ranges above) against a brute-force reading of
// the rule: two receives of one rank's round race when their block sets intersect and
// they do not both reduce. Random wide rounds (up to 24 receives) whose messages match
// and agree in size, so the race check decides; the first racing (rank, round) and its
// blocks must be the ones the verifier reports, and an instance without a racing pair
// must not be reported as a race.
#include <doctest/doctest.h>

#include <random>

#include "schedule.h"
#include "verify.h"

namespace bine::test {

TEST_CASE("[races] wide rounds: the race check agrees with the pairwise rule") {
  std::mt19937_64 rng(2026);
  int races = 0, clean = 0, wide = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Schedule s;
    s.collective = Collective::alltoall;
    s.p = 3 + int64_t(rng() % 14);
    s.blocks = 8 + int64_t(rng() % 60);
    s.num_rounds = 2;
    // k receives per rank and round, i = 1..k: rank x sends L_i blocks to x + i and
    // receives L_i blocks from x - i (every message matched, sizes equal; k < p keeps the
    // peers of one round distinct). Receives reduce with probability q.
    std::vector<std::vector<RoundOps>> built(size_t(s.p), std::vector<RoundOps>(2));
    for (int t = 0; t < 2; ++t) {
      const int64_t k = 1 + int64_t(rng() % uint64_t(std::min<int64_t>(s.p - 1, 24)));
      wide += 2 * k > 8;
      const int q = int(rng() % 4);  // reduce probability q/3 (0: none, 3: all)
      const int spread = 1 + int(rng() % 4);  // small: few blocks used, races likely
      for (int64_t i = 1; i <= k; ++i) {
        const int64_t len = 1 + int64_t(rng() % 3);
        for (int64_t x = 0; x < s.p; ++x) {
          const int64_t span = std::max<int64_t>(1, std::min<int64_t>(s.blocks - len + 1, int64_t(spread) * (k + 3)));
          const int64_t a = int64_t(rng() % uint64_t(span)), b = int64_t(rng() % uint64_t(span));
          built[size_t(x)][size_t(t)].push_back(SendOp{(x + i) % s.p, BlockSet::range(a, a + len, s.blocks), {}});
          const bool reduce = int(rng() % 3) < q;
          built[size_t(x)][size_t(t)].push_back(RecvOp{(x - i + s.p) % s.p, BlockSet::range(b, b + len, s.blocks), reduce, {}});
        }
      }
    }
    for (auto& r : built) s.ranks.push_back(RankRounds(std::move(r)));
    // Brute force: the first (rank, round) in rank order, and its first pair (i < j).
    int64_t want_x = -1, want_t = -1;
    BlockSet want_blocks;
    for (int64_t x = 0; x < s.p && want_x < 0; ++x)
      for (int64_t t = 0; t < s.num_rounds && want_x < 0; ++t) {
        const Round& rd = s.ranks[size_t(x)][size_t(t)];
        for (size_t i = 0; i < rd.size() && want_x < 0; ++i)
          for (size_t j = i + 1; j < rd.size() && want_x < 0; ++j) {
            const auto* ri = std::get_if<RecvOp>(&rd[i]);
            const auto* rj = std::get_if<RecvOp>(&rd[j]);
            if (!ri || !rj || (ri->reduce && rj->reduce)) continue;
            const BlockSet both = ri->blocks.get() & rj->blocks.get();
            if (!both.empty()) want_x = x, want_t = t, want_blocks = both;
          }
      }
    DiagnosticSink d;
    const VerifyResult v = verify(s, d);
    CAPTURE(trial);
    CAPTURE(s.p);
    CAPTURE(v.counterexample.message);
    if (want_x >= 0) {
      ++races;
      REQUIRE(v.counterexample.kind == Counterexample::Kind::race);
      CHECK(v.counterexample.rank == want_x);
      CHECK(v.counterexample.round == want_t);
      CHECK(v.counterexample.blocks == want_blocks);
    } else {
      ++clean;
      CHECK(v.counterexample.kind != Counterexample::Kind::race);
    }
  }
  MESSAGE(races << " instances with a race, " << clean << " without; " << wide << " rounds of more than 8 ops");
  CHECK(races > 100);
  CHECK(clean > 100);
}

}  // namespace bine::test
