// The MPI emitter: RankProgram (compiler/ir/lower.h) -> one C++ function per schedule over bine/mpi_runtime.hpp,
// valid for every process count (partners and block ranges are computed at run time).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "ast.h"
#include "lower.h"
#include "proof.h"
#include "target.h"

namespace bine {

/// Name of the generated function: prefix + schedule name (default "bcc_", EmitOptions).
std::string emitted_function_name(const ScheduleDecl& s, const std::string& prefix);
/// True when `name` cannot name a generated C function: a C/C++ keyword, or an MPI/PMPI name.
bool reserved_identifier(const std::string& name);
/// The C prototype of the generated function.
std::string emitted_prototype(const ScheduleDecl& s, const std::string& prefix);

/// The schedule body alone, `static int bine_body_<prefix><name>(bine::mpi::Context& cx)`:
/// params, `requires`, blocks, fold and rounds as calls on the runtime context
/// (bine/mpi_runtime.hpp documents them). Other targets reuse it over a context of their
/// own with the same calls (the CUDA target: bine::dev::PlanContext).
std::string emit_schedule_body(const RankProgram& rp, const std::string& prefix);

/// The C names the dispatchers of `table` define (`<prefix><key>`, `<prefix><key>_choice`),
/// for the driver's clash check.
std::vector<std::string> dispatch_names(const SelectionTable& table, const std::string& prefix);
/// Empty when every rule of `table` names "mpi" or a schedule of `programs` of the rule's
/// collective (by its name or prefix + name); otherwise the first bad rule, one sentence.
std::string check_dispatch_table(const SelectionTable& table, const std::vector<const RankProgram*>& programs,
                                 const std::string& prefix);
/// The dispatchers' C prototypes with their docstrings (inside the header's extern "C").
void emit_dispatch_prototypes(std::ostream& o, const SelectionTable& table, const std::string& prefix);
/// The dispatchers' definitions (inside the header's BINE_IMPLEMENTATION part): per
/// collective the rules and schedule infos as static arrays, `<prefix><key>_choice` and
/// `<prefix><key>` over bine::mpi::dispatch_choose() (bine/dispatch.hpp). `table` must have
/// passed check_dispatch_table() against the same `programs`.
void emit_dispatch_definitions(std::ostream& o, const SelectionTable& table,
                               const std::vector<const RankProgram*>& programs,
                               const std::vector<ProofSummary>& proofs, const std::string& prefix);

/// Emits one header holding C prototypes for the lowered `programs` (verified; `proofs`
/// parallel to them) and, under `#ifdef BINE_IMPLEMENTATION`, their C++ definitions
/// (include it with the macro defined in exactly one C++ translation unit). Output is
/// deterministic.
std::string emit_mpi_header(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                            const EmitOptions& options);

}  // namespace bine
