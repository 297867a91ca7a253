// Parametric proofs of the Bine partner rules with z3 (docs/verifier.md, "Parametric
// proofs"). The verifier proves schedules for the process counts it instantiates; this
// module proves the rules the Bine schedules are built from for every p = 2^k, k = 1..30,
// one bit-vector query per (property, k), over every rank, root, step and exchange path.
//
// The rules are encoded as the runtime computes them (runtime/include/bine/builtins.hpp:
// 64-bit two's complement arithmetic, nb/from_nb on 32 bits with the mask 0xAAAAAAAA, mod
// with a result in [0, p), ranks taken modulo p as the round pipeline does) and as the
// library writes them (dsl/lib/bine_allreduce.bine, bine_butterfly.bine, bine_bcast.bine).
// eval_*() below evaluate the same z3 terms on numbers, so a unit test can compare them
// with the C++ built-ins and with instantiated library schedules (tests/unit/test_parametric.cpp).
// Built without z3 (BINE_HAVE_Z3 unset), have_z3() is false and prove_partner_rules()
// reports that instead of a proof.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bine {

/// The properties proved, in the order prove_partner_rules() reports them. All but the
/// first are proved on a k-bit model of the rules (ranks as k-bit vectors, arithmetic
/// modulo p by wrap-around), which the first proves equal to the 64-bit built-ins.
enum class ParametricProperty {
  /// The rules as the runtime evaluates them (64-bit values, nb/from_nb on 32 bits, then
  /// `mod p` as the round pipeline takes every peer) equal the k-bit model, for every rank
  /// r < p, root < p and step s < k: the butterfly partner, the tree partner and the
  /// tree's receive condition.
  model_refinement,
  /// Butterfly partner q(r, s) = mod(even(r) ? r + rho(s) : r - rho(s), p)
  /// (bine_allreduce_lat, bine_reduce_scatter, bine_allgather): for every rank r < p and
  /// step s < k, q(q(r, s), s) = r and q(r, s) != r.
  butterfly_involution,
  /// Distance doubling (steps 0..k-1): the contributions rank r holds after steps 0..s-1
  /// are the 2^s consecutive ranks (mod p) starting at r + off_s(parity of r); proved by
  /// induction on s: at step s the partner's window is the 2^s ranks right after or right
  /// before r's, and r's next start is off_{s+1} accordingly (off derived from ranks 0 and
  /// 1, proved for every rank). Since 2^(s+1) <= p the two windows are disjoint, so every
  /// rank's contribution reaches every rank exactly once after k steps; the exchange paths
  /// of the distance-halving order (bine_allgather) are these paths reversed (q is an
  /// involution), so the same holds there.
  butterfly_reach,
  /// Distance-halving tree (bine_bcast_lat), every root: with b = nb(r - root) & lowmask(k),
  /// m_s = lowmask(k - s), a rank that has the data at step s sends to
  /// q = mod(from_nb(b ^ m_s) + root, p), one that has not receives from q when
  /// (b & m_s) is 0 or m_s. Proved: the root never receives and every other rank receives
  /// at exactly one step; its parent q is another rank that is the root or received at an
  /// earlier step (so the parents form a spanning tree rooted at root, depth <= k); that
  /// parent's partner at the step is the child (it sends to it); and every rank that sends
  /// at step s sends to a rank that receives at s, from it.
  tree_spanning,
};
inline constexpr ParametricProperty kParametricProperties[] = {
    ParametricProperty::model_refinement, ParametricProperty::butterfly_involution, ParametricProperty::butterfly_reach,
    ParametricProperty::tree_spanning};

/// "model_refinement", "butterfly_involution", ... (stable names, used in messages and tests).
const char* parametric_property_name(ParametricProperty p);

/// Deliberately wrong rules, for tests that the proofs can fail, applied at steps
/// s >= from_step: `butterfly_flip` / `tree_flip` are XORed into the partner expression
/// before `mod p` (as if the schedule wrote `(r + rho(s)) ^ flip`), `rho_bit` into the
/// digit pattern of rho(s) (one negabinary digit wrong), `model_flip` into the k-bit model's
/// butterfly partner only (the model no longer refines the built-ins).
struct ParametricSabotage {
  int64_t butterfly_flip = 0;
  int64_t tree_flip = 0;
  int64_t rho_bit = 0;
  int64_t model_flip = 0;
  int64_t from_step = 0;
};

struct ParametricOptions {
  int k_lo = 1, k_hi = 30;  ///< p = 2^k_lo .. 2^k_hi (1 <= k_lo <= k_hi <= 30)
  unsigned timeout_ms = 60000;  ///< per z3 query; a timeout is "unknown"
  ParametricSabotage sabotage;
};

struct ParametricResult {
  ParametricProperty property{};
  bool proved = false;      ///< for every k of the options
  int k_lo = 0, k_hi = 0;   ///< k range of the options
  int failed_k = -1;        ///< the first k not proved (-1 when proved)
  /// "counterexample" (sat: the values below violate the property), "unknown" (z3 could not
  /// decide: `reason`), "no-z3" (built without z3); "" when proved.
  std::string status;
  std::string reason;
  /// The counterexample's values (name, value), e.g. {"r", 5}, {"s", 1}, {"q(r,s)", 6}.
  std::vector<std::pair<std::string, int64_t>> counterexample;
  double seconds = 0;  ///< z3 time over every k (not printed: output is deterministic)
  /// One line: "<description>: k=1..30 proved" or "...: FAILED at k=3: counterexample r=5 s=1 ...".
  std::string line() const;
};

/// True when this build links z3.
bool have_z3();

/// Proves every ParametricProperty for k = opt.k_lo..opt.k_hi (one z3 query per property
/// and k; stops a property at its first failing k). Deterministic results; `seconds` only
/// varies.
std::vector<ParametricResult> prove_partner_rules(const ParametricOptions& opt = {});

/// The z3 terms of the rules evaluated on numbers (z3's simplifier on constants), for
/// cross-checks against the C++ built-ins and the library's schedules. Values are int64;
/// -1 where z3 is absent. nb, from_nb and mod as in builtins.hpp.
namespace smt_eval {
int64_t nb(int64_t x);
int64_t from_nb(int64_t b);
int64_t rho(int64_t s);
int64_t mod(int64_t a, int64_t b);
/// Butterfly partner of rank r at step s for p = 2^k (with opt's sabotage).
int64_t butterfly_partner(int64_t r, int64_t s, int k, const ParametricSabotage& sab = {});
/// Distance-halving tree, p = 2^k: the step at which r receives (-1: never, the root), and
/// its partner at step s (parent at the receive step, child at a send step).
int64_t tree_recv_step(int64_t r, int64_t root, int k);
int64_t tree_partner(int64_t r, int64_t root, int64_t s, int k, const ParametricSabotage& sab = {});
}  // namespace smt_eval

}  // namespace bine
