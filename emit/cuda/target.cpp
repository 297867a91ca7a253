// The CUDA target: device-buffer collectives over NCCL, CUDA-aware MPI or an in-process
// transport (runtime/include/bine/cuda_runtime.cuh, docs/cuda.md).
#include "emit_cuda.h"
#include "target.h"

namespace bine {

namespace {

class CudaTarget final : public Target {
 public:
  const char* name() const override { return "cuda"; }
  const char* summary() const override {
    return "C header + .cu part: device-buffer collectives on a CUDA stream over NCCL, CUDA-aware MPI or "
           "in process (bine/cuda_runtime.cuh)";
  }
  // The plans come from the shared round pipeline (bine/device_plan.hpp), so every language
  // feature is lowered; every collective but barrier (a device barrier is a stream matter).
  const TargetFeatures& features() const override {
    static const TargetFeatures f = [] {
      TargetFeatures t = round_pipeline_features();
      std::vector<Collective> keep;
      for (Collective c : t.collectives)
        if (c != Collective::barrier) keep.push_back(c);
      t.collectives = keep;
      return t;
    }();
    return f;
  }
  std::vector<DefinedName> defined_names(const std::vector<const ScheduleDecl*>& schedules,
                                         const EmitOptions& options) const override {
    return cuda_defined_names(schedules, options);
  }
  std::vector<EmittedFile> emit(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                                const EmitOptions& options) const override {
    return {{"", emit_cuda_header(programs, proofs, options)}, {".cu", emit_cuda_source(programs, proofs, options)}};
  }
};

}  // namespace

const Target& cuda_target() {
  static const CudaTarget t;
  return t;
}

}  // namespace bine
