// The uTofu emitter: RankProgram (compiler/ir/lower.h) -> one C/C++ header whose functions have
// the MPI collectives' signatures and move every byte with uTofu one-sided puts
// (docs/utofu.md). The functions are the MPI collectives' C ABI (emit/mpi/emit_mpi.h: the same
// front end, arithmetic and round pipeline) in this target's dialect: the header includes
// bine/utofu_runtime.hpp, which runs them over bine::utofu::UtofuTransport instead of MPI
// point-to-point, and the persistent forms of schedules proved to land directly put straight
// into the receivers' buffers.
#pragma once
#include <string>
#include <vector>

#include "lower.h"
#include "proof.h"
#include "target.h"

namespace bine {

struct MpiAbiDialect;
/// The uTofu target's dialect of the MPI collectives' C ABI.
const MpiAbiDialect& utofu_abi_dialect();

/// The header for the lowered `programs` (verified; `proofs` parallel to them), deterministic;
/// link the program against the uTofu library (on Fugaku) or runtime/utofu_emu (elsewhere).
std::string emit_utofu_header(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                              const EmitOptions& options);

}  // namespace bine
