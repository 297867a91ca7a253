// Message and block counts of the Bine collectives against the paper's counts (Bine
// trees paper, Sec. 4; the binomial and butterfly analyses it builds on), and the modulo
// distance between partners (|rho(s)| for Bine, 2^s for the binomial counterparts), for
// power-of-two p. Counts are taken from instantiated Schedules and compared with closed
// forms written here, not with the compiler's own numbers.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "instantiate.h"
#include "library.h"
#include "sema.h"

namespace {

using namespace bine;
using namespace bine::test;



struct Counts {
  int64_t messages = 0, blocks = 0;
};
/// Messages and blocks sent (or received) by one rank.
Counts sent(const Schedule& s, int64_t r, bool receives = false) {
  Counts c;
  for (const Round& rd : s.ranks[size_t(r)])
    for (const Op& op : rd)
      if (is_transfer(op) && std::holds_alternative<RecvOp>(op) == receives) {
        ++c.messages;
        c.blocks += blocks_of(op).size();
      }
  return c;
}
int64_t lg(int64_t p) {
  int64_t k = 0;
  while ((int64_t(1) << k) < p) ++k;
  return k;
}
int64_t ring_dist(int64_t a, int64_t b, int64_t p) {
  const int64_t d = ((a - b) % p + p) % p;
  return std::min(d, p - d);
}
int64_t oracle_rho(int64_t s) {  // sum_{i<=s} (-2)^i, from the definition
  int64_t v = 0, t = 1;
  for (int64_t i = 0; i <= s; ++i, t *= -2) v += t;
  return v;
}

}  // namespace

TEST_CASE("Bine tree broadcast, scatter, gather, reduce: message and block counts") {
  for (int64_t p = 2; p <= 256; p *= 2) {
    const int64_t k = lg(p);
    for (int64_t root : {int64_t(0), p / 2 + 1 < p ? p / 2 + 1 : 0}) {
      CAPTURE(p);
      CAPTURE(root);
      // bcast: the root sends the whole vector once per step; every other rank receives once.
      const Schedule bc = inst("bine_bcast_lat", p, root);
      CHECK(sent(bc, root).messages == k);
      int64_t total = 0;
      for (int64_t r = 0; r < p; ++r) {
        total += sent(bc, r).messages;
        if (r != root) CHECK(sent(bc, r, true).messages == 1);
      }
      CHECK(total == p - 1);
      // scatter: the root sends k messages carrying p - 1 blocks (n (p-1)/p elements),
      // halving each step: p/2, p/4, ..., 1 blocks.
      const Schedule sc = inst("bine_scatter", p, root);
      CHECK(sent(sc, root).messages == k);
      CHECK(sent(sc, root).blocks == p - 1);
      int64_t expect = p / 2;
      for (const Round& rd : sc.ranks[size_t(root)])
        for (const Op& op : rd)
          if (std::holds_alternative<SendOp>(op)) {
            CHECK(blocks_of(op).size() == expect);
            expect /= 2;
          }
      // gather: the mirror image, received by the root.
      const Schedule ga = inst("bine_gather", p, root);
      CHECK(sent(ga, root, true).messages == k);
      CHECK(sent(ga, root, true).blocks == p - 1);
      // reduce: every non-root rank sends its partial vector exactly once.
      const Schedule rd = inst("bine_reduce_lat", p, root);
      for (int64_t r = 0; r < p; ++r) CHECK(sent(rd, r).messages == (r == root ? 0 : 1));
    }
  }
}

TEST_CASE("Bine butterfly collectives: counts and partner distance |rho(s)| against 2^s") {
  for (int64_t p = 2; p <= 256; p *= 2) {
    const int64_t k = lg(p);
    CAPTURE(p);
    const Schedule rs = inst("bine_reduce_scatter", p);
    const Schedule ag = inst("bine_allgather", p);
    const Schedule a2a = inst("bine_alltoall", p);
    const Schedule rd_ag = inst("recursive_doubling_allgather", p);
    for (int64_t r = 0; r < p; ++r) {
      // reduce-scatter: log2 p messages carrying n (p-1)/p elements (p-1 blocks);
      // allgather: the same volume; alltoall: log2 p messages of p/2 blocks.
      CHECK(sent(rs, r).messages == k);
      CHECK(sent(rs, r).blocks == p - 1);
      CHECK(sent(ag, r).messages == k);
      CHECK(sent(ag, r).blocks == p - 1);
      CHECK(sent(a2a, r).messages == k);
      CHECK(sent(a2a, r).blocks == k * p / 2);
      // distance of the partner at step s: |rho(s)| for the distance-doubling butterfly
      // (reduce-scatter, alltoall), reversed for the allgather; 2^s for recursive doubling
      int64_t t = 0;
      for (size_t i = 0; i < rs.ranks[size_t(r)].size(); ++i)
        for (const Op& op : rs.ranks[size_t(r)][i])
          if (std::holds_alternative<SendOp>(op)) {
            CHECK(ring_dist(peer_of(op), r, p) == ring_dist(std::abs(oracle_rho(t)), 0, p));
            ++t;
          }
      t = 0;
      for (size_t i = 0; i < a2a.ranks[size_t(r)].size(); ++i)
        for (const Op& op : a2a.ranks[size_t(r)][i])
          if (std::holds_alternative<SendOp>(op)) {
            CHECK(ring_dist(peer_of(op), r, p) == ring_dist(std::abs(oracle_rho(t)), 0, p));
            ++t;
          }
      t = k - 1;
      for (size_t i = 0; i < ag.ranks[size_t(r)].size(); ++i)
        for (const Op& op : ag.ranks[size_t(r)][i])
          if (std::holds_alternative<SendOp>(op)) {
            CHECK(ring_dist(peer_of(op), r, p) == ring_dist(std::abs(oracle_rho(t)), 0, p));
            --t;
          }
      t = 0;
      for (size_t i = 0; i < rd_ag.ranks[size_t(r)].size(); ++i)
        for (const Op& op : rd_ag.ranks[size_t(r)][i])
          if (std::holds_alternative<SendOp>(op)) {
            CHECK(ring_dist(peer_of(op), r, p) == ring_dist(int64_t(1) << t, 0, p));
            ++t;
          }
    }
  }
}

TEST_CASE("Bine large-vector broadcast and reduce: 2 log2 p rounds, n (p-1)/p per phase at the root") {
  for (int64_t p = 2; p <= 128; p *= 2) {
    const int64_t k = lg(p);
    CAPTURE(p);
    const Schedule bc = inst("bine_bcast_bdw", p, 1 % p);
    CHECK(bc.num_rounds == 2 * k);
    // scatter phase (rounds < k): the root sends p-1 blocks and receives none;
    // allgather phase (rounds >= k): every rank but the root receives exactly p-1 blocks,
    // the root (which holds them all after the scatter) none, and nothing is sent to it
    // (issue 48: the allgather sent (p-1)/p of the vector back to the root)
    const int64_t root = 1 % p;
    for (int64_t r = 0; r < p; ++r) {
      int64_t ag_recv = 0, sc_root_recv = 0, sc_root_sent = 0, ag_to_root = 0;
      for (int64_t t = 0; t < bc.num_rounds; ++t)
        for (const Op& op : bc.ranks[size_t(r)][size_t(t)]) {
          if (!std::holds_alternative<RecvOp>(op)) {
            if (t < k && r == root) sc_root_sent += blocks_of(op).size();
            if (t >= k && std::holds_alternative<SendOp>(op) && std::get<SendOp>(op).peer == root) ++ag_to_root;
            continue;
          }
          (t < k ? sc_root_recv : ag_recv) += t < k && r != root ? 0 : blocks_of(op).size();
        }
      CHECK(ag_recv == (r == root ? 0 : p - 1));
      CHECK(ag_to_root == 0);
      if (r == root) {
        CHECK(sc_root_recv == 0);
        CHECK(sc_root_sent == p - 1);
      }
    }
    const Schedule rd = inst("bine_reduce_bdw", p, 0);
    CHECK(rd.num_rounds == 2 * k);
    CHECK(sent(rd, 0, true).blocks == (p - 1) + (p - 1));  // reduce-scatter + gather at the root
  }
}

namespace {
/// Oracle for bine_alltoall_rotated, by brute force over step masks (not via nb()): the
/// move of an item that takes the steps of mask m. Even p: from an even rank the moves
/// alternate +rho(s), -rho(s) (the holder's parity flips with each move); odd p: step s
/// moves by 2^s (Bruck). Returns, for every offset o in 0..p-1, the mask the schedule's rule
/// picks: among the masks whose move is o mod p, the one with the fewest steps, then the
/// smallest negabinary code (the code c with c ^ (c >> 1) = m for even p, c = m for odd p);
/// -1 if none exists.
std::vector<int64_t> rotated_paths(int64_t p) {
  const int64_t k = lg(p);
  std::vector<int64_t> best(size_t(p), -1), best_code(size_t(p), 0);
  for (int64_t m = 0; m < (int64_t(1) << k); ++m) {
    int64_t move = 0, sign = 1;
    for (int64_t s = 0; s < k; ++s) {
      if (!((m >> s) & 1)) continue;
      if (p % 2 == 0) {
        move += sign * oracle_rho(s);
        sign = -sign;
      } else {
        move += int64_t(1) << s;
      }
    }
    int64_t code = m;
    if (p % 2 == 0)  // inverse Gray code: bit i of c is the parity of m's bits >= i
      for (int64_t i = 0; i < k; ++i) code = (code & ~(int64_t(1) << i)) | ((__builtin_popcountll(uint64_t(m) >> i) & 1) << i);
    const size_t o = size_t(((move % p) + p) % p);
    const int pc = __builtin_popcountll(uint64_t(m)), best_pc = best[o] < 0 ? 0 : __builtin_popcountll(uint64_t(best[o]));
    if (best[o] < 0 || pc < best_pc || (pc == best_pc && code < best_code[o])) {
      best[o] = m;
      best_code[o] = code;
    }
  }
  return best;
}
}  // namespace

TEST_CASE("Bine alltoall for every p (bine_alltoall_rotated): partners and blocks per step against brute-force routing") {
  // Every offset has a route in ceil(log2 p) steps: for even p by the parity argument of
  // docs/schedules/bine_alltoall_rotated.md, for odd p by binary digits (Bruck). Checked
  // here well beyond the instantiated range.
  for (int64_t p = 1; p <= 1024; ++p) {
    const std::vector<int64_t> paths = rotated_paths(p);
    for (int64_t o = 0; o < p; ++o) REQUIRE_MESSAGE(paths[size_t(o)] >= 0, "p=" << p << " offset " << o << " has no route");
  }
  for (int64_t p = 1; p <= 40; ++p) {
    CAPTURE(p);
    const int64_t k = lg(p);
    const std::vector<int64_t> paths = rotated_paths(p);
    const Schedule a2a = inst("bine_alltoall_rotated", p);
    for (int64_t r = 0; r < p; ++r) {
      CAPTURE(r);
      int64_t s = 0, total = 0;
      for (const Round& rd : a2a.ranks[size_t(r)]) {
        bool step = false;
        for (const Op& op : rd) {
          if (!is_transfer(op)) continue;
          step = true;
          REQUIRE(s < k);
          int64_t expect_blocks = 0;
          for (int64_t o = 0; o < p; ++o) expect_blocks += (paths[size_t(o)] >> s) & 1;
          CHECK(int64_t(blocks_of(op).size()) == expect_blocks);
          const bool is_send = std::holds_alternative<SendOp>(op);
          int64_t peer = 0;
          if (p % 2 == 0) {
            peer = r % 2 == 0 ? r + oracle_rho(s) : r - oracle_rho(s);  // the paper's partner
          } else {
            peer = is_send ? r + (int64_t(1) << s) : r - (int64_t(1) << s);  // Bruck's
          }
          CHECK(peer_of(op) == ((peer % p) + p) % p);
          if (is_send) total += int64_t(blocks_of(op).size());
        }
        if (step) ++s;
      }
      CHECK(s == k);
      // Power-of-two p: the paper's count, p/2 blocks in each of the log2 p steps.
      if (p > 1 && (p & (p - 1)) == 0) CHECK(total == k * p / 2);
    }
    // Against Bruck's alltoall: no more blocks per rank, and for even p no more ring hops
    // (blocks times the modulo distance of the partner; fewer for even p >= 8 except
    // p = 10, where they tie).
    const Schedule bruck = inst("bruck_alltoall", p);
    auto hops = [p](const Schedule& sc, int64_t r) {
      int64_t h = 0;
      for (const Round& rd : sc.ranks[size_t(r)])
        for (const Op& op : rd)
          if (std::holds_alternative<SendOp>(op)) h += int64_t(blocks_of(op).size()) * ring_dist(peer_of(op), r, p);
      return h;
    };
    for (int64_t r = 0; r < p; ++r) {
      CHECK(sent(a2a, r).blocks <= sent(bruck, r).blocks);
      if (p % 2 == 0) CHECK(hops(a2a, r) <= hops(bruck, r));
      if (p % 2 == 0 && p >= 8 && p != 10) CHECK(hops(a2a, r) < hops(bruck, r));
    }
  }
}

TEST_CASE("binary blocks allreduce: groups from the binary digits of p; messages and blocks per rank") {
  // Oracle from Thakur et al. Sec. 5.2 (seed summary Sec. 4.8), computed here from p's bits:
  // a member of the group of 2^e (groups largest first) halves e times within its group
  // (sending B/2 + ... + B/2^e of the B = 2^floor(lg p) blocks), hands its segment of B/2^e
  // blocks to the 2^(u-e) members of the next larger group 2^u (one message each), and
  // receives one segment from the next smaller group; the allgather mirrors all of it.
  for (int64_t p = 1; p <= 64; ++p) {
    CAPTURE(p);
    int64_t e0 = 0;
    while ((int64_t(2) << e0) <= p) ++e0;
    const int64_t B = int64_t(1) << e0;
    std::vector<int64_t> bits;  // set bits of p, largest first
    for (int64_t e = e0; e >= 0; --e)
      if ((p >> e) & 1) bits.push_back(e);
    const Schedule bb = inst("binary_blocks_allreduce", p);
    CHECK(bb.num_rounds == 2 * (e0 + int64_t(bits.size()) - 1));
    int64_t first = 0;
    for (size_t g = 0; g < bits.size(); ++g) {
      const int64_t e = bits[g], size = int64_t(1) << e, seg = B >> e;
      const bool largest = g == 0, smallest = g + 1 == bits.size();
      const int64_t fanout = largest ? 0 : int64_t(1) << (bits[g - 1] - e);
      for (int64_t r = first; r < first + size; ++r) {
        CAPTURE(r);
        const int64_t halving = B - seg;  // B/2 + ... + B/2^e
        CHECK(sent(bb, r).messages == 2 * e + fanout + (smallest ? 0 : 1));
        CHECK(sent(bb, r).blocks == 2 * halving + (largest ? 0 : seg) + (smallest ? 0 : seg));
        CHECK(sent(bb, r, true).messages == sent(bb, r).messages);
        CHECK(sent(bb, r, true).blocks == sent(bb, r).blocks);
      }
      first += size;
    }
    CHECK(first == p);
  }
}
