// The uTofu target: the MPI collectives' signatures over uTofu one-sided puts
// (runtime/include/bine/utofu_runtime.hpp, docs/utofu.md).
#include "emit_mpi.h"
#include "emit_utofu.h"
#include "target.h"

namespace bine {

namespace {

class UtofuTarget final : public Target {
 public:
  const char* name() const override { return "utofu"; }
  const char* summary() const override {
    return "C/C++ header: the MPI signatures, data moved with uTofu puts (bine/utofu_runtime.hpp; "
           "link uTofu or runtime/utofu_emu)";
  }
  // The collectives run end to end through the emulation (tests/utofu); the transport is
  // below the round pipeline, so every language feature the MPI runtime lowers is lowered.
  // Dispatchers as the MPI target's; the landing proof decides direct puts (docs/utofu.md).
  const TargetFeatures& features() const override {
    static const TargetFeatures f = [] {
      TargetFeatures t = round_pipeline_features();
      t.dispatch = t.landing = true;
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
    return {{"", emit_utofu_header(programs, proofs, options)}};
  }
};

}  // namespace

const Target& utofu_target() {
  static const UtofuTarget t;
  return t;
}

}  // namespace bine
