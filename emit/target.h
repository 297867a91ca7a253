// Code generators ("targets") behind one interface, and their registry (docs/targets.md).
//
// A target turns verified schedules (their lowered RankPrograms, compiler/ir/lower.h, + what
// the verifier proved) into files that
// an application builds against a runtime of the target's own. It states what it supports:
// a schedule it cannot lower is a diagnostic from the driver, never silently emitted.
// Adding a target = a folder emit/<name>/ with the same file set as emit/mpi/ and one line
// in emit/targets.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ast.h"
#include "bine/selection_table.hpp"
#include "lower.h"
#include "proof.h"

namespace bine {

// SelectionRule, SelectionTable, parse_selection_table(): bine/selection_table.hpp.

/// Empty when every rule of `table` names "mpi" or a schedule of `programs` of the rule's
/// collective (by its name or prefix + name; emit/mpi/dispatch.cpp); otherwise the first bad rule, one sentence.
std::string check_dispatch_table(const SelectionTable& table, const std::vector<const RankProgram*>& programs,
                                 const std::string& prefix);
/// Options of `bine-cc compile` that every target honours.
struct EmitOptions {
  /// Prefix of every generated C symbol (`<prefix><schedule>`, `<prefix><schedule>_applicable`,
  /// ...); its upper-case form prefixes the registry macros (`<PREFIX>ALLREDUCE_SCHEDULES`).
  /// A C identifier or empty (valid_prefix()).
  std::string prefix = "bcc_";
  /// `--dispatch FILE` (mpi and utofu targets): a dispatcher `<prefix><key>` per collective
  /// of the table, choosing among the emitted schedules per call; null: none.
  const SelectionTable* dispatch = nullptr;
};

/// True when `prefix` can start a C identifier: empty, or [A-Za-z_][A-Za-z0-9_]*.
bool valid_prefix(const std::string& prefix);

/// The language features a target can lower. A schedule that uses one the target lacks
/// (directly or through a composed schedule) is refused with the feature's name.
struct TargetFeatures {
  std::vector<Collective> collectives;  ///< collectives with a lowering
  bool fold_two_one = false;            ///< `fold` / `fold 2-1`
  bool fold_three_two = false;          ///< `fold 3-2`
  bool fold_ring = false;               ///< `fold ring R`
  bool scratch = false;                 ///< `scratch K` and local `reduce`/`copy`
  bool segment = false;                 ///< `segment E`
  bool permute = false;                 ///< local `permute`
  bool composition = false;             ///< `phase x = other_schedule(...)`
  bool frames = false;                  ///< `frames { ... }` (table-driven BBS broadcast)
  /// Target analyses and options, which the driver runs or accepts only where stated:
  bool dispatch = false;  ///< `compile --dispatch FILE`: a dispatcher per collective of a selection table
  /// the static landing layout (`check --landing`) of bcast/allgather/gather/scatter
  /// schedules is computed and handed over in ProofSummary::landing_direct
  bool landing = false;
};

/// A C name a target's files define, and what defines it: the target's own functions
/// (`schedule` null), or a function of `schedule`. The driver refuses two equal names.
struct DefinedName {
  std::string name;
  std::string what;  ///< "a function of the header itself", "a dispatcher of --dispatch t.json", "schedule 'x'"
  const ScheduleDecl* schedule = nullptr;
};

/// The language features of a target whose runtime runs the round pipeline
/// (`bine::mpi::BasicContext<Transport>`, bine/mpi_runtime.hpp, or the device planner):
/// every collective and every language feature, since the pipeline lowers them above the
/// transport; no target analyses or options (a target adds its own).
const TargetFeatures& round_pipeline_features();

/// One file a target writes: `suffix` appended to the output path (empty for the main file,
/// e.g. the header), `text` its bytes. Deterministic: same input, same bytes.
struct EmittedFile {
  std::string suffix;
  std::string text;
};

/// A code generator. Implementations are stateless singletons (emit/<name>/target.cpp).
class Target {
 public:
  virtual ~Target() = default;
  /// The `--target` value, e.g. "mpi".
  virtual const char* name() const = 0;
  /// One line for `bine-cc compile --help`: what it emits and over which runtime.
  virtual const char* summary() const = 0;
  /// What the target can lower (unsupported() checks schedules against it) and which
  /// analyses and options it takes.
  virtual const TargetFeatures& features() const = 0;
  /// Every external C name the files for `schedules` define under `options` (prefix,
  /// dispatch table): the target's own first, then per schedule each name a form of it may
  /// take (also forms only some proofs enable), in a fixed order.
  virtual std::vector<DefinedName> defined_names(const std::vector<const ScheduleDecl*>& schedules,
                                                 const EmitOptions& options) const = 0;
  /// The files for the lowered `programs` (all supported, verified; `proofs` parallel to
  /// them). The RankProgram is a target's only view of a schedule.
  virtual std::vector<EmittedFile> emit(const std::vector<const RankProgram*>& programs,
                                        const std::vector<ProofSummary>& proofs, const EmitOptions& options) const = 0;
};

/// Empty when `target` can lower `s`; otherwise the first unsupported collective or feature,
/// as a phrase ("allreduce schedules", "'fold 3-2'", "'permute' (in composed schedule x)").
std::string unsupported(const Target& target, const RankProgram& rp);

/// Every target, in `--help` order.
const std::vector<const Target*>& targets();
/// The target named `name`, or null.
const Target* find_target(const std::string& name);
/// "mpi" or "mpi, cuda": the names of targets(), for help and error texts.
std::string target_names();

}  // namespace bine
