// The MPI emitter: Program IR -> one C++ function per schedule over bine/mpi_runtime.hpp,
// valid for every process count (partners and block ranges are computed at run time).
#pragma once
#include <string>
#include <vector>

#include "ast.h"

namespace bine {

/// What the verifier established for a schedule, stated in the generated file.
struct ProofSummary {
  int64_t p_lo = 1, p_hi = 1;      ///< process counts checked, every root
  std::vector<int64_t> not_applicable;  ///< p where a `requires` clause is false
  std::vector<std::string> unmet;       ///< parallel to not_applicable: the false clause's source text
  bool order_preserving = false;   ///< for every checked p
  std::vector<std::pair<int64_t, int64_t>> order_ranges;  ///< p ranges proved order-preserving
  bool same_bracketing = false;    ///< for every checked p
};

/// Name of the generated function: "bine_" + schedule name.
std::string emitted_function_name(const ScheduleDecl& s);
/// True when the MPI target supports the schedule's collective.
bool mpi_target_supports(Collective c);
/// The C prototype of the generated function.
std::string emitted_prototype(const ScheduleDecl& s);

/// Emits one header holding C prototypes for `schedules` and, under
/// `#ifdef BINE_IMPLEMENTATION`, their C++ definitions (include it with the macro defined
/// in exactly one C++ translation unit). Output is deterministic.
std::string emit_mpi_header(const Program& program, const std::vector<const ScheduleDecl*>& schedules,
                            const std::vector<ProofSummary>& proofs);

}  // namespace bine
