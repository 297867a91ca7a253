// The region built-ins and the locality-aware Bruck allgather (dsl/lib/locality.bine)
// against the seed. Oracles:
//   [LB] /work/shared/seeds/locality-aware-bruck.txt: Example 2.1 (16 processes in 4
//        regions: standard Bruck P0 sends 15 values in 4 non-local messages, the
//        locality-aware one 4 values in 1), Sec. 4 and Eq. 4 (log_pl(r) non-local messages,
//        b/pl non-local bytes when r = pl, b - 1 local bytes); unequal regions are ours
//        (w = the smallest region plays pl), checked by the verifier and message counts;
//   the verifier (postcondition, deadlock freedom, races) for every layout in a range.
// Non-local counts here walk the instance's sends with the layout's labels computed here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "bine/builtins.hpp"
#include "check.h"
#include "cost.h"
#include "library.h"

namespace {

using namespace bine;
using namespace bine::test;

std::vector<int64_t> labels_of(const std::string& spec, int64_t p) {
  std::vector<int64_t> l;
  std::string err;
  INFO(spec << ": " << err);
  REQUIRE(region_labels(spec, p, l, err));
  return l;
}

/// What one rank sends, local (same label) and non-local, in blocks (one value per block).
struct Sent {
  int64_t msgs = 0, local_msgs = 0;
  int64_t values = 0, local_values = 0;
};
Sent sent_by(const Schedule& s, int64_t rank, const std::vector<int64_t>& label) {
  Sent out;
  for (const Round& rd : s.ranks[size_t(rank)])
    for (const Op& op : rd)
      if (const auto* snd = std::get_if<SendOp>(&op)) {
        const int64_t n = int64_t(block_elements(snd->blocks, uint64_t(s.p), s.blocks));
        if (label[size_t(rank)] == label[size_t(snd->peer)]) {
          ++out.local_msgs;
          out.local_values += n;
        } else {
          ++out.msgs;
          out.values += n;
        }
      }
  return out;
}

/// Smallest k with pl^k >= rn.
int64_t log_ceil(int64_t rn, int64_t pl) {
  int64_t k = 0;
  for (int64_t x = 1; x < rn; x *= pl) ++k;
  return k;
}

/// The critical path of `s` on the layout `spec` with only non-local (local = false) or
/// only local messages priced: alpha 1, beta 1/1024 per byte (one byte per value).
CostResult priced(const Schedule& s, const std::string& spec, bool local) {
  CostParams prm;
  prm.alpha = local ? 0 : 1;
  prm.beta = local ? 0 : 1.0 / 1024;
  prm.alpha_local = local ? 1 : 0;
  prm.beta_local = local ? 1.0 / 1024 : 0;
  prm.region = labels_of(spec, s.p);
  const CostResult r = simulate_cost(s, CostVector{uint64_t(s.p), 1}, prm);
  REQUIRE(r.ok);
  return r;
}

}  // namespace

TEST_CASE("region specs and the region built-ins") {
  std::vector<int64_t> l;
  std::string err;
  CHECK(region_labels("3", 7, l, err));
  CHECK(l == std::vector<int64_t>{0, 0, 0, 1, 1, 1, 2});
  CHECK(region_labels("rr:3", 5, l, err));
  CHECK(l == std::vector<int64_t>{0, 1, 2, 0, 1});
  CHECK(region_labels("map:7,3,7,3", 4, l, err));
  CHECK(region_labels("one", 3, l, err));
  CHECK(l == std::vector<int64_t>{0, 0, 0});
  CHECK_FALSE(region_labels("map:1,2", 3, l, err));
  CHECK(err == "region spec 'map:1,2': 2 labels for p = 3 ranks");
  CHECK_FALSE(region_labels("map:1,x", 2, l, err));
  CHECK(err.find("label 1 is not a non-negative integer") != std::string::npos);
  CHECK_FALSE(region_labels("0", 2, l, err));
  CHECK_FALSE(region_labels("rr:", 2, l, err));
  CHECK_FALSE(region_labels("socket", 2, l, err));
  CHECK(err.find("expected K (ranks per region), rr:N, map:L0,L1,... or one") != std::string::npos);
  // Regions are numbered by their lowest rank, members in rank order.
  set_region_labels({7, 3, 7, 3, 5});
  CHECK(regions() == 3);
  CHECK(region(0) == 0);
  CHECK(region(1) == 1);
  CHECK(region(4) == 2);
  CHECK(region(-1) == 2);  // ranks wrap
  CHECK(local_rank(2) == 1);
  CHECK(region_size(0) == 2);
  CHECK(region_size(5) == 1);  // regions wrap
  CHECK(region_rank(1, 1) == 3);
  CHECK(take_domain_error() == nullptr);
  CHECK(region_rank(2, 1) == 0);
  CHECK(std::string(take_domain_error()) == "region_rank index outside the region");
  // A bad spec binds an error that the built-ins raise.
  {
    RegionsScope scope("map:0");
    bind_regions(2);
    CHECK(regions() == 0);
    CHECK(std::string(take_domain_error()) == "region spec 'map:0': 1 labels for p = 2 ranks");
  }
  bind_regions(2);  // the default: one region
  CHECK(regions() == 1);
  CHECK(region_size(0) == 2);
}

TEST_CASE("[LB] Example 2.1: locality-aware Bruck, 16 processes in 4 regions") {
  RegionsScope scope("4");
  const Schedule s = inst("locality_aware_bruck_allgather", 16);
  const Schedule b = inst("bruck_allgather", 16);
  const std::vector<int64_t> label = labels_of("4", 16);
  // Standard Bruck: P0 sends 15 values in 4 non-local messages.
  const Sent b0 = sent_by(b, 0, label);
  CHECK(b0.msgs == 4);
  CHECK(b0.values == 15);
  // Locality-aware: every process sends at most one non-local message of 4 values (P1,
  // P2, P3: the region's values to regions 3, 2, 1); the first of a region sends none.
  for (int64_t x = 0; x < 16; ++x) {
    INFO("rank " << x);
    const Sent a = sent_by(s, x, label);
    CHECK(a.msgs == (x % 4 == 0 ? 0 : 1));
    CHECK(a.values == (x % 4 == 0 ? 0 : 4));
  }
  CHECK(s.ranks[1][2].size() == 2);  // round 2: P1 sends to P13 and receives from P5
  // Eq. 4 with free local messages: T = log_pl(r) alpha + b/pl beta = 1 alpha + 4 beta.
  const CostResult r = priced(s, "4", false);
  CHECK(r.critical.coef_alpha == 1);
  CHECK(r.critical.coef_beta == 4);
  CHECK(priced(b, "4", false).critical.coef_beta == 15);
}

TEST_CASE("[LB] Eq. 4 against the cost model") {
  // r = pl regions (one non-local step): Eq. 4 term by term. Non-local: log_pl(r) = 1
  // message of b/pl bytes. Local: b - 1 bytes; messages: the Sec. 4 text's log2(pl) *
  // (log_pl(r) + 1) (ceil for pl not a power of two), where Eq. 4 prints (log_pl(r) + 1).
  for (int64_t pl : {2, 3, 4, 5, 6, 8}) {
    const int64_t p = pl * pl;
    const std::string spec = std::to_string(pl);
    RegionsScope scope(spec);
    INFO("p=" << p << " pl=" << pl);
    const Schedule s = inst("locality_aware_bruck_allgather", p);
    const CostResult nl = priced(s, spec, false);
    CHECK(nl.critical.coef_alpha == 1);
    CHECK(nl.critical.coef_beta == double(p / pl));
    const CostResult lo = priced(s, spec, true);
    CHECK(lo.critical.coef_beta_local == double(p - 1));
    CHECK(lo.critical.coef_alpha_local == double(ceil_log2(pl) * 2));
  }
  // r = pl^2 (two non-local steps): log_pl(r) = 2 messages, but pl + pl^2 non-local bytes
  // (Sec. 4: "m/p * pl^i values" in step i = 1, 2), more than Eq. 4's b/pl = pl^2; the
  // local bytes stay b - 1.
  for (int64_t pl : {2, 3, 4}) {
    const int64_t p = pl * pl * pl;
    const std::string spec = std::to_string(pl);
    RegionsScope scope(spec);
    INFO("p=" << p << " pl=" << pl);
    const Schedule s = inst("locality_aware_bruck_allgather", p);
    const CostResult nl = priced(s, spec, false);
    CHECK(nl.critical.coef_alpha == 2);
    CHECK(nl.critical.coef_beta == double(pl + pl * pl));
    CHECK(priced(s, spec, true).critical.coef_beta_local == double(p - 1));
  }
}

TEST_CASE("[LB] at most ceil(log_w r) non-local messages per rank, any number and size of regions") {
  int64_t cases = 0;
  for (int64_t p = 2; p <= 64; ++p)
    for (int64_t pl = 2; pl <= p; ++pl) {
      if (p % pl != 0) continue;
      for (const std::string& spec : {std::to_string(pl), "rr:" + std::to_string(p / pl)}) {
        RegionsScope scope(spec);
        INFO("p=" << p << " --regions " << spec);
        const Schedule s = inst("locality_aware_bruck_allgather", p);
        const std::vector<int64_t> label = labels_of(spec, p);
        const int64_t k = log_ceil(p / pl, pl);
        int64_t most = 0, values = 0;
        for (int64_t x = 0; x < p; ++x) {
          const Sent a = sent_by(s, x, label);
          most = std::max(most, a.msgs);
          values = std::max(values, a.values);
        }
        CHECK(most == k);
        CHECK(values < p);  // never more than the other ranks' values
        ++cases;
      }
    }
  CHECK(cases > 200);
  // Unequal regions: w = the smallest region (>= 2), at most ceil(log_w rn) non-local
  // messages; a region of one rank falls back to standard Bruck (ceil(lg p) messages).
  for (const std::string& spec : {std::string("map:0,0,0,1,1,2,2,2,2,1"), std::string("3"), std::string("map:0,1,0,1,2,2,2"),
                                  std::string("map:0,0,1,1,1,2,2,2,2,3,3,3,3,3")}) {
    const int64_t p = spec == "3" ? 11 : int64_t(std::count(spec.begin(), spec.end(), ',')) + 1;
    RegionsScope scope(spec);
    INFO("p=" << p << " --regions " << spec);
    const Schedule s = inst("locality_aware_bruck_allgather", p);
    const std::vector<int64_t> label = labels_of(spec, p);
    std::vector<int64_t> size(size_t(p), 0);
    for (int64_t x : label) ++size[size_t(x)];
    int64_t w = p, rn = 0;
    for (int64_t c : size)
      if (c > 0) {
        w = std::min(w, c);
        ++rn;
      }
    int64_t most = 0;
    for (int64_t x = 0; x < p; ++x) most = std::max(most, sent_by(s, x, label).msgs);
    CHECK(w >= 2);
    CHECK(most == log_ceil(rn, w));
  }
}

/// Proves locality_aware_bruck_allgather for p = lo..hi under the layout `spec`; the
/// number of instances proved (every p applies).
int64_t prove(const std::string& spec, int64_t lo, int64_t hi) {
  RegionsScope scope(spec);
  CheckOptions opt;
  opt.p_lo = lo;
  opt.p_hi = hi;
  DiagnosticSink diags;
  const CheckReport rep = check_schedule(library(), sched("locality_aware_bruck_allgather"), opt, diags);
  INFO("p=" << lo << ".." << hi << " --regions " << spec);
  CHECK(rep.ok);
  CHECK(rep.instances == hi - lo + 1);
  return rep.instances;
}
/// The map: spec of the labels label(0), ..., label(p - 1).
template <class F>
std::string map_spec(int64_t p, F label) {
  std::string spec = "map:";
  for (int64_t x = 0; x < p; ++x) spec += (x ? "," : "") + std::to_string(label(x));
  return spec;
}

TEST_CASE("[LB] locality_aware_bruck_allgather verified for every layout in a range") {
  // Every p <= 64 with K consecutive ranks per region (the last one smaller when K does
  // not divide p) and with K round-robin regions, for every K <= p (K > p is the layout
  // of K = p: one region, p regions of one rank); shuffled non-contiguous equal regions;
  // pseudo-random unequal layouts.
  int64_t proved = 0;
  for (int64_t k = 1; k <= 64; ++k) {
    proved += prove(std::to_string(k), k, 64);
    proved += prove("rr:" + std::to_string(k), k, 64);
  }
  // Shuffled equal regions: rank x in region (x * 7 + 3) mod p mod n (7 coprime to p).
  for (int64_t p : {6, 12, 16, 20, 24, 30, 36, 48, 60})
    for (int64_t n = 1; n <= p; ++n)
      if (p % n == 0) proved += prove(map_spec(p, [&](int64_t x) { return (x * 7 + 3) % p % n; }), p, p);
  // Unequal regions: labels from a linear congruential sequence, 1 .. p/2 + 1 labels.
  uint64_t seed = 12345;
  auto next = [&seed](uint64_t mod) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((seed >> 33) % mod);
  };
  for (int64_t p = 2; p <= 40; ++p)
    for (int i = 0; i < 6; ++i) {
      const uint64_t labels = 1 + uint64_t(next(uint64_t(p / 2 + 1)));
      proved += prove(map_spec(p, [&](int64_t) { return next(labels); }), p, p);
    }
  MESSAGE(proved << " instances proved");
}

// ---------------------------------------------------------------------------------------
// The two-level form (two_level_locality_aware_bruck_allgather; the seed's Sec. 3: "replacing
// all calls to bruck in Algorithm 2 with an additional layer of loc_bruck"). Socket sizes
// through the wrappers tl_sK of tests/schedules/two_level_sockets.bine.

namespace {

const char* kTwoLevel = "tests/schedules/two_level_sockets.bine";

/// Socket of every rank, computed here from the region labels: sockets are runs of `ss`
/// consecutive local indices (local index: rank order within the region), numbered
/// region * p + local / ss.
std::vector<int64_t> socket_labels(const std::vector<int64_t>& region, int64_t ss) {
  const int64_t p = int64_t(region.size());
  std::vector<int64_t> seen(size_t(p), 0), out(size_t(p), 0);
  for (int64_t x = 0; x < p; ++x) out[size_t(x)] = region[size_t(x)] * p + seen[size_t(region[size_t(x)])]++ / ss;
  return out;
}

/// Messages rank `x` sends that cross sockets but stay in its region.
int64_t inter_socket_msgs(const Schedule& s, int64_t x, const std::vector<int64_t>& region,
                          const std::vector<int64_t>& sock) {
  int64_t n = 0;
  for (const Round& rd : s.ranks[size_t(x)])
    for (const Op& op : rd)
      if (const auto* snd = std::get_if<SendOp>(&op))
        n += region[size_t(x)] == region[size_t(snd->peer)] && sock[size_t(x)] != sock[size_t(snd->peer)];
  return n;
}

/// The transfers of one round (kind, peer, blocks) without source lines, in order.
std::vector<std::tuple<int, int64_t, std::string>> transfers(const Round& rd) {
  std::vector<std::tuple<int, int64_t, std::string>> v;
  for (const Op& op : rd) {
    if (const auto* snd = std::get_if<SendOp>(&op)) v.emplace_back(0, snd->peer, format_blocks(snd->blocks));
    if (const auto* rcv = std::get_if<RecvOp>(&op)) v.emplace_back(1, rcv->peer, format_blocks(rcv->blocks));
  }
  return v;
}

}  // namespace

TEST_CASE("[LB] two-level locality-aware Bruck verified for every layout and socket size in a range") {
  const Program& prog = library_with(kTwoLevel);
  int64_t proved = 0;
  // (tl_s1 and tl_s8 are the one-level form on these layouts: the next test case.)
  for (const char* name : {"two_level_locality_aware_bruck_allgather", "tl_s2", "tl_s3", "tl_s4", "tl_s5"})
    for (int64_t k = 1; k <= 16; ++k)
      for (const std::string& spec : {std::to_string(k), "rr:" + std::to_string(k)}) {
        RegionsScope scope(spec);
        CheckOptions opt;
        opt.p_lo = k;
        opt.p_hi = 32;
        DiagnosticSink diags;
        const CheckReport rep = check_schedule(prog, sched(prog, name), opt, diags);
        INFO(name << " p=" << k << "..32 --regions " << spec);
        CHECK(rep.ok);
        CHECK(rep.instances == 32 - k + 1);
        proved += rep.instances;
      }
  // Unequal regions, labels from a linear congruential sequence.
  uint64_t seed = 777;
  auto next = [&seed](uint64_t mod) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return int64_t((seed >> 33) % mod);
  };
  for (int64_t p = 2; p <= 32; ++p)
    for (const char* name : {"tl_s2", "tl_s3"}) {
      const uint64_t labels = 1 + uint64_t(next(uint64_t(p / 3 + 1)));
      RegionsScope scope(map_spec(p, [&](int64_t) { return next(labels); }));
      CheckOptions opt;
      opt.p_lo = opt.p_hi = p;
      DiagnosticSink diags;
      const CheckReport rep = check_schedule(prog, sched(prog, name), opt, diags);
      INFO(name << " p=" << p << " --regions " << region_spec());
      CHECK(rep.ok);
      proved += rep.instances;
    }
  MESSAGE(proved << " instances proved");
}

TEST_CASE("[LB] two-level with one socket per region, or a socket of one rank, is the one-level form op by op") {
  const Program& prog = library_with(kTwoLevel);
  int64_t compared = 0;
  for (int64_t k : {2, 3, 4, 5, 8})
    for (int64_t p = k; p <= 40; ++p) {
      RegionsScope scope(std::to_string(k));
      // tl_s8: every region of at most 8 ranks is one socket; tl_s1: sockets of one rank.
      for (const char* name : {"tl_s1", "tl_s8"}) {
        CAPTURE(p);
        CAPTURE(k);
        CAPTURE(name);
        const Schedule a = inst(prog, name, p), b = inst(prog, "locality_aware_bruck_allgather", p);
        REQUIRE(a.num_rounds == b.num_rounds);
        for (int64_t x = 0; x < p; ++x)
          for (int64_t t = 0; t < a.num_rounds; ++t)
            CHECK(transfers(a.ranks[size_t(x)][size_t(t)]) == transfers(b.ranks[size_t(x)][size_t(t)]));
        ++compared;
      }
    }
  CHECK(compared > 300);
}

TEST_CASE("[LB] two-level: the one-level non-local messages, and at most (K + 1) ceil(log_w2 sockets) inter-socket ones") {
  // Equal regions of n ranks, sockets of s ranks (s divides n): every rank sends at most
  // K = ceil(log_n r) non-local messages (as the one-level form) and, in each of the K + 1
  // allgathers inside the region, ceil(log_s (n/s)) inter-socket ones; the one-level form's
  // local Bruck crosses sockets more often (its last step always, earlier ones for some
  // ranks). Counts walk the instances with labels computed here.
  int64_t cases = 0;
  for (int64_t s : {2, 3, 4})
    for (int64_t n = 2 * s; n <= 16; n += s)
      for (int64_t rn : {1, 2, 3, 4}) {
        const int64_t p = n * rn;
        const std::string spec = std::to_string(n);
        RegionsScope scope(spec);
        CAPTURE(p);
        CAPTURE(n);
        CAPTURE(s);
        const Program& prog = library_with(kTwoLevel);
        const Schedule two = inst(prog, "tl_s" + std::to_string(s), p);
        const Schedule one = inst("locality_aware_bruck_allgather", p);
        const std::vector<int64_t> region = labels_of(spec, p), sock = socket_labels(region, s);
        int64_t nl_two = 0, nl_one = 0, is_two = 0, is_one = 0;
        for (int64_t x = 0; x < p; ++x) {
          nl_two = std::max(nl_two, sent_by(two, x, region).msgs);
          nl_one = std::max(nl_one, sent_by(one, x, region).msgs);
          is_two = std::max(is_two, inter_socket_msgs(two, x, region, sock));
          is_one = std::max(is_one, inter_socket_msgs(one, x, region, sock));
        }
        CHECK(nl_two == log_ceil(rn, n));
        CHECK(nl_two == nl_one);
        CHECK(is_two == (log_ceil(rn, n) + 1) * log_ceil(n / s, s));
        CHECK(is_two < is_one);
        ++cases;
      }
  CHECK(cases >= 30);
}
