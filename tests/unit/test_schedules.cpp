// Instantiated library schedules against independent implementations of the papers'
// formulas (Bine trees paper Sec. 3; formulas.md). The oracle code below does not use
// bine::rho / bine::nb: it recomputes them from their definitions.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "instantiate.h"
#include "library.h"
#include "sema.h"
#include "verify.h"

namespace {

using namespace bine;
using namespace bine::test;




// rho(s) = sum_{i=0..s} (-2)^i, from the definition.
int64_t oracle_rho(int64_t s) {
  int64_t sum = 0, t = 1;
  for (int64_t i = 0; i <= s; ++i, t *= -2) sum += t;
  return sum;
}
int64_t pmod(int64_t a, int64_t p) { return ((a % p) + p) % p; }
// Negabinary digits of x, by repeated division by -2.
int64_t oracle_nb(int64_t x) {
  int64_t bits = 0;
  for (int i = 0; x != 0; ++i) {
    int64_t rem = x % -2;
    x /= -2;
    if (rem < 0) { rem += 2; x += 1; }
    bits |= rem << i;
  }
  return bits;
}
int64_t oracle_from_nb(int64_t b) {
  int64_t v = 0, w = 1;
  for (int i = 0; i < 40; ++i, w *= -2)
    if ((b >> i) & 1) v += w;
  return v;
}

}  // namespace

TEST_CASE("Bine butterfly partners equal the paper's formula for p = 2..1024") {
  for (int64_t p = 2; p <= 1024; p *= 2) {
    const Schedule s = inst("bine_allreduce_lat", p);
    int64_t k = 0;
    while ((int64_t(1) << k) < p) ++k;
    REQUIRE(s.num_rounds == k);
    for (int64_t r = 0; r < p; ++r)
      for (int64_t t = 0; t < k; ++t) {
        const int64_t want = pmod(r % 2 == 0 ? r + oracle_rho(t) : r - oracle_rho(t), p);
        const Round& rd = s.ranks[size_t(r)][size_t(t)];
        REQUIRE(rd.size() == 2);
        CHECK(peer_of(rd[0]) == want);
        CHECK(peer_of(rd[1]) == want);
        // modulo distance |rho(s)|, against 2^s for the binomial butterfly
        const int64_t d = pmod(want - r, p);
        CHECK(std::min(d, p - d) == std::min(std::abs(oracle_rho(t)) % p, p - std::abs(oracle_rho(t)) % p));
      }
    const Schedule rd = inst("recursive_doubling_allreduce", p);
    for (int64_t r = 0; r < p; ++r)
      for (int64_t t = 0; t < k; ++t) {
        const int64_t d = pmod(peer_of(rd.ranks[size_t(r)][size_t(t)][0]) - r, p);
        CHECK(std::min(d, p - d) == std::min(int64_t(1) << t, p - (int64_t(1) << t)));
      }
  }
}

TEST_CASE("Bine bcast tree: receive step and parent follow formulas.md for p = 2..1024, every 7th root") {
  for (int64_t p = 2; p <= 1024; p *= 2) {
    int64_t k = 0;
    while ((int64_t(1) << k) < p) ++k;
    for (int64_t root = 0; root < p; root += 7) {
      const Schedule s = inst("bine_bcast_lat", p, root);
      for (int64_t r = 0; r < p; ++r) {
        const int64_t b = oracle_nb(pmod(r - root, p)) & ((int64_t(1) << k) - 1);
        if (r == root) continue;
        // eqlsb: number of equal trailing bits, capped at k; receive step s = k - eqlsb
        int64_t e = 1;
        while (e < k && ((b >> e) & 1) == (b & 1)) ++e;
        const int64_t step = k - e;
        const int64_t mask = (int64_t(1) << (k - step)) - 1;
        const int64_t parent = pmod(oracle_from_nb(b ^ mask) + root, p);
        int found = 0;
        for (int64_t t = 0; t < k; ++t)
          for (const Op& op : s.ranks[size_t(r)][size_t(t)])
            if (std::holds_alternative<RecvOp>(op)) {
              ++found;
              CHECK(t == step);
              CHECK(peer_of(op) == parent);
            }
        CHECK(found == 1);
      }
    }
  }
}

TEST_CASE("paper example: Bine bcast p = 8 root 0 (formulas.md)") {
  const Schedule s = inst("bine_bcast_lat", 8, 0);
  std::map<int64_t, std::set<std::pair<int64_t, int64_t>>> sends;
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t t = 0; t < s.num_rounds; ++t)
      for (const Op& op : s.ranks[size_t(r)][size_t(t)])
        if (std::holds_alternative<SendOp>(op)) sends[t].insert({r, peer_of(op)});
  CHECK(sends[0] == std::set<std::pair<int64_t, int64_t>>{{0, 3}});
  CHECK(sends[1] == std::set<std::pair<int64_t, int64_t>>{{0, 7}, {3, 4}});
  CHECK(sends[2] == std::set<std::pair<int64_t, int64_t>>{{0, 1}, {3, 2}, {4, 5}, {7, 6}});
}

TEST_CASE("reduce-scatter phases send n(p-1)/p blocks in log2 p steps (Rabenseifner, Bine bdw)") {
  for (const char* name : {"rabenseifner_allreduce", "bine_allreduce_bdw"})
    for (int64_t p = 2; p <= 256; p *= 2) {
      const Schedule s = inst(name, p);
      int64_t k = 0;
      while ((int64_t(1) << k) < p) ++k;
      CHECK(s.num_rounds == 2 * k);
      for (int64_t r = 0; r < p; ++r) {
        int64_t rs = 0, ag = 0;
        for (int64_t t = 0; t < 2 * k; ++t)
          for (const Op& op : s.ranks[size_t(r)][size_t(t)])
            if (std::holds_alternative<SendOp>(op)) (t < k ? rs : ag) += blocks_of(op).size();
        CHECK(rs == p - 1);  // blocks of n/p elements: n(p-1)/p elements
        CHECK(ag == p - 1);
      }
    }
}

TEST_CASE("fold: non-power-of-two instances verify and use 2 extra rounds") {
  for (int64_t p : {3, 5, 6, 7, 12, 100}) {
    const Schedule s = inst("bine_allreduce_lat", p);
    int64_t k = 0;
    while ((int64_t(2) << k) <= p) ++k;
    CHECK(s.num_rounds == k + 2);
    DiagnosticSink d;
    CHECK(verify(s, d).ok);
  }
}
