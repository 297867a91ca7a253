// The CUDA emitter: RankProgram (compiler/ir/lower.h) -> a C header of device-buffer
// collectives and its `.cu` implementation part (docs/cuda.md). The schedule bodies are the
// shared ones (emit/common/emit_body.h) in the device dialect, run on the host over bine::dev::PlanContext
// (bine/device_plan.hpp) to plan each call shape once; the runtime (bine/cuda_runtime.cuh)
// enqueues the plan's kernels and messages on the caller's stream.
#pragma once
#include <string>
#include <vector>

#include "lower.h"
#include "proof.h"
#include "target.h"

namespace bine {

/// Target::defined_names of the cuda target: its communicator functions and last error,
/// then per schedule <stem>_cuda, _cuda_inproc, _cuda_applicable.
std::vector<DefinedName> cuda_defined_names(const std::vector<const ScheduleDecl*>& schedules, const EmitOptions& options);

/// The header: C prototypes of `<prefix><schedule>_cuda`, `_cuda_inproc`,
/// `_cuda_applicable`, the communicator functions and the registry macros
/// (`<PREFIX>CUDA_<COLLECTIVE>_SCHEDULES(X)`). Deterministic.
std::string emit_cuda_header(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                             const EmitOptions& options);
/// The implementation part (compile with nvcc, or as host C++ with BINE_DEVICE_HOST_ONLY
/// for the plans alone: tests/device). Deterministic.
std::string emit_cuda_source(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                             const EmitOptions& options);

}  // namespace bine
