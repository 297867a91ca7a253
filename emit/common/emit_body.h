// The schedule-body emitter every target shares (docs/architecture.md, "Targets"):
// RankProgram (compiler/ir/lower.h) -> `static int bine_body_<prefix><name>(Context& cx)`, the
// schedule's params, `requires`, blocks, fold and rounds as calls on a runtime context
// (bine::mpi::BasicContext's API, bine/mpi_runtime.hpp; bine::dev::PlanContext offers the
// same calls, bine/device_plan.hpp). A target states the names its runtime gives that API
// (BodyDialect) and writes its C ABI around the body; it never edits another target's text.
#pragma once
#include <string>

#include "ast.h"
#include "lower.h"

namespace bine {

/// The names a target's runtime gives the body API: the context class the body runs on,
/// its plan cache, the region binder, and the status codes (success, and the code of a
/// failed check of the schedule itself, e.g. a block count below 1).
struct BodyDialect {
  const char* context;       ///< e.g. "bine::mpi::Context"
  const char* plan_cache;    ///< e.g. "bine::mpi::PlanCache"
  const char* bind_regions;  ///< e.g. "bine::mpi::bind_regions"
  const char* ok;            ///< e.g. "MPI_SUCCESS"
  const char* err_other;     ///< e.g. "MPI_ERR_OTHER"
};

/// The body of the lowered schedule `rp`, named after `emitted_function_name(*rp.decl,
/// prefix)`, over `dialect`'s names. Deterministic; names no runtime but the dialect's.
std::string emit_schedule_body(const RankProgram& rp, const std::string& prefix, const BodyDialect& dialect);

/// Name of a schedule's generated functions' stem: prefix + schedule name (EmitOptions).
std::string emitted_function_name(const ScheduleDecl& s, const std::string& prefix);
/// True when `name` cannot name a generated C function: a C/C++ keyword, a name the
/// generated code uses, or an MPI/PMPI name.
bool reserved_identifier(const std::string& name);
/// `text` as a C string literal (quotes and backslashes escaped, control and non-ASCII
/// bytes as hex escapes).
std::string c_string(const std::string& text);

}  // namespace bine
