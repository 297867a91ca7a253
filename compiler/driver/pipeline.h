// The pipeline as code (docs/architecture.md, "The pipeline"): what every verb does to one
// schedule, in order, each stage on the previous stage's result and the schedule lowered
// once:
//
//   lower (compiler/ir/lower.h)             Program + ScheduleDecl -> RankProgram
//   target (emit/target.h)                  the target lowers every feature used, and the
//                                           generated C names are legal (compile only)
//   verify (check.h, check_schedule)        RankProgram -> CheckReport / ProofSummary
//   analyse (check.h, landing_schedule)     the static landing layout, where the target
//                                           (landing) or `check --landing` asks for it
//
// `compile` then emits the batch of schedules that passed (Target::emit); `check` prints the
// reports; `tune` reads the proofs. With a log stream (`--log-passes`), each stage prints
// one line: "pass <stage> <schedule>: <result> (<ms> ms)".
#pragma once
#include <memory>
#include <ostream>
#include <string>

#include "ast.h"
#include "check.h"
#include "diagnostics.h"
#include "lower.h"
#include "target.h"

namespace bine {

struct PipelineOptions {
  CheckOptions check;                   ///< the verify stage's range of p, roots, symmetry
  const Target* target = nullptr;       ///< the target stage's target; null: no target stage
  const EmitOptions* emit = nullptr;    ///< with target: the prefix of the names checked
  /// Run the landing analysis on a verified schedule: `check --landing` (every schedule),
  /// or a target with TargetFeatures::landing (its eligible collectives only).
  bool landing = false;
  std::ostream* log = nullptr;          ///< --log-passes
};

/// How far a schedule got, and what each stage made.
struct PipelineResult {
  enum class Stage { lower, target, verify, analyse, done };
  Stage stopped = Stage::lower;          ///< the stage that refused it, or done
  std::unique_ptr<RankProgram> program;  ///< the lowered program (null if lowering failed)
  /// The target stage's refusal: the unsupported feature ("'fold 3-2'", unsupported()'s
  /// phrase) and whether it is a skip (a feature) or an error (a reserved name).
  std::string unsupported;
  bool reserved_name = false;
  CheckReport report;                    ///< the verify stage's (valid from verify on)
  ProofSummary proof;                    ///< report.proof() over the checked range, + landing
  bool analysed = false;                 ///< the landing analysis ran
  LandingReport landing;                 ///< its report
  bool ok() const { return stopped == Stage::done; }
};

/// Runs the stages on `s` (diagnostics of lowering and verification in `diags`; a target's
/// refusal is only returned, for the caller to report as an error or a skip).
PipelineResult run_pipeline(const Program& program, const ScheduleDecl& s, const PipelineOptions& options,
                            DiagnosticSink& diags);

/// True when a target with the landing feature gets the landing analysis for `rp`:
/// collectives with one count on every rank (bcast, allgather, gather, scatter) and no
/// phase on sub-groups (regions follow the machine at run time, not the layout proved;
/// docs/utofu.md "Static landing layout").
bool landing_eligible(const RankProgram& rp);

}  // namespace bine
