// The shipped schedule library (every dsl/lib/*.bine), loaded once for the unit tests.
#pragma once
#include <string>

#include "bine/builtins.hpp"
#include "instantiate.h"
#include "machine.h"
#include "sema.h"

namespace bine::test {

/// Every file of dsl/lib, in name order; a load error fails the test.
const Program& library();
/// The schedule named `name`; fails the test when there is none.
const ScheduleDecl& sched(const std::string& name);
/// As `sched`, in `program` (e.g. one of library_with(...)).
const ScheduleDecl& sched(const Program& program, const std::string& name);
/// The instance for p and root, with `commutative` as `bine-cc schedule` sets it
/// (default_commutative); fails the test unless instantiation succeeds.
Schedule inst(const std::string& name, int64_t p, int64_t root = 0);
/// The library plus one more file of the repository (a path relative to its root, e.g.
/// "tests/schedules/rt_thresholds.bine"), loaded once per file; a load error fails the test.
const Program& library_with(const std::string& extra);
/// As `inst`, for a schedule of `program` (e.g. one of library_with(...)).
Schedule inst(const Program& program, const std::string& name, int64_t p, int64_t root = 0);

/// The rank map of `spec` for p ranks (bine-cc --machine SPEC); a bad spec fails the test.
RankMap rank_map(const std::string& spec, int64_t p);

/// Sets the layout of the region built-ins (bine-cc --regions SPEC) for one scope.
struct RegionsScope {
  explicit RegionsScope(const std::string& spec) { region_spec() = spec; }
  ~RegionsScope() { region_spec().clear(); }
};

}  // namespace bine::test
