// `bine-cc check` as a library call: verify one schedule for a range of process counts and
// roots, and summarize what was proved.
#pragma once
#include <string>
#include <vector>

#include "ast.h"
#include "landing.h"
#include "lower.h"
#include "proof.h"
#include "verify.h"

namespace bine {

struct RootSymmetry;

struct CheckOptions {
  int64_t p_lo = 1, p_hi = 64;
  /// Every root up to this p; above it the roots 0, 1, p/2 and p-1.
  int64_t all_roots_up_to = 64;
  /// A root R > 0 whose instance is the verified root-0 instance relabelled by
  /// r -> (r + R) mod p (rotation.h) is proved by that comparison instead of verify();
  /// every other instance is verified. Not for non-commutative reducing instances.
  bool rotation = true;
  /// With `rotation`: where root_symmetry() proves the lowered program treats every root
  /// alike, root R's instance is not built at all (every root at every p, also above
  /// all_roots_up_to), except symmetry_spot_root(p)'s, built as a cross-check (it must be
  /// root 0's instance rotated); false: compare built instances only.
  bool symmetry = true;
  VerifyOptions verify;
  /// Tests only: this claim instead of root_symmetry()'s (e.g. an unsound one, proved for a
  /// program that is not symmetric, to exercise the cross-check of symmetry_spot_root()).
  const RootSymmetry* assume_symmetry = nullptr;
};

/// The root that check_schedule() builds anyway at a p >= 2 where a proved root symmetry
/// covers every root (defence in depth against an unsound proof): its instance must be the
/// verified root-0 instance rotated, else it is verified (a failure is reported as its
/// counterexample) and the proof dropped. splitmix64(p) mod (p - 1) + 1, in 1..p-1: a
/// function of p only, so that the output is deterministic.
int64_t symmetry_spot_root(int64_t p);

struct CheckReport {
  bool ok = true;
  int64_t instances = 0;               ///< (p, root, commutative) instances proved
  int64_t rotated = 0;                 ///< of them, proved by rotation of root 0 (not verify())
  int64_t rotation_failed = 0;         ///< roots whose instance is no rotation (verified instead)
  /// Of `rotated`, the roots proved by the static root symmetry (symmetry.h), not built
  /// except the cross-checked ones.
  int64_t by_symmetry = 0;
  /// Of `by_symmetry`, the instances built anyway, one per p and value of `commutative`
  /// (symmetry_spot_root()), each found to be root 0's instance rotated.
  int64_t spot_checked = 0;
  /// Rooted collectives: whether root_symmetry() proved the program (with CheckOptions::
  /// symmetry), else why not and the source line (0: none). A proof that a cross-checked
  /// root contradicts is dropped: every p is checked again without it, and the reason
  /// says where it failed.
  bool symmetric = false;
  std::string symmetry_reason;
  int symmetry_line = 0;
  /// Unrooted collectives (with CheckOptions::symmetry): whether translation_symmetry()
  /// proved the program, else why not and the source line (0: none); of `instances`, those
  /// whose ranks after rank 0 were built as rank 0's rounds shifted (instantiate(), with its
  /// spot rank run as a cross-check), and those where the spot rank differed (every rank
  /// ran; the proof is wrong: a bug to report). Every instance is verified either way.
  bool translation = false;
  std::string translation_reason;
  int translation_line = 0;
  int64_t by_translation = 0, translation_refuted = 0;
  /// Rooted collectives: the p above all_roots_up_to, where only roots 0, 1, p/2 and p-1
  /// were checked.
  std::vector<int64_t> sampled_p;
  std::vector<int64_t> not_applicable; ///< p where `requires` is false
  /// Parallel to `not_applicable`: the false `requires` clause at that p, as written in the
  /// source (or the fold's condition, e.g. "p % 3 == 0 (fold ring 3)").
  std::vector<std::string> unmet_by_p;
  std::string unmet;                   ///< the first false `requires` clause that excludes a whole p
  /// Rooted collectives: p where some roots apply and others do not (a `requires` that
  /// reads `root`), with the excluded roots among those checked and the first false clause.
  struct ExcludedRoots {
    int64_t p = 0;
    std::vector<int64_t> roots;
    std::string unmet;
  };
  std::vector<ExcludedRoots> excluded_roots;
  /// Memory (resource.h, docs/verifier.md "Memory"): the verified instance with the most
  /// accounted bytes (the first such p and root), its instance's (round store) and the
  /// verifier's total; 0 when none was verified.
  uint64_t max_accounted_bytes = 0, max_instance_bytes = 0;
  int64_t max_bytes_p = 0, max_bytes_root = 0;
  bool order_preserving = true;        ///< over every verified instance
  std::vector<int64_t> order_p;        ///< p where every verified root is order-preserving
  bool same_bracketing = true;
  /// The first verified instance (p, root) that is not order-preserving / not bracketed
  /// alike, and why (VerifyResult's witnesses); unset when none was found.
  ReductionWitness order_witness, bracketing_witness;
  int64_t order_witness_p = 0, order_witness_root = 0, bracketing_witness_p = 0, bracketing_witness_root = 0;
  /// When no p is order-preserving and no instance showed why: the first p whose
  /// non-commutative instances do not apply, and the clause that refuses them.
  int64_t order_unmet_p = 0;
  std::string order_unmet;
  bool keeps_blocks = true;            ///< VerifyResult::keeps_blocks over every verified instance
  bool direct = true;                  ///< VerifyResult::direct over every verified instance
  int64_t failed_p = -1, failed_root = -1;
  /// The first failing instance, when it was built (instantiation succeeded and the
  /// verifier rejected it): the Schedule and the verifier's counterexample.
  bool has_failed_instance = false;
  Schedule failed_instance;
  Counterexample counterexample;
  ProofSummary proof() const;
};

/// Values of `commutative` that instances of `s` are proved for (docs/verifier.md): true
/// for collectives without an operator (generated code sees true), both for a reducing
/// schedule that reads it (directly or through composition), else false.
std::vector<bool> commutative_values(const ScheduleDecl& s);
/// The value a single instance (`bine-cc schedule`, `cost`) uses: the first of
/// commutative_values(), or true when a `requires` asks for commutativity.
bool default_commutative(const ScheduleDecl& s);

/// Roots to verify for a schedule at process count p.
std::vector<int64_t> roots_for(const ScheduleDecl& s, int64_t p, const CheckOptions& opt);

/// Verifies the lowered schedule `rp` for every p in [p_lo, p_hi] and the roots of
/// roots_for(); stops at the first failing instance (its counterexample is in `diags`).
/// The pipeline's verify stage (pipeline.h).
CheckReport check_schedule(const RankProgram& rp, const CheckOptions& opt, DiagnosticSink& diags);
/// Lowers `s` (a lowering error: not ok, at p_lo, in `diags`) and verifies it as above; for
/// callers that hold no lowered program (tests, fuzzing).
CheckReport check_schedule(const Program& program, const ScheduleDecl& s, const CheckOptions& opt,
                           DiagnosticSink& diags);

/// One-line summary: "name (collective): verified p=1..64, 2080 instances; order-preserving: no; ...".
std::string summary_line(const ScheduleDecl& s, const CheckReport& r, const CheckOptions& opt);
/// For a verified reducing schedule, the lines under its summary that say why it is not
/// order-preserving or not bracketed alike ("  not order-preserving: at p=2, rank 0, block
/// 0: ..."); empty when both hold.
std::string witness_lines(const ScheduleDecl& s, const CheckReport& r);

/// The same report as one JSON object (`bine-cc check --json`, docs/cli.md): schedule,
/// collective, ok, p_lo, p_hi, instances, excluded (one {p, requires} per p a `requires`
/// excludes), for reducing collectives order_preserving and same_bracketing, and failed
/// {p, root} when ok is false. Deterministic (keys sorted).
std::string report_json(const ScheduleDecl& s, const CheckReport& r, const CheckOptions& opt);

/// The static landing layout of a schedule for one-sided targets (landing.h,
/// docs/utofu.md "Static landing layout"), proved on every instance check_schedule()
/// verifies for p <= kLandingMaxRanks: root 0 only where the root symmetry holds (every
/// obligation is invariant under relabelling ranks), else the roots of roots_for().
struct LandingReport {
  bool analysed = false;  ///< false: no p of the range is at most kLandingMaxRanks
  int64_t p_lo = 0, p_hi = 0;  ///< the range analysed
  int64_t instances = 0;
  LandingLayout layout;   ///< the final layout: proved on every analysed instance
  LandingCount count;     ///< transfers of the analysed instances, and those landing directly
  /// Why origins are staged: the violation that staged them, with its instance (p, root).
  struct Staged {
    LandingViolation v;
    int64_t p = 0, root = 0;
  };
  std::vector<Staged> staged;
  int passes = 0;         ///< rounds over the instances until none staged another origin
};

/// Derives and proves the landing layout of `s` (which must have passed check_schedule()
/// with `opt`): every origin starts direct; each violation found stages its send and
/// receive origins; the instances are checked again until a pass stages nothing.
LandingReport landing_schedule(const RankProgram& rp, const CheckOptions& opt);
/// Lowers `s` (a lowering error: not analysed, in `diags`), then as above.
LandingReport landing_schedule(const Program& program, const ScheduleDecl& s, const CheckOptions& opt,
                               DiagnosticSink& diags);

/// The landing report as text lines (`check --landing`), indented under the summary line.
std::string landing_lines(const LandingReport& r);
/// ... and as a JSON object (the `landing` key of `check --landing --json`).
std::string landing_json(const LandingReport& r);

}  // namespace bine
