// The verifier: proves one Schedule instance correct or returns a counterexample
// (docs/verifier.md). Checks, in order: message matching and deadlock freedom under zero
// buffering, races within a round, data flow with exact contribution tracking, the
// collective's postcondition, and infers reduction order and bracketing.
#pragma once
#include "schedule.h"

namespace bine {

struct VerifyResult {
  bool ok = false;
  /// Every final reduction combines contributions in rank order 0..p-1 (valid for
  /// non-commutative operators). True for collectives that do not reduce.
  bool order_preserving = true;
  /// All ranks that hold a final reduction of a block hold the same bracketing.
  bool same_bracketing = true;
  int64_t messages = 0;        ///< point-to-point messages, all ranks
  int64_t blocks_moved = 0;    ///< sum of |blocks| over messages
};

struct VerifyOptions {
  /// Up to this p, contribution sets are tracked exactly as bit masks; above it, with
  /// 64-bit fingerprints (sums of random values mod 2^64) plus counts, and exactly again
  /// when a mismatch needs a counterexample.
  int64_t exact_limit = 64;
};

/// Verifies `s`; every failure is an error in `diags` naming p, root, rank, round, block
/// and pointing at the DSL statement, with notes for the other ranks involved.
VerifyResult verify(const Schedule& s, DiagnosticSink& diags, const VerifyOptions& opt = {});

}  // namespace bine
