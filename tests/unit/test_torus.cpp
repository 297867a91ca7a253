// bine_torus_allreduce (dsl/lib/torus.bine): the Bine trees paper's torus form (Sec. 5.4.1:
// ranks as torus coordinates, the vector in six parts, six collectives in parallel, each in
// a different direction) against oracles computed here:
//   - the verifier (postcondition, deadlock freedom, races) for every torus shape and port
//     count of tests/schedules/torus_dims.bine;
//   - coordinates from r = x + dx * (y + dy * z): every message runs along one dimension;
//     round 0's six messages go to the six torus neighbours (+-x, +-y, +-z);
//   - the bandwidth-optimal volume 2 (p - 1) / p of the vector per rank (Thakur et al.,
//     Sec. 4.4, Rabenseifner's allreduce; the flat Bine bdw sends as much);
//   - links crossed from the torus rank map's minimal routes (tested against a walk
//     around the rings in test_topo.cpp): fewer than the flat bine_allreduce_bdw's;
//   - the cost model with K ports per rank (CostParams::ports) against the closed form of
//     6 slices in 6 / K waves per round, derived here.
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "bine/blockset.hpp"
#include "check.h"
#include "cost.h"
#include "library.h"
#include "machine.h"

namespace {

using namespace bine;
using namespace bine::test;

const char* kShapes = "tests/schedules/torus_dims.bine";

using Dims = std::array<int64_t, 3>;

/// The default shape of bine_torus_allreduce at p = 2^k (its params): dx = 2^floor((k+2)/3),
/// dy = 2^floor((k - log2 dx + 1)/2), dz = p / (dx dy).
Dims default_dims(int64_t p) {
  const int64_t k = log2(p), kx = (k + 2) / 3, ky = (k - kx + 1) / 2;
  return {int64_t(1) << kx, int64_t(1) << ky, p >> (kx + ky)};
}

Dims coords(int64_t r, const Dims& d) { return {r % d[0], r / d[0] % d[1], r / (d[0] * d[1])}; }

/// The dimensions in which a and b differ.
int differing(int64_t a, int64_t b, const Dims& d) {
  const Dims x = coords(a, d), y = coords(b, d);
  return (x[0] != y[0]) + (x[1] != y[1]) + (x[2] != y[2]);
}

std::string torus_spec(const Dims& d) {
  return "torus:" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]);
}

/// Links crossed by all sends, each weighted by its share of the vector (blocks / B; the
/// blocks of these schedules are equal when B divides n).
double vector_hops(const Schedule& s, const RankMap& m) {
  double h = 0;
  for (int64_t r = 0; r < s.p; ++r)
    for (const Round& rd : s.ranks[size_t(r)])
      for (const Op& op : rd)
        if (const auto* snd = std::get_if<SendOp>(&op)) h += double(m.hops(r, snd->peer)) * double(snd->blocks.size()) / double(s.blocks);
  return h;
}

}  // namespace

TEST_CASE("[BT] bine_torus_allreduce verified on every shape and port count of the wrappers") {
  const Program& prog = library_with(kShapes);
  auto pow2_count = [](int64_t lo, int64_t hi) {
    int64_t n = 0;
    for (int64_t p = 1; p <= hi; p *= 2) n += p >= lo;
    return n;
  };
  struct Want {
    const char* name;
    int64_t instances;  // p = 1..128 that the wrapper's requires admits
  };
  int64_t proved = 0;
  for (const Want& w : {Want{"bine_torus_allreduce", 128}, Want{"tor_ring_p6", pow2_count(1, 128)},
                        Want{"tor_plane_p4", pow2_count(1, 128)}, Want{"tor_2x8_p3", pow2_count(16, 128)},
                        Want{"tor_z_p5", pow2_count(2, 128)}, Want{"tor_p1", 128}, Want{"tor_p7", 128}}) {
    CheckOptions opt;
    opt.p_lo = 1;
    opt.p_hi = 128;
    DiagnosticSink diags;
    const CheckReport rep = check_schedule(prog, sched(prog, w.name), opt, diags);
    INFO(w.name << " p=1..128");
    CHECK(rep.ok);
    CHECK(rep.instances == w.instances);
    proved += rep.instances;
  }
  MESSAGE(proved << " instances proved");
}

TEST_CASE("[BT] Sec. 5.4.1: one dimension per message, the six neighbours first, the bdw volume") {
  const Program& prog = library_with(kShapes);
  struct Case {
    const char* name;
    int64_t p;
    Dims dims;
    int64_t ports;
  };
  for (const Case& c : {Case{"bine_torus_allreduce", 64, default_dims(64), 6}, Case{"bine_torus_allreduce", 512, default_dims(512), 6},
                        Case{"bine_torus_allreduce", 32, default_dims(32), 6}, Case{"tor_ring_p6", 16, {16, 1, 1}, 6},
                        Case{"tor_plane_p4", 128, {16, 8, 1}, 4}, Case{"tor_2x8_p3", 64, {2, 8, 4}, 3},
                        Case{"tor_p7", 256, default_dims(256), 7}}) {
    INFO(c.name << " p=" << c.p << " " << torus_spec(c.dims));
    REQUIRE(c.dims[0] * c.dims[1] * c.dims[2] == c.p);
    const Schedule s = inst(prog, c.name, c.p);
    CHECK(s.blocks == c.ports * c.p);
    CHECK(s.num_rounds == 2 * log2(c.p));
    for (int64_t r = 0; r < c.p; ++r) {
      double sent = 0;
      for (int64_t t = 0; t < s.num_rounds; ++t) {
        int64_t sends = 0;
        for (const Op& op : s.ranks[size_t(r)][size_t(t)]) {
          if (!is_transfer(op)) continue;
          CHECK(differing(r, peer_of(op), c.dims) == 1);
          if (const auto* snd = std::get_if<SendOp>(&op)) {
            ++sends;
            sent += double(snd->blocks.size()) / double(s.blocks);
          }
        }
        CHECK(sends == c.ports);  // one message per slice and round
      }
      CHECK(sent == doctest::Approx(2.0 * double(c.p - 1) / double(c.p)));
    }
    // Six slices on a torus with every ring of at least 4: round 0 reaches the six
    // neighbours, one each.
    if (c.ports == 6 && c.dims[0] >= 4 && c.dims[1] >= 4 && c.dims[2] >= 4)
      for (int64_t r = 0; r < c.p; ++r) {
        std::set<int64_t> want, got;
        const Dims x = coords(r, c.dims);
        for (int i = 0; i < 3; ++i)
          for (int64_t dir : {1, -1}) {
            Dims y = x;
            y[size_t(i)] = (x[size_t(i)] + dir + c.dims[size_t(i)]) % c.dims[size_t(i)];
            want.insert(y[0] + c.dims[0] * (y[1] + c.dims[1] * y[2]));
          }
        for (const Op& op : s.ranks[size_t(r)][0])
          if (std::holds_alternative<SendOp>(op)) got.insert(peer_of(op));
        CHECK(got == want);
      }
  }
}

TEST_CASE("[BT] Sec. 5.4.1: fewer links crossed on the torus than the flat Bine bdw") {
  for (int64_t p : {64, 256, 512}) {
    const Dims d = default_dims(p);
    const RankMap m = rank_map(torus_spec(d), p);
    const double torus = vector_hops(inst("bine_torus_allreduce", p), m);
    const double flat = vector_hops(inst("bine_allreduce_bdw", p), m);
    MESSAGE("p=" << p << " " << torus_spec(d) << ": links crossed x vector share: torus " << torus << ", flat bdw " << flat
                 << " (ratio " << torus / flat << ")");
    CHECK(torus < 0.75 * flat);
  }
}

TEST_CASE("[BT] Sec. 5.4.1 priced with K ports per rank: the closed form of 6 / K waves per round") {
  // Each of the 2 log2 p rounds carries 6 equal messages per rank (one per slice, n / (6 *
  // 2^(t+1)) bytes in round t of the reduce-scatter, the same in its mirror); with K ports
  // they go in W = 6 / K waves of alpha + m beta. Every rank reduces (p - 1) / p of the
  // vector, one element after the other: T = 2 log2 p W alpha + 2 (p - 1) / p (n W / 6)
  // beta + (p - 1) / p n gamma (n in bytes for beta, in elements for gamma). The flat bdw
  // has one message per round, so extra ports do not change its cost.
  const double alpha = 1e-6, beta = 1e-10, gamma = 3e-10;
  for (int64_t p : {8, 64, 512}) {
    const uint64_t elems = uint64_t(6 * p) * 1024;  // every block holds 1024 elements
    const Schedule torus = inst("bine_torus_allreduce", p), flat = inst("bine_allreduce_bdw", p);
    const double k = double(log2(p)), n = double(elems) * 4, share = double(p - 1) / double(p);
    for (int64_t ports : {1, 2, 3, 6}) {
      CostParams prm;
      prm.alpha = alpha;
      prm.beta = beta;
      prm.gamma = gamma;
      prm.ports = ports;
      const CostResult t = simulate_cost(torus, CostVector{elems, 4}, prm);
      const CostResult f = simulate_cost(flat, CostVector{elems, 4}, prm);
      REQUIRE(t.ok);
      REQUIRE(f.ok);
      const double waves = 6.0 / double(ports);
      INFO("p=" << p << " ports=" << ports);
      CHECK(t.makespan == doctest::Approx(2 * k * waves * alpha + 2 * share * n * waves / 6 * beta + share * double(elems) * gamma).epsilon(1e-12));
      CHECK(f.makespan == doctest::Approx(2 * k * alpha + 2 * share * n * beta + share * double(elems) * gamma).epsilon(1e-12));
    }
  }
  CostParams bad;
  bad.ports = 0;
  CHECK_FALSE(simulate_cost(inst("bine_torus_allreduce", 8), CostVector{48, 4}, bad).ok);
}
