// Parametric proofs of the Bine partner rules with z3 (parametric.h, docs/verifier.md).
#include "parametric.h"

#include <array>
#include <chrono>

#ifdef BINE_HAVE_Z3
#include <z3++.h>
#endif

namespace bine {

const char* parametric_property_name(ParametricProperty p) {
  switch (p) {
    case ParametricProperty::model_refinement: return "model_refinement";
    case ParametricProperty::butterfly_involution: return "butterfly_involution";
    case ParametricProperty::butterfly_reach: return "butterfly_reach";
    case ParametricProperty::tree_spanning: return "tree_spanning";
  }
  return "?";
}

namespace {

const char* description(ParametricProperty p) {
  switch (p) {
    case ParametricProperty::model_refinement:
      return "bine partner rules as the runtime computes them (64-bit, mod p) equal their k-bit model";
    case ParametricProperty::butterfly_involution:
      return "bine butterfly partner r +- rho(s) is an involution without fixed points at every step s < k";
    case ParametricProperty::butterfly_reach:
      return "bine butterfly (distance doubling and halving): every rank's contribution reaches every rank exactly once";
    case ParametricProperty::tree_spanning:
      return "bine distance-halving tree (bcast), every root: one receive per non-root rank, from a parent that "
             "received earlier or is the root, sends matching receives";
  }
  return "?";
}

}  // namespace

std::string ParametricResult::line() const {
  std::string l = std::string("parametric proofs (z3): ") + description(property) + ": k=" + std::to_string(k_lo) +
                  ".." + std::to_string(k_hi) + " (p=2^k) ";
  if (proved) return l + "proved";
  if (status == "no-z3") return l + "NOT PROVED: " + reason;
  l += "FAILED at k=" + std::to_string(failed_k) + ": " + status;
  if (!reason.empty()) l += " (" + reason + ")";
  for (const auto& [name, v] : counterexample) l += " " + name + "=" + std::to_string(v);
  return l;
}

#ifndef BINE_HAVE_Z3

bool have_z3() { return false; }

std::vector<ParametricResult> prove_partner_rules(const ParametricOptions& opt) {
  std::vector<ParametricResult> out;
  for (ParametricProperty p : kParametricProperties) {
    ParametricResult r;
    r.property = p;
    r.k_lo = opt.k_lo;
    r.k_hi = opt.k_hi;
    r.failed_k = opt.k_lo;
    r.status = "no-z3";
    r.reason = "bine-cc was built without z3 (Debian: libz3-dev; docs/verifier.md)";
    out.push_back(r);
  }
  return out;
}

namespace smt_eval {
int64_t nb(int64_t) { return -1; }
int64_t from_nb(int64_t) { return -1; }
int64_t rho(int64_t) { return -1; }
int64_t mod(int64_t, int64_t) { return -1; }
int64_t butterfly_partner(int64_t, int64_t, int, const ParametricSabotage&) { return -1; }
int64_t tree_recv_step(int64_t, int64_t, int) { return -1; }
int64_t tree_partner(int64_t, int64_t, int64_t, int, const ParametricSabotage&) { return -1; }
}  // namespace smt_eval

#else

namespace {

// ---- the rules as z3 terms: 64-bit bit-vectors for the language's int64 values ----

constexpr unsigned W = 64;
constexpr uint32_t kMask = 0xAAAAAAAAu;  // bine::kNegabinaryMask

z3::expr num(z3::context& c, int64_t v) { return c.bv_val(v, W); }

/// nb(x) = int64(uint32((uint32(x) + M) ^ M)).
z3::expr z_nb(const z3::expr& x) {
  z3::context& c = x.ctx();
  const z3::expr m = c.bv_val(uint64_t(kMask), 32);
  return z3::zext((x.extract(31, 0) + m) ^ m, W - 32);
}
/// from_nb(b) = int64(int32((uint32(b) ^ M) - M)).
z3::expr z_from_nb(const z3::expr& b) {
  z3::context& c = b.ctx();
  const z3::expr m = c.bv_val(uint64_t(kMask), 32);
  return z3::sext((b.extract(31, 0) ^ m) - m, W - 32);
}
/// rho(s) = from_nb((1 << (s + 1)) - 1), s a step (0..29).
/// `wrong_bit`: XORed into the digit pattern (ParametricSabotage::rho_bit).
z3::expr z_rho(z3::context& c, int64_t s, int64_t wrong_bit = 0) {
  return z_from_nb(num(c, ((int64_t(1) << (s + 1)) - 1) ^ wrong_bit));
}
/// Mathematical modulo of builtins.hpp: m = a % b (C, sign of a); m < 0 ? m + |b| : m.
/// Here b > 0 always (b = p).
z3::expr z_mod(const z3::expr& a, const z3::expr& b) {
  const z3::expr m = z3::srem(a, b);
  return z3::ite(m < 0, m + b, m);
}
z3::expr z_even(const z3::expr& x) { return (x & 1) == 0; }
z3::expr z_lowmask(z3::context& c, int64_t k) { return num(c, (int64_t(1) << k) - 1); }

/// `let q = even(r) ? r + rho(s) : r - rho(s)`, taken modulo p as the round pipeline takes
/// every peer (bine/rounds.hpp, real_peer); sabotage: XOR into the expression.
/// `mod p` as the low k bits (zero-extended): equal to z_mod(a, 2^k) for every a, which
/// prove_refinement() proves first, then uses this form (one 64-bit division per query
/// instead of dozens).
z3::expr low_mod(const z3::expr& a, int k) { return z3::zext(a.extract(unsigned(k - 1), 0), W - unsigned(k)); }

z3::expr z_butterfly_partner(const z3::expr& r, int64_t s, int k, const ParametricSabotage& sab, bool mod_low = false) {
  z3::context& c = r.ctx();
  const int64_t wrong = s >= sab.from_step ? sab.rho_bit : 0;
  z3::expr q = z3::ite(z_even(r), r + z_rho(c, s, wrong), r - z_rho(c, s, wrong));
  if (sab.butterfly_flip != 0 && s >= sab.from_step) q = q ^ num(c, sab.butterfly_flip);
  return mod_low ? low_mod(q, k) : z_mod(q, num(c, int64_t(1) << k));
}

/// bine_bcast_lat for p = 2^k: `let b = nb(r - root) & lowmask(k)`, at step s
/// `let m = lowmask(k - s)`, `let q = from_nb(b ^ m) + root` (peer modulo p), a rank
/// without the data receives when (b & m) == 0 || (b & m) == m; `have` starts as
/// r == root and becomes true at the receive.
struct Tree {
  z3::context& c;
  z3::expr root;
  int k;
  ParametricSabotage sab;
  bool mod_low = false;  ///< `mod p` as low_mod() (proved equal)
  z3::expr code(const z3::expr& r) const { return z_nb(r - root) & z_lowmask(c, k); }
  z3::expr cond(const z3::expr& r, int64_t s) const {
    const z3::expr m = z_lowmask(c, k - s), bm = code(r) & m;
    return bm == 0 || bm == m;
  }
  z3::expr partner(const z3::expr& r, int64_t s) const {
    z3::expr q = z_from_nb(code(r) ^ z_lowmask(c, k - s)) + root;
    if (sab.tree_flip != 0 && s >= sab.from_step) q = q ^ num(c, sab.tree_flip);
    return mod_low ? low_mod(q, k) : z_mod(q, num(c, int64_t(1) << k));
  }
  /// `have` at the start of step s.
  z3::expr have(const z3::expr& r, int64_t s) const {
    z3::expr h = r == root;
    for (int64_t t = 0; t < s; ++t) h = h || cond(r, t);
    return h;
  }
  z3::expr recv_at(const z3::expr& r, int64_t s) const { return !have(r, s) && cond(r, s); }
};

int64_t value(const z3::model& m, const z3::expr& e) {
  const z3::expr v = m.eval(e, true);
  uint64_t u = 0;
  if (v.is_numeral_u64(u)) return int64_t(u);
  if (v.is_bool()) return v.is_true() ? 1 : 0;
  return -1;
}

int64_t eval_numeral(const z3::expr& e) {
  const z3::expr v = e.simplify();
  uint64_t u = 0;
  if (v.is_numeral_u64(u)) return int64_t(u);
  if (v.is_true()) return 1;
  if (v.is_false()) return 0;
  return -1;
}

/// A z3 context with the per-query timeout.
struct Query {
  z3::context c;
  unsigned timeout_ms;
  explicit Query(unsigned t) : timeout_ms(t) {}
};

/// Checks `goal` (the disjunction of the violations) in a fresh solver (z3's non-incremental
/// bit-vector path: bit-blasting after word-level simplification, far faster here than
/// push/pop). Returns true when unsat (proved); else fills status, reason and the values of
/// `shown` (names "clause:TEXT" are the violations: the true ones go to `reason`).
bool run_query(Query& q, const std::vector<z3::expr>& goal, ParametricResult& res, int k,
               const std::vector<std::pair<std::string, z3::expr>>& shown) {
  z3::solver s(q.c, "QF_BV");
  z3::params p(q.c);
  p.set("timeout", q.timeout_ms);
  s.set(p);
  for (const z3::expr& g : goal) s.add(g);
  const z3::check_result cr = s.check();
  if (cr == z3::unsat) return true;
  res.failed_k = k;
  if (cr == z3::unknown) {
    res.status = "unknown";
    res.reason = s.reason_unknown();
    return false;
  }
  res.status = "counterexample";
  const z3::model m = s.get_model();
  for (const auto& [name, e] : shown) {
    const int64_t v = value(m, e);
    if (name.rfind("clause:", 0) == 0) {
      if (v == 1) res.reason = res.reason.empty() ? name.substr(7) : res.reason + "; " + name.substr(7);
      continue;
    }
    res.counterexample.push_back({name, v});
  }
  return false;
}

/// The k-bit model: ranks as k-bit vectors, arithmetic modulo p = 2^k by wrap-around. The
/// same rules, with every constant (rho(s), the mask, lowmask) cut to its low k bits.
/// model_refinement proves it equal to the 64-bit terms above for every input.
struct Model {
  z3::context& c;
  int k;
  ParametricSabotage sab;
  z3::expr low(const z3::expr& e64) const { return e64.simplify().extract(unsigned(k - 1), 0); }
  z3::expr kval(int64_t v) const { return low(num(c, v)); }
  z3::expr butterfly(const z3::expr& x, int64_t s) const {
    const z3::expr rh = low(z_rho(c, s, s >= sab.from_step ? sab.rho_bit : 0));
    z3::expr q = z3::ite(x.extract(0, 0) == c.bv_val(0, 1), x + rh, x - rh);
    if (sab.butterfly_flip != 0 && s >= sab.from_step) q = q ^ kval(sab.butterfly_flip);
    if (sab.model_flip != 0 && s >= sab.from_step) q = q ^ kval(sab.model_flip);
    return q;
  }
  // Tree, root `root` (k bits): nb and from_nb on k bits (the carries of + and - only move
  // upwards, so the low k bits of the 32-bit forms depend only on the low k bits).
  z3::expr code(const z3::expr& x, const z3::expr& root) const {
    const z3::expr m = kval(int64_t(kMask));
    return ((x - root) + m) ^ m;
  }
  z3::expr cond(const z3::expr& x, const z3::expr& root, int64_t s) const {
    const z3::expr m = kval((int64_t(1) << (k - s)) - 1), bm = code(x, root) & m;
    return bm == 0 || bm == m;
  }
  z3::expr tree_partner(const z3::expr& x, const z3::expr& root, int64_t s) const {
    const z3::expr mk = kval(int64_t(kMask)), m = kval((int64_t(1) << (k - s)) - 1);
    z3::expr q = (((code(x, root) ^ m) ^ mk) - mk) + root;
    if (sab.tree_flip != 0 && s >= sab.from_step) q = q ^ kval(sab.tree_flip);
    return q;
  }
  z3::expr have(const z3::expr& x, const z3::expr& root, int64_t s) const {
    z3::expr h = x == root;
    for (int64_t t = 0; t < s; ++t) h = h || cond(x, root, t);
    return h;
  }
  z3::expr recv_at(const z3::expr& x, const z3::expr& root, int64_t s) const {
    return !have(x, root, s) && cond(x, root, s);
  }
};

/// One check on top of a query's constraints: the named violations (`clause`), each a
/// Boolean that is true exactly when its violation holds, and their disjunction, checked
/// in a solver of their own; proved when no violation can hold. A small group per step keeps each
/// SAT problem small.
class Group {
 public:
  Group(Query& q, std::vector<std::pair<std::string, z3::expr>> shown)
      : q_(q), shown_(std::move(shown)), any_(q.c.bool_val(false)) {}
  void clause(const std::string& name, const z3::expr& bad) {
    const z3::expr flag = q_.c.bool_const(name.c_str());
    defs_.push_back(flag == bad);
    any_ = any_ || flag;
    shown_.push_back({"clause:" + name, flag});
  }
  void show(const std::string& name, const z3::expr& e) { shown_.push_back({name, e}); }
  bool check(ParametricResult& res, int k) {
    std::vector<z3::expr> goal = defs_;
    goal.push_back(any_);
    return run_query(q_, goal, res, k, shown_);
  }

 private:
  Query& q_;
  std::vector<std::pair<std::string, z3::expr>> shown_;
  std::vector<z3::expr> defs_;
  z3::expr any_;
};

bool prove_refinement(int k, const ParametricOptions& opt, ParametricResult& res) {
  Query q(opt.timeout_ms);
  z3::context& c = q.c;
  {
    // Lemma: mod(a, 2^k) (builtins.hpp: C remainder, plus p when negative) is the low k
    // bits of a, for every 64-bit a.
    const z3::expr a = c.bv_const("a", W);
    Group g(q, {{"a", a}});
    g.clause("mod(a, p) is not the low k bits of a", z_mod(a, num(c, int64_t(1) << k)) != low_mod(a, k));
    if (!g.check(res, k)) return false;
  }
  const Model md{c, k, opt.sabotage};
  const z3::expr x = c.bv_const("r", unsigned(k)), root = c.bv_const("root", unsigned(k));
  const z3::expr x64 = z3::zext(x, W - unsigned(k)), root64 = z3::zext(root, W - unsigned(k));
  const Tree t{c, root64, k, opt.sabotage, true};
  for (int64_t s = 0; s < k; ++s) {
    const std::string at = " at step " + std::to_string(s);
    Group g(q, {{"r", x64}, {"root", root64}});
    g.clause("the 64-bit rule and the k-bit model differ: butterfly partner" + at,
             z_butterfly_partner(x64, s, k, opt.sabotage, true) != z3::zext(md.butterfly(x, s), W - unsigned(k)));
    g.clause("the 64-bit rule and the k-bit model differ: tree partner" + at,
             t.partner(x64, s) != z3::zext(md.tree_partner(x, root, s), W - unsigned(k)));
    g.clause("the 64-bit rule and the k-bit model differ: tree receive condition" + at, t.cond(x64, s) != md.cond(x, root, s));
    if (!g.check(res, k)) return false;
  }
  return true;
}

bool prove_involution(int k, const ParametricOptions& opt, ParametricResult& res) {
  Query q(opt.timeout_ms);
  z3::context& c = q.c;
  const Model md{c, k, opt.sabotage};
  const z3::expr x = c.bv_const("r", unsigned(k));
  for (int64_t s = 0; s < k; ++s) {
    const z3::expr y = md.butterfly(x, s), back = md.butterfly(y, s);
    const std::string at = " at step " + std::to_string(s);
    Group g(q, {{"r", x}, {"s", c.bv_val(int(s), 8)}, {"q(r,s)", y}, {"q(q(r,s),s)", back}});
    g.clause("r is its own partner" + at, y == x);
    g.clause("q(q(r,s),s) != r" + at, back != x);
    if (!g.check(res, k)) return false;
  }
  return true;
}

/// Window offsets of the interval invariant (butterfly_reach, parametric.h): off[s][parity],
/// derived from ranks 0 and 1 of the model; the query proves them for every rank.
std::vector<std::array<int64_t, 2>> window_offsets(const Model& md) {
  const int k = md.k;
  const int64_t p = int64_t(1) << k;
  std::vector<std::array<int64_t, 2>> off(size_t(k) + 1, {0, 0});
  for (int64_t s = 0; s < k; ++s)
    for (int64_t x = 0; x < 2; ++x) {
      const int64_t q = eval_numeral(md.butterfly(md.kval(x), s));
      const int64_t a = (x + off[size_t(s)][size_t(x)]) % p, b = (q + off[size_t(s)][size_t(q & 1)]) % p;
      const int64_t d = int64_t(1) << s;
      off[size_t(s) + 1][size_t(x)] = b == (a + d) % p ? off[size_t(s)][size_t(x)] : (off[size_t(s)][size_t(x)] - d + p) % p;
    }
  return off;
}

bool prove_reach(int k, const ParametricOptions& opt, ParametricResult& res) {
  Query q(opt.timeout_ms);
  z3::context& c = q.c;
  const Model md{c, k, opt.sabotage};
  const z3::expr x = c.bv_const("r", unsigned(k));
  const auto off = window_offsets(md);
  auto offset = [&](const z3::expr& y, int64_t s) {
    return z3::ite(y.extract(0, 0) == c.bv_val(0, 1), md.kval(off[size_t(s)][0]), md.kval(off[size_t(s)][1]));
  };
  for (int64_t s = 0; s < k; ++s) {
    const z3::expr y = md.butterfly(x, s), d = md.kval(int64_t(1) << s);
    const z3::expr a = x + offset(x, s), b = y + offset(y, s);
    // The partner's window follows r's (r keeps its start) or precedes it (r's start moves
    // down by 2^s).
    const z3::expr ok = (b == a + d && offset(x, s + 1) == offset(x, s)) || (b == a - d && offset(x, s + 1) == offset(x, s) - d);
    Group g(q, {{"r", x}, {"s", c.bv_val(int(s), 8)}, {"q(r,s)", y}, {"window(r,s)", a}, {"window(q,s)", b}});
    g.clause("the partner's window is not adjacent to r's at step " + std::to_string(s), !ok);
    if (!g.check(res, k)) return false;
  }
  return true;
}

/// The tree in two parts. Arithmetic lemmas on the model: the code b(x) = nb(x - root) is a
/// bijection of the ranks with b(x) = 0 exactly for the root, and the partner at step s has
/// the code b(x) ^ m_s. Then the properties, which only read codes, over every k-bit code
/// (bitwise only: the receive condition, `have`, the partner's code).
bool prove_tree(int k, const ParametricOptions& opt, ParametricResult& res) {
  Query q(opt.timeout_ms);
  z3::context& c = q.c;
  const Model md{c, k, opt.sabotage};
  const z3::expr r = c.bv_const("r", unsigned(k)), y = c.bv_const("y", unsigned(k)), root = c.bv_const("root", unsigned(k));
  {
    Group g(q, {{"root", root}, {"r", r}, {"y", y}, {"b(r)", md.code(r, root)}, {"b(y)", md.code(y, root)}});
    g.clause("two ranks r != y have the same code", r != y && md.code(r, root) == md.code(y, root));
    g.clause("the code is 0 for r != root or not 0 for the root", (md.code(r, root) == 0) != (r == root));
    if (!g.check(res, k)) return false;
  }
  for (int64_t s = 0; s < k; ++s) {
    const z3::expr u = md.tree_partner(r, root, s), m = md.kval((int64_t(1) << (k - s)) - 1);
    Group g(q, {{"root", root}, {"r", r}, {"s", c.bv_val(int(s), 8)}, {"b(r)", md.code(r, root)}, {"q(r,s)", u},
                {"b(q(r,s))", md.code(u, root)}});
    g.clause("the partner's code is not b(r) ^ lowmask(k - s) at step " + std::to_string(s),
             md.code(u, root) != (md.code(r, root) ^ m));
    if (!g.check(res, k)) return false;
  }
  // Code space: b is the code of rank r (every code is one rank's, 0 the root's).
  const z3::expr b = c.bv_const("b", unsigned(k));
  auto cond = [&](const z3::expr& x, int64_t s) {
    const z3::expr m = md.kval((int64_t(1) << (k - s)) - 1), bm = x & m;
    return bm == 0 || bm == m;
  };
  auto have = [&](const z3::expr& x, int64_t s) {
    z3::expr h = x == 0;
    for (int64_t t = 0; t < s; ++t) h = h || cond(x, t);
    return h;
  };
  auto recv_at = [&](const z3::expr& x, int64_t s) { return !have(x, s) && cond(x, s); };
  {
    const unsigned cw = 8;  // the receive count, 0..k
    z3::expr count = c.bv_val(0, cw);
    for (int64_t s = 0; s < k; ++s) count = count + z3::ite(recv_at(b, s), c.bv_val(1, cw), c.bv_val(0, cw));
    Group g(q, {{"b(r)", b}, {"receives", count}});
    g.clause("the root receives", b == 0 && count != c.bv_val(0, cw));
    g.clause("a non-root rank does not receive exactly once", b != 0 && count != c.bv_val(1, cw));
    if (!g.check(res, k)) return false;
  }
  for (int64_t s = 0; s < k; ++s) {
    const z3::expr m = md.kval((int64_t(1) << (k - s)) - 1), bu = b ^ m;
    const std::string at = " at step " + std::to_string(s);
    Group g(q, {{"b(r)", b}, {"s", c.bv_val(int(s), 8)}, {"b(q(r,s))", bu}});
    // The partner of the partner has code b ^ m ^ m = b: it is r (the code is a bijection).
    g.clause("r receives" + at + " from itself or from a rank without the data", recv_at(b, s) && (bu == b || !have(bu, s)));
    g.clause("r sends" + at + " to a rank that does not receive then", have(b, s) && !recv_at(bu, s));
    if (!g.check(res, k)) return false;
  }
  return true;
}

}  // namespace

bool have_z3() { return true; }

std::vector<ParametricResult> prove_partner_rules(const ParametricOptions& opt) {
  std::vector<ParametricResult> out;
  for (ParametricProperty prop : kParametricProperties) {
    ParametricResult res;
    res.property = prop;
    res.k_lo = opt.k_lo;
    res.k_hi = opt.k_hi;
    res.proved = true;
    out.push_back(res);
  }
  // k outer, properties inner (measured: the other order is several times slower in total
  // with z3 4.8.12, for the same queries); a property stops at its first failing k.
  for (int k = opt.k_lo; k <= opt.k_hi; ++k)
    for (ParametricResult& res : out) {
      if (!res.proved) continue;
      const auto t0 = std::chrono::steady_clock::now();
      bool ok = false;
      try {
        switch (res.property) {
          case ParametricProperty::model_refinement: ok = prove_refinement(k, opt, res); break;
          case ParametricProperty::butterfly_involution: ok = prove_involution(k, opt, res); break;
          case ParametricProperty::butterfly_reach: ok = prove_reach(k, opt, res); break;
          case ParametricProperty::tree_spanning: ok = prove_tree(k, opt, res); break;
        }
      } catch (const z3::exception& e) {
        ok = false;
        res.failed_k = k;
        res.status = "unknown";
        res.reason = std::string("z3 error: ") + e.msg();
      }
      res.proved = ok;
      res.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  return out;
}

namespace smt_eval {
namespace {
z3::context& ctx() {
  thread_local z3::context c;
  return c;
}
}  // namespace
int64_t nb(int64_t x) { return eval_numeral(z_nb(num(ctx(), x))); }
int64_t from_nb(int64_t b) { return eval_numeral(z_from_nb(num(ctx(), b))); }
int64_t rho(int64_t s) { return eval_numeral(z_rho(ctx(), s)); }
int64_t mod(int64_t a, int64_t b) { return eval_numeral(z_mod(num(ctx(), a), num(ctx(), b))); }
int64_t butterfly_partner(int64_t r, int64_t s, int k, const ParametricSabotage& sab) {
  return eval_numeral(z_butterfly_partner(num(ctx(), r), s, k, sab));
}
int64_t tree_recv_step(int64_t r, int64_t root, int k) {
  const Tree t{ctx(), num(ctx(), root), k, {}};
  for (int64_t s = 0; s < k; ++s)
    if (eval_numeral(t.recv_at(num(ctx(), r), s)) == 1) return s;
  return -1;
}
int64_t tree_partner(int64_t r, int64_t root, int64_t s, int k, const ParametricSabotage& sab) {
  const Tree t{ctx(), num(ctx(), root), k, sab};
  return eval_numeral(t.partner(num(ctx(), r), s));
}
}  // namespace smt_eval

#endif  // BINE_HAVE_Z3

}  // namespace bine
