// What the verifier established for one schedule over a range of process counts: the input
// every target states in its generated files (docs/targets.md). Filled by
// CheckReport::proof() (compiler/driver/check.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bine {

struct ProofSummary {
  int64_t p_lo = 1, p_hi = 1;           ///< process counts checked, every root
  std::vector<int64_t> not_applicable;  ///< p where a `requires` clause is false
  std::vector<std::string> unmet;       ///< parallel to not_applicable: the false clause's source text
  bool order_preserving = false;        ///< for every checked p
  std::vector<std::pair<int64_t, int64_t>> order_ranges;  ///< p ranges proved order-preserving
  bool same_bracketing = false;                           ///< for every checked p
  bool keeps_blocks = false;  ///< VerifyResult::keeps_blocks for every checked instance
  bool direct = false;        ///< VerifyResult::direct (alltoall) for every checked instance
  /// One-sided targets (landing.h, `check --landing`): every transfer of every instance
  /// with p in [landing_lo, landing_hi] is proved to land straight in the receiver's
  /// vector. Filled by `compile --target utofu` only (bcast, allgather, gather, scatter).
  bool landing_direct = false;
  int64_t landing_lo = 0, landing_hi = 0;
};

}  // namespace bine
