// Parametric proofs of the Bine partner rules (compiler/verify/parametric.h): the z3 terms
// against the C++ built-ins on random inputs and against the library's instantiated
// schedules (so the encoding cannot drift from what runs), the proofs for k = 1..30, and
// sabotaged rules whose first failing k must equal the one a brute-force check of the same
// property finds (the oracle below simulates ranks and counts contributions; it shares only
// the built-ins nb, from_nb and mod with the rules).
#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "bine/builtins.hpp"
#include "library.h"
#include "parametric.h"

namespace {

using namespace bine;
using namespace bine::test;

// ---- the rules in C++, as the DSL writes them, with the sabotages of ParametricSabotage ----

int64_t bf_partner(int64_t r, int64_t s, int k, const ParametricSabotage& sab) {
  const bool on = s >= sab.from_step;
  const int64_t rh = bine::from_nb((((int64_t(1) << (s + 1)) - 1) ^ (on ? sab.rho_bit : 0)));
  int64_t q = bine::even(r) ? r + rh : r - rh;
  if (on) q ^= sab.butterfly_flip;
  return bine::mod(q, int64_t(1) << k);
}
int64_t tree_code(int64_t r, int64_t root, int k) { return bine::nb(r - root) & bine::lowmask(k); }
bool tree_cond(int64_t r, int64_t root, int64_t s, int k) {
  const int64_t m = bine::lowmask(k - s), bm = tree_code(r, root, k) & m;
  return bm == 0 || bm == m;
}
int64_t tree_partner(int64_t r, int64_t root, int64_t s, int k, const ParametricSabotage& sab) {
  int64_t q = bine::from_nb(tree_code(r, root, k) ^ bine::lowmask(k - s)) + root;
  if (s >= sab.from_step) q ^= sab.tree_flip;
  return bine::mod(q, int64_t(1) << k);
}

// ---- brute-force oracles of the properties, p = 2^k ----

bool oracle_involution(int k, const ParametricSabotage& sab) {
  const int64_t p = int64_t(1) << k;
  for (int64_t s = 0; s < k; ++s)
    for (int64_t r = 0; r < p; ++r) {
      const int64_t q = bf_partner(r, s, k, sab);
      if (q == r || bf_partner(q, s, k, sab) != r) return false;
    }
  return true;
}
// Contribution counts: after steps 0..s-1 rank x holds cnt[x][y] copies of y's contribution.
bool oracle_reach(int k, const ParametricSabotage& sab) {
  const int64_t p = int64_t(1) << k;
  std::vector<std::vector<int64_t>> cnt(size_t(p), std::vector<int64_t>(size_t(p), 0));
  for (int64_t x = 0; x < p; ++x) cnt[size_t(x)][size_t(x)] = 1;
  for (int64_t s = 0; s < k; ++s) {
    auto next = cnt;
    for (int64_t x = 0; x < p; ++x)
      for (int64_t y = 0; y < p; ++y) next[size_t(x)][size_t(y)] += cnt[size_t(bf_partner(x, s, k, sab))][size_t(y)];
    cnt = std::move(next);
  }
  for (const auto& row : cnt)
    for (int64_t c : row)
      if (c != 1) return false;
  return true;
}
// The bcast program run for every root: senders must meet receivers pairwise at every step,
// everyone ends with the data, the root never receives.
bool oracle_tree(int k, const ParametricSabotage& sab) {
  const int64_t p = int64_t(1) << k;
  for (int64_t root = 0; root < p; ++root) {
    std::vector<char> have(size_t(p), 0);
    have[size_t(root)] = 1;
    for (int64_t s = 0; s < k; ++s) {
      std::vector<char> recv(size_t(p), 0);
      for (int64_t r = 0; r < p; ++r) recv[size_t(r)] = !have[size_t(r)] && tree_cond(r, root, s, k);
      for (int64_t r = 0; r < p; ++r) {
        const int64_t q = tree_partner(r, root, s, k, sab);
        if (have[size_t(r)] && (q == r || !recv[size_t(q)] || tree_partner(q, root, s, k, sab) != r)) return false;
        if (recv[size_t(r)] && (q == r || !have[size_t(q)] || tree_partner(q, root, s, k, sab) != r)) return false;
      }
      for (int64_t r = 0; r < p; ++r) have[size_t(r)] |= recv[size_t(r)];
    }
    for (char h : have)
      if (!h) return false;
  }
  return true;
}

/// The first k in 1..k_hi where the oracle fails (-1: none).
template <class F>
int first_failing_k(int k_hi, F&& holds) {
  for (int k = 1; k <= k_hi; ++k)
    if (!holds(k)) return k;
  return -1;
}

int64_t cx_value(const ParametricResult& r, const std::string& name) {
  for (const auto& [n, v] : r.counterexample)
    if (n == name) return v;
  FAIL("no value '" << name << "' in the counterexample: " << r.line());
  return -1;
}

}  // namespace

TEST_CASE("parametric: the z3 terms equal the C++ built-ins on random inputs") {
  if (!have_z3()) {
    MESSAGE("built without z3: skipped");
    return;
  }
  std::mt19937_64 rng(18);
  std::vector<int64_t> xs = {0, 1, -1, 2, -2, 3, INT32_MAX, INT32_MIN, int64_t(INT32_MAX) + 1, INT64_MAX, INT64_MIN};
  for (int i = 0; i < 400; ++i) xs.push_back(int64_t(rng()) >> (rng() % 64));
  for (int64_t x : xs) {
    CHECK(smt_eval::nb(x) == bine::nb(x));
    CHECK(smt_eval::from_nb(x) == bine::from_nb(x));
    for (int64_t b : {int64_t(2), int64_t(1) << (rng() % 31), int64_t(1 + rng() % 1000)}) CHECK(smt_eval::mod(x, b) == bine::mod(x, b));
  }
  for (int64_t s = 0; s <= 29; ++s) CHECK(smt_eval::rho(s) == bine::rho(s));
  for (int i = 0; i < 300; ++i) {
    const int k = 1 + int(rng() % 30);
    const int64_t p = int64_t(1) << k, r = int64_t(rng() % uint64_t(p)), root = int64_t(rng() % uint64_t(p));
    const int64_t s = int64_t(rng() % uint64_t(k));
    CHECK(smt_eval::butterfly_partner(r, s, k) == bine::mod(bine::even(r) ? r + bine::rho(s) : r - bine::rho(s), p));
    CHECK(smt_eval::tree_partner(r, root, s, k) == tree_partner(r, root, s, k, {}));
    int64_t step = -1;
    for (int64_t t = 0; t < k && r != root && step < 0; ++t)
      if (tree_cond(r, root, t, k)) step = t;
    CHECK(smt_eval::tree_recv_step(r, root, k) == step);
  }
}

TEST_CASE("parametric: the z3 terms equal the library's instances (p = 2^k, k = 1..8)") {
  if (!have_z3()) return;
  for (int k = 1; k <= 8; ++k) {
    const int64_t p = int64_t(1) << k;
    // Butterflies: every op of round t is with the partner of step t (allgather: k-1-t).
    for (const char* name : {"bine_allreduce_lat", "bine_reduce_scatter", "bine_allgather"}) {
      const Schedule sch = inst(name, p);
      REQUIRE(sch.num_rounds == k);
      const bool halving = std::string(name) == "bine_allgather";
      for (int64_t r = 0; r < p; ++r)
        for (int64_t t = 0; t < k; ++t) {
          const int64_t want = smt_eval::butterfly_partner(r, halving ? k - 1 - t : t, k);
          const Round& rd = sch.ranks[size_t(r)][size_t(t)];
          CHECK(!rd.empty());
          for (const Op& op : rd) CHECK(peer_of(op) == want);
        }
    }
    // The bcast tree: a rank receives exactly at its receive step from its partner there,
    // and sends at every later step (the root: every step) to its partner of that step.
    for (int64_t root : {int64_t(0), int64_t(1), p / 2, p - 1, int64_t(5) % p}) {
      const Schedule sch = inst("bine_bcast_lat", p, root);
      REQUIRE(sch.num_rounds == k);
      for (int64_t r = 0; r < p; ++r) {
        const int64_t step = smt_eval::tree_recv_step(r, root, k);
        CHECK((step < 0) == (r == root));
        for (int64_t t = 0; t < k; ++t) {
          const Round& rd = sch.ranks[size_t(r)][size_t(t)];
          const int64_t q = smt_eval::tree_partner(r, root, t, k);
          if (t == step) {
            REQUIRE(rd.size() == 1);
            CHECK(std::holds_alternative<RecvOp>(rd[0]));
            CHECK(peer_of(rd[0]) == q);
          } else if (r == root || t > step) {
            REQUIRE(rd.size() == 1);
            CHECK(std::holds_alternative<SendOp>(rd[0]));
            CHECK(peer_of(rd[0]) == q);
          } else {
            CHECK(rd.empty());
          }
        }
      }
    }
  }
}

TEST_CASE("parametric: the Bine partner rules are proved for k = 1..30") {
  if (!have_z3()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ParametricResult> res = prove_partner_rules();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(res.size() == 4);
  for (const ParametricResult& r : res) {
    INFO(r.line());
    CHECK(r.proved);
    CHECK(r.failed_k == -1);
    CHECK(r.line().find("k=1..30 (p=2^k) proved") != std::string::npos);
  }
  MESSAGE("z3: " << secs << " s for the four properties, k = 1..30");
}

TEST_CASE("parametric: sabotaged rules fail at the first k where brute force fails, with a real counterexample") {
  if (!have_z3()) return;
  const int K = 8;  // brute force up to p = 256
  struct Case {
    const char* what;
    ParametricSabotage sab;
  };
  ParametricSabotage none, flip2, flip32, rho2, tree1, tree2;
  flip2.butterfly_flip = 2;
  flip32.butterfly_flip = 32;  // no effect below p = 64
  rho2.rho_bit = 2;            // rho(s >= 1) with digit 1 flipped: rho(1) = 1 instead of -1
  rho2.from_step = 1;
  tree1.tree_flip = 1;
  tree1.from_step = 1;
  tree2.tree_flip = 2;
  for (const Case& c : {Case{"none", none}, Case{"butterfly ^ 2", flip2}, Case{"butterfly ^ 32", flip32},
                        Case{"rho digit 1", rho2}, Case{"tree ^ 1 from step 1", tree1}, Case{"tree ^ 2", tree2}}) {
    INFO("sabotage: " << c.what);
    ParametricOptions opt;
    opt.k_hi = K;
    opt.sabotage = c.sab;
    const std::vector<ParametricResult> res = prove_partner_rules(opt);
    REQUIRE(res.size() == 4);
    CHECK(res[0].proved);  // the sabotage is in both the 64-bit rule and the model
    const int inv_k = first_failing_k(K, [&](int k) { return oracle_involution(k, c.sab); });
    const int reach_k = first_failing_k(K, [&](int k) { return oracle_reach(k, c.sab); });
    const int tree_k = first_failing_k(K, [&](int k) { return oracle_tree(k, c.sab); });
    CHECK(res[1].failed_k == inv_k);
    // The window invariant is stronger than the contribution counts: never proved where
    // the counts fail, so it fails at or before their first failing k.
    if (res[2].proved) CHECK(reach_k == -1);
    if (reach_k > 0) CHECK((res[2].failed_k > 0 && res[2].failed_k <= reach_k));
    CHECK(res[3].failed_k == tree_k);
    for (const ParametricResult& r : res) {
      if (r.proved) continue;
      INFO(r.line());
      CHECK(r.status == "counterexample");
      CHECK(r.line().find("FAILED at k=" + std::to_string(r.failed_k) + ": counterexample") != std::string::npos);
      CHECK(!r.reason.empty());
    }
    // The counterexample values are a real violation of the C++ rule.
    if (!res[1].proved) {
      const int k = res[1].failed_k;
      const int64_t r = cx_value(res[1], "r"), s = cx_value(res[1], "s");
      const int64_t q = bf_partner(r, s, k, c.sab);
      CHECK(cx_value(res[1], "q(r,s)") == q);
      CHECK((q == r || bf_partner(q, s, k, c.sab) != r));
    }
    if (!res[3].proved) {
      const int k = res[3].failed_k;
      CHECK(!oracle_tree(k, c.sab));
    }
  }
  // The model no longer equal to the built-ins: refinement fails at k = 1, naming the rule.
  ParametricOptions opt;
  opt.k_hi = 3;
  opt.sabotage.model_flip = 1;
  const ParametricResult r0 = prove_partner_rules(opt)[0];
  CHECK(!r0.proved);
  CHECK(r0.failed_k == 1);
  CHECK(r0.reason.find("butterfly partner") != std::string::npos);
}
