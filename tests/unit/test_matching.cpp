// match_round() and message_sizes_agree() (compiler/ir/schedule.h), the matching rule the
// verifier and the cost model share. Oracle: a brute-force reading of the rule (count the
// earlier sends of x to y and the earlier receives of y from x, pair equal counts) on
// random rounds with repeated peers, non-transfer ops interleaved and missing partners.
#include <doctest/doctest.h>

#include <memory>
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
    // Few messages (every rank posts at most a handful of ops: match_round's direct
    // search) or many (some rank posts more than 8: its sorting path).
    const int messages = trial % 3 == 0 ? 40 : 5;
    for (int m = 0; m < messages; ++m) {
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

TEST_CASE("BlockSetRef: equal ids exactly for equal sets, and the set read back") {
  // Oracle: BlockSet's own equality, on random unions of ranges and strides.
  std::mt19937 rng(777);
  std::vector<BlockSet> sets;
  std::vector<BlockSetRef> refs;
  for (int i = 0; i < 400; ++i) {
    const int64_t B = 1 + int64_t(rng() % 40);
    BlockSet b;
    for (int k = int(rng() % 3); k >= 0; --k) {
      const int64_t a = int64_t(rng() % uint64_t(B)), len = int64_t(rng() % uint64_t(B - a + 1));
      b = b | (rng() % 2 ? BlockSet::range(a, a + len, B) : BlockSet::stride(a, 2, std::min<int64_t>(len, B), B));
    }
    sets.push_back(b);
    refs.emplace_back(b);
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    CHECK(refs[i].get() == sets[i]);
    CHECK(refs[i].size() == sets[i].size());
    for (size_t j = 0; j < sets.size(); j += 7) CHECK((refs[i] == refs[j]) == (sets[i] == sets[j]));
  }
  const size_t n = interned_block_sets();  // interning a set again adds nothing
  for (const BlockSet& b : sets) CHECK(BlockSetRef(b) == BlockSetRef(b));
  CHECK(interned_block_sets() == n);
  CHECK(BlockSetRef().empty());
  CHECK(BlockSetRef(BlockSet()) == BlockSetRef());
}

TEST_CASE("RankRounds: round t of the array is the t-th round given; add() appends to one round") {
  std::mt19937 rng(99);
  std::vector<RoundOps> given(6);
  for (size_t t = 0; t < given.size(); ++t)
    for (int k = int(rng() % 4); k > 0; --k) given[t].push_back(SendOp{int64_t(rng() % 9), BlockSet::block(int64_t(t), 8)});
  RankRounds rr(given);
  auto same = [&]() {
    REQUIRE(rr.size() == given.size());
    size_t t = 0;
    for (const Round rd : rr) {
      REQUIRE(rd.size() == given[t].size());
      for (size_t i = 0; i < rd.size(); ++i) {
        CHECK(peer_of(rd[i]) == peer_of(given[t][i]));
        CHECK(blocks_of(rd[i]) == blocks_of(given[t][i]));
      }
      ++t;
    }
  };
  same();
  for (size_t t : {size_t(0), size_t(3), size_t(5), size_t(3)}) {
    const Op op = RecvOp{int64_t(t), BlockSet::all(8), true};
    given[t].push_back(op);
    rr.add(t, op);
    same();
  }
}

TEST_CASE("RankRounds views of a RoundStore read each rank's rounds; add() copies one view, not the store") {
  // Oracle: the same ops given per rank (RankRounds owning them). The store is filled as
  // instantiation fills it (schedule.h RoundStore::place(), rank after rank in each round),
  // with op counts that cross its chunk boundaries: ranks without ops next to a new chunk,
  // ranks that fill a chunk to the op, and ranks with more ops than a chunk holds (a chunk
  // of their own), before and after ranks without ops.
  std::mt19937 rng(7);
  const int64_t p = 9;
  const size_t T = 6;
  const size_t C = RoundStore::kMaxChunk;
  std::vector<std::vector<RoundOps>> given(static_cast<size_t>(p), std::vector<RoundOps>(T));
  auto store = std::make_shared<RoundStore>();
  store->start(p, T);
  const std::vector<std::vector<size_t>> counts = {
      {0, 0, 0, 0, 0, 0, 0, 0, 0},
      {1, 0, 2, 0, 0, 3, 0, 1, 0},
      {C / 2, C / 2, 0, 1, C - 1, 0, 1, 0, 5},
      {0, C + 3, 0, 0, C + 1, 2, 0, 2 * C, 0},
      {C, 0, C, 1, 0, 3 * C / 4, C / 4, C / 4 + 1, 0},
      {2, 0, 0, 0, 0, 0, 0, 0, C + 7},
  };
  int64_t checked_chunks = 0;
  for (size_t t = 0; t < T; ++t) {
    for (int64_t x = 0; x < p; ++x) {
      std::vector<Op> mine;
      for (size_t k = counts[t][size_t(x)]; k > 0; --k) {
        const Op op = SendOp{int64_t(rng() % uint64_t(p)), BlockSet::block(int64_t(rng() % 8), 8)};
        given[size_t(x)][t].push_back(op);
        mine.push_back(op);
      }
      REQUIRE(store->place(t, size_t(x), mine.data(), mine.data() + mine.size()));
    }
    checked_chunks += int64_t(store->ops[t].size());
  }
  CHECK(checked_chunks >= 12);  // the counts above do cross chunks
  std::vector<RankRounds> views;
  for (int64_t x = 0; x < p; ++x) views.emplace_back(store, x);
  auto same = [&](const RankRounds& rr, const std::vector<RoundOps>& want) {
    REQUIRE(rr.size() == want.size());
    for (size_t t = 0; t < want.size(); ++t) {
      REQUIRE(rr[t].size() == want[t].size());
      size_t bad = 0;
      for (size_t i = 0; i < want[t].size(); ++i)
        bad += peer_of(rr[t][i]) != peer_of(want[t][i]) || blocks_of(rr[t][i]) != blocks_of(want[t][i]);
      CHECK_MESSAGE(bad == 0, "round " << t);
    }
  };
  for (int64_t x = 0; x < p; ++x) same(views[size_t(x)], given[size_t(x)]);
  const RankRounds before = views[2];  // a second view of rank 2, sharing the store
  const Op extra = RecvOp{4, BlockSet::all(8), true};
  views[2].add(1, extra);
  std::vector<RoundOps> changed = given[2];
  changed[1].push_back(extra);
  same(views[2], changed);
  same(before, given[2]);
  for (int64_t x = 0; x < p; ++x)
    if (x != 2) same(views[size_t(x)], given[size_t(x)]);
}

TEST_CASE("RoundStore::absorb: rank ranges filled apart and merged read as one store filled rank after rank") {
  // Instantiation on several threads (set_instance_threads()) fills contiguous rank
  // ranges into stores of their own and absorbs them in rank order. Oracle: the ops given
  // per rank. Op counts cross chunk boundaries (ranks without ops at a range's start and
  // end, chunks of their own, ranges with no op in a round), for every split of the ranks
  // into one to four ranges.
  std::mt19937 rng(11);
  const int64_t p = 9;
  const size_t T = 5;
  const size_t C = RoundStore::kMaxChunk;
  const std::vector<std::vector<size_t>> counts = {
      {0, 0, 0, 0, 0, 0, 0, 0, 0},
      {1, 0, 2, 0, 0, 3, 0, 1, 0},
      {C / 2, C / 2, 0, 1, C - 1, 0, 1, 0, 5},
      {0, C + 3, 0, 0, C + 1, 2, 0, 2 * C, 0},
      {2, 0, 0, 0, 0, 0, 0, 0, C + 7},
  };
  std::vector<std::vector<RoundOps>> given(static_cast<size_t>(p), std::vector<RoundOps>(T));
  for (size_t t = 0; t < T; ++t)
    for (int64_t x = 0; x < p; ++x)
      for (size_t k = counts[t][size_t(x)]; k > 0; --k)
        given[size_t(x)][t].push_back(SendOp{int64_t(rng() % uint64_t(p)), BlockSet::block(int64_t(rng() % 8), 8)});
  int64_t splits = 0;
  // Cut points: a bit mask over the p - 1 places between ranks, at most three cuts.
  for (uint32_t mask = 0; mask < (1u << (p - 1)); ++mask) {
    if (__builtin_popcount(mask) > 3) continue;
    std::vector<int64_t> bounds{0};
    for (int64_t c = 1; c < p; ++c)
      if (mask >> (c - 1) & 1) bounds.push_back(c);
    bounds.push_back(p);
    auto store = std::make_shared<RoundStore>();
    store->start(p, T);
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      RoundStore part;
      part.start(bounds[k + 1] - bounds[k], T);
      for (size_t t = 0; t < T; ++t)
        for (int64_t x = bounds[k]; x < bounds[k + 1]; ++x) {
          std::vector<Op> mine = given[size_t(x)][t];
          REQUIRE(part.place(t, size_t(x - bounds[k]), mine.data(), mine.data() + mine.size()));
        }
      REQUIRE(store->absorb(std::move(part), size_t(bounds[k])));
    }
    size_t bad = 0;
    for (int64_t x = 0; x < p; ++x) {
      const RankRounds view(store, x);
      REQUIRE(view.size() == T);
      for (size_t t = 0; t < T; ++t) {
        const Round got = view[t];
        const RoundOps& want = given[size_t(x)][t];
        if (got.size() != want.size()) {
          ++bad;
          continue;
        }
        for (size_t i = 0; i < want.size(); ++i)
          bad += peer_of(got[i]) != peer_of(want[i]) || blocks_of(got[i]) != blocks_of(want[i]);
      }
    }
    CHECK_MESSAGE(bad == 0, "cuts " << mask);
    ++splits;
  }
  CHECK(splits == 93);  // 1 + 8 + 28 + 56 ways to cut 9 ranks into 1..4 ranges
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
