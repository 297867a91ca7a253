// The MPI target: one C-callable function per schedule with the MPI collective's signature,
// over the header-only runtime runtime/include/bine/mpi_runtime.hpp (docs/targets.md).
#include "target.h"
#include "emit_mpi.h"

namespace bine {

namespace {

class MpiTarget final : public Target {
 public:
  const char* name() const override { return "mpi"; }
  const char* summary() const override {
    return "C/C++ header: one function per schedule with the MPI collective's signature (bine/mpi_runtime.hpp)";
  }
  const TargetFeatures& features() const override {
    static const TargetFeatures f = [] {
      TargetFeatures t = round_pipeline_features();
      t.dispatch = true;
      return t;
    }();
    return f;
  }
  std::vector<DefinedName> defined_names(const std::vector<const ScheduleDecl*>& schedules,
                                         const EmitOptions& options) const override {
    return mpi_abi_defined_names(schedules, options);
  }
  std::vector<EmittedFile> emit(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                                const EmitOptions& options) const override {
    return {{"", emit_mpi_header(programs, proofs, options)}};
  }
};

}  // namespace

const Target& mpi_target() {
  static const MpiTarget t;
  return t;
}

}  // namespace bine
