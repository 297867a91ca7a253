// The cost model with a counts vector (CostVector::counts: the irregular `_v` forms, issue 21;
// docs/cost.md "Irregular blocks") against oracles written here:
// - equal counts price exactly like the balanced vector of the same size;
// - the bytes sent in all follow from how often each block travels, taken from the
//   algorithms' definitions: in ring allgather (any p) and recursive-doubling allgather
//   (p = 2^k) every block reaches each of the other p - 1 ranks once; in MPICH's binomial gather to root 0 (Thakur et al.,
//   Sec. 4) the block of rank r travels popcount(r) hops (each hop clears r's lowest set bit);
// - `bine-cc traffic`'s count (compiler/topo) agrees with the cost model's bytes;
// - counts of the wrong length or sum are errors, not wrong numbers.
#include <doctest/doctest.h>

#include <bitset>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cost.h"
#include "library.h"
#include "machine.h"
#include "traffic.h"

namespace {

using namespace bine;
using namespace bine::test;

const CostParams kMachine = [] {
  CostParams c;
  c.alpha = 3;
  c.beta = 0.01;
  c.gamma = 0.002;
  return c;
}();

std::vector<uint64_t> random_counts(int64_t p, unsigned seed, bool zeros) {
  std::mt19937 gen(seed);
  std::vector<uint64_t> c(static_cast<size_t>(p));
  for (uint64_t& x : c) x = zeros && gen() % 3 == 0 ? 0 : 1 + gen() % 50;
  return c;
}

uint64_t sum(const std::vector<uint64_t>& c) {
  uint64_t s = 0;
  for (uint64_t x : c) s += x;
  return s;
}

}  // namespace

TEST_CASE("irregular blocks: equal counts cost exactly what the balanced vector costs") {
  for (const std::string name : {"ring_allgather", "recursive_doubling_allgather", "bine_allgather", "binomial_gather",
                                 "bine_gather", "binomial_scatter", "bine_reduce_scatter", "pairwise_reduce_scatter"})
    for (int64_t p : {1, 2, 3, 5, 8, 12, 16}) {
      CAPTURE(name);
      CAPTURE(p);
      const Schedule s = inst(name, p);
      REQUIRE(s.blocks == p);
      const uint64_t each = 37;
      const CostResult balanced = simulate_cost(s, CostVector{each * uint64_t(p), 4}, kMachine);
      const CostResult counted =
          simulate_cost(s, CostVector{each * uint64_t(p), 4, std::vector<uint64_t>(size_t(p), each)}, kMachine);
      REQUIRE(balanced.ok);
      REQUIRE(counted.ok);
      CHECK(counted.makespan == doctest::Approx(balanced.makespan));
      CHECK(counted.bytes == balanced.bytes);
      CHECK(counted.messages == balanced.messages);
    }
}

TEST_CASE("irregular blocks: bytes of allgather (every block to the p - 1 others once) and binomial gather (popcount hops)") {
  for (int64_t p = 1; p <= 24; ++p)
    for (unsigned seed : {1u, 2u, 3u})
      for (bool zeros : {false, true}) {
        CAPTURE(p);
        CAPTURE(seed);
        const std::vector<uint64_t> counts = random_counts(p, seed * 100 + unsigned(p), zeros);
        const uint64_t n = sum(counts);
        const CostVector v{n, 4, counts};
        // Recursive doubling only for p = 2^k: its fold sends whole vectors to the eliminated
        // ranks, more than once per block and rank.
        for (const std::string name : {"ring_allgather", "recursive_doubling_allgather"}) {
          if (name != "ring_allgather" && (p & (p - 1)) != 0) continue;
          CAPTURE(name);
          const CostResult r = simulate_cost(inst(name, p), v, kMachine);
          REQUIRE(r.ok);
          CHECK(r.bytes == uint64_t(p - 1) * n * 4);
        }
        uint64_t hops = 0;  // MPICH binomial gather to root 0: rank r's block travels popcount(r) hops
        for (int64_t r = 0; r < p; ++r) hops += counts[size_t(r)] * std::bitset<64>(uint64_t(r)).count();
        const CostResult g = simulate_cost(inst("binomial_gather", p, 0), v, kMachine);
        REQUIRE(g.ok);
        CHECK(g.bytes == hops * 4);
        // bine-cc traffic counts the same bytes (one node per rank: all of them global).
        RankMap m;
        std::string err;
        REQUIRE(build_rank_map("ppn=1", p, m, err));
        const TrafficResult t = count_traffic(inst("binomial_gather", p, 0), m, v);
        uint64_t traffic_bytes = 0;
        for (const LinkTraffic& lt : t.total) traffic_bytes += lt.bytes;
        CHECK(traffic_bytes == g.bytes);
      }
}

TEST_CASE("irregular blocks: one big block costs its hops to the root (binomial vs Bine gather disagree on which rank is far)") {
  // p = 8, root 0, every block 20 elements but rank k's 7860: the big block's hops decide.
  const int64_t p = 8;
  CostParams c;
  c.alpha = 2;
  c.beta = 0.001;
  auto makespan = [&](const char* name, int64_t k) {
    std::vector<uint64_t> counts(size_t(p), 20);
    counts[size_t(k)] = 7860;
    const CostResult r = simulate_cost(inst(name, p, 0), CostVector{sum(counts), 4, counts}, c);
    REQUIRE(r.ok);
    return r.makespan;
  };
  // Binomial: rank 7 is 3 hops away (popcount), rank 4 one hop; so the binomial tree is
  // the worse choice when rank 7 holds the big block and the better one for rank 5.
  CHECK(makespan("binomial_gather", 7) > makespan("binomial_gather", 4));
  CHECK(makespan("bine_gather", 7) < makespan("binomial_gather", 7));
  CHECK(makespan("binomial_gather", 5) < makespan("bine_gather", 5));
}

TEST_CASE("irregular blocks: counts of the wrong length or sum are errors") {
  const Schedule s = inst("ring_allgather", 4);
  const CostResult short_counts = simulate_cost(s, CostVector{6, 4, {1, 2, 3}}, kMachine);
  CHECK_FALSE(short_counts.ok);
  CHECK(short_counts.error.find("3 entries, the instance 4 blocks") != std::string::npos);
  const CostResult bad_sum = simulate_cost(s, CostVector{7, 4, {1, 2, 3, 0}}, kMachine);
  CHECK_FALSE(bad_sum.ok);
  CHECK(bad_sum.error.find("add up to 6 elements, the vector has 7") != std::string::npos);
}
