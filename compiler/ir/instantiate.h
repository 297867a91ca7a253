// Instantiation: runs the Program IR of one schedule for every rank of a concrete process
// count and root, producing a Schedule (docs/architecture.md, "Pipeline").
#pragma once
#include <string>

#include "ast.h"
#include "lower.h"
#include "schedule.h"

namespace bine {

enum class InstStatus {
  ok,              ///< `out` holds the instance
  not_applicable,  ///< a `requires` clause is false for this p/root; `unmet` says which
  error,           ///< a diagnostic was reported (domain error, non-uniform rounds, ...)
};

struct InstanceRequest {
  int64_t p = 1;
  int64_t root = 0;
  /// Value of `commutative` seen by the schedule. The verifier passes true only for
  /// schedules that `require` commutativity (docs/verifier.md).
  bool commutative = false;
  /// A proved translation symmetry of the program (symmetry.h; null or not proved: none):
  /// rank 0 runs the program, every other rank gets rank 0's rounds shifted (peers + x mod
  /// p, blocks rotated where it says so), and one rank per p, translation_spot_rank(p), runs
  /// the program too as a cross-check: where it differs from its shifted rounds, every rank
  /// runs (the instance is the same either way; docs/verifier.md, "Translation symmetry").
  const struct TranslationSymmetry* translation = nullptr;
};

/// The rank that instantiate() runs besides rank 0 when a translation symmetry shifts the
/// others: in 1..p-1, a function of p only (deterministic), spread over the ranks.
int64_t translation_spot_rank(int64_t p);

/// Instantiates the lowered program `rp` for `req`: runs it for every rank through the
/// round pipeline (bine/rounds.hpp) and places the rounds. Errors name the rank, p and root
/// and point at the statement that failed.
InstStatus instantiate(const RankProgram& rp, const InstanceRequest& req, Schedule& out, DiagnosticSink& diags,
                       std::string* unmet = nullptr);

/// Lowers `decl` (checked by sema) and instantiates it for `req` (callers that build many
/// instances of one schedule lower it once and call the form above).
InstStatus instantiate(const Program& program, const ScheduleDecl& decl, const InstanceRequest& req,
                       Schedule& out, DiagnosticSink& diags, std::string* unmet = nullptr);

/// Whether block-set filters `{ i in S if c }` evaluate `c` for many blocks at once (the
/// default) or block after block. Both give the same sets, diagnostics and step counts;
/// the block-by-block loop is the reference that tests compare the batches with
/// (docs/architecture.md, "Batched filters"). The environment variable
/// BINE_SCALAR_FILTERS=1 turns batches off in a process (read at its first instantiation).
/// Not thread-safe against instantiations running at the time of the call.
void set_batch_filters(bool on);
bool batch_filters_enabled();

}  // namespace bine
