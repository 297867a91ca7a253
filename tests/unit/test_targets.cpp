// The Target interface (emit/target.h): the registry, and the feature check that refuses a
// schedule needing something a target cannot lower, through composition too. The expected
// phrases are read off the library sources (the fold line, the composed schedule's name).
#include <doctest/doctest.h>

#include <regex>
#include <set>

#include "library.h"
#include "target.h"

namespace {

using namespace bine;
using namespace bine::test;

/// A target with chosen features and no output: only unsupported() is exercised.
class FakeTarget final : public Target {
 public:
  explicit FakeTarget(TargetFeatures f) : f_(std::move(f)) {}
  const char* name() const override { return "fake"; }
  const char* summary() const override { return "test double"; }
  const TargetFeatures& features() const override { return f_; }
  std::vector<DefinedName> defined_names(const std::vector<const ScheduleDecl*>&, const EmitOptions&) const override {
    return {};
  }
  std::vector<EmittedFile> emit(const std::vector<const RankProgram*>&, const std::vector<ProofSummary>&,
                                const EmitOptions&) const override {
    return {};
  }

 private:
  TargetFeatures f_;
};

/// unsupported() on the lowered program of `s`, as the driver calls it.
std::string unsupported(const Target& t, const Program& prog, const ScheduleDecl& s) {
  RankProgram rp;
  DiagnosticSink d;
  REQUIRE(lower(prog, s, rp, d));
  return bine::unsupported(t, rp);
}

TargetFeatures everything() {
  TargetFeatures f = find_target("mpi")->features();
  return f;
}

}  // namespace

TEST_CASE("target registry: mpi is listed, found by name, and lowers every library schedule") {
  REQUIRE(find_target("mpi") != nullptr);
  CHECK(find_target("nccl") == nullptr);
  CHECK(target_names() == "mpi, utofu, cuda");
  REQUIRE(find_target("utofu") != nullptr);
  const Target& mpi = *find_target("mpi");
  CHECK(mpi.features().collectives.size() == size_t(kCollectiveCount));
  for (const ScheduleDecl& s : library().schedules) CHECK_MESSAGE(unsupported(mpi, library(), s).empty(), s.name);
}

TEST_CASE("target registry: cuda lowers every library schedule but the barriers") {
  const Target* cuda = find_target("cuda");
  REQUIRE(cuda != nullptr);
  for (const ScheduleDecl& s : library().schedules)
    CHECK_MESSAGE(unsupported(*cuda, library(), s) == (s.collective == Collective::barrier ? "barrier schedules" : ""),
                  s.name);
}

TEST_CASE("target features: a missing fold, collective or feature is named, through composition") {
  TargetFeatures f = everything();
  f.fold_ring = false;
  CHECK(unsupported(FakeTarget(f), library(), sched("rt_ring3_allreduce")) == "'fold ring 3'");
  f = everything();
  f.fold_three_two = false;
  CHECK(unsupported(FakeTarget(f), library(), sched("rt_fold_allreduce")) == "'fold 3-2'");
  CHECK(unsupported(FakeTarget(f), library(), sched("rt_allreduce")).empty());
  f = everything();
  f.composition = false;
  CHECK(unsupported(FakeTarget(f), library(), sched("rt_ring3_allreduce")) == "composition ('phase x = ...')");
  f = everything();
  f.collectives = {Collective::bcast};
  CHECK(unsupported(FakeTarget(f), library(), sched("ring_allreduce")) == "allreduce schedules");
  CHECK(unsupported(FakeTarget(f), library(), sched("bine_bcast_lat")).empty());
  f = everything();
  f.permute = false;
  CHECK(unsupported(FakeTarget(f), library(), sched("bruck_alltoall")) == "'permute'");
  // A feature of a composed schedule only: seg_bine_allreduce has no segment clause of its
  // own; the one of bine_allreduce_rsag (set through its parameter) is refused there.
  const Program& seg = library_with("tests/schedules/segmented.bine");
  f = everything();
  f.segment = false;
  const ScheduleDecl* composed = nullptr;
  for (const ScheduleDecl& s : seg.schedules)
    if (s.name == "seg_bine_allreduce") composed = &s;
  REQUIRE(composed != nullptr);
  CHECK(unsupported(FakeTarget(f), seg, *composed) == "'segment' (in composed schedule bine_allreduce_rsag)");
}

TEST_CASE("valid_prefix: empty or a C identifier") {
  for (const char* ok : {"", "bcc_", "my_", "_x", "X9_"}) CHECK_MESSAGE(valid_prefix(ok), ok);
  for (const char* bad : {"1x", "a-b", "a b", "é_", "x."}) CHECK_MESSAGE(!valid_prefix(bad), bad);
}

TEST_CASE("defined_names: every external C function a target's files define is declared to the clash check") {
  // The oracle is the emitted text itself: each `extern "C" ... NAME(` definition must be
  // among Target::defined_names, so the driver's clash check sees every name that links.
  // One schedule per collective, with the proof flags that enable the irregular forms and
  // the landing form set, under a dispatch table naming each collective.
  std::vector<const ScheduleDecl*> chosen;
  std::vector<std::unique_ptr<RankProgram>> lowered;
  std::vector<const RankProgram*> programs;
  std::vector<ProofSummary> proofs;
  for (const char* n : {"ring_allreduce", "bine_bcast_lat", "ring_allgather", "bruck_alltoall", "bine_gather",
                        "dissemination_barrier", "pairwise_reduce_scatter"}) {
    const ScheduleDecl& s = sched(n);
    auto rp = std::make_unique<RankProgram>();
    DiagnosticSink d;
    REQUIRE(lower(library(), s, *rp, d));
    ProofSummary pf;
    pf.p_lo = 1, pf.p_hi = 8;
    pf.keeps_blocks = pf.direct = pf.landing_direct = true;
    pf.landing_lo = 1, pf.landing_hi = 8;
    chosen.push_back(&s);
    programs.push_back(rp.get());
    proofs.push_back(pf);
    lowered.push_back(std::move(rp));
  }
  SelectionTable table;
  std::string err;
  REQUIRE(parse_selection_table(R"({"allreduce": [{"schedule": "ring_allreduce"}], "bcast": [{"schedule": "mpi"}]})",
                                "t.json", table, &err));
  for (const Target* t : targets()) {
    EmitOptions opt;
    opt.prefix = "pfx_";
    if (t->features().dispatch) opt.dispatch = &table;
    std::vector<const ScheduleDecl*> supported;
    std::vector<const RankProgram*> progs;
    std::vector<ProofSummary> pfs;
    for (size_t i = 0; i < programs.size(); ++i)
      if (bine::unsupported(*t, *programs[i]).empty()) {
        supported.push_back(chosen[i]);
        progs.push_back(programs[i]);
        pfs.push_back(proofs[i]);
      }
    std::set<std::string> declared;
    for (const DefinedName& d : t->defined_names(supported, opt)) {
      CHECK_MESSAGE(d.name.rfind("pfx_", 0) == 0, std::string(t->name()) << ": " << d.name);
      declared.insert(d.name);
    }
    const std::regex def(R"(extern "C" [A-Za-z_ *]*?\b(pfx_[A-Za-z0-9_]+)\()");
    size_t seen = 0;
    for (const EmittedFile& f : t->emit(progs, pfs, opt))
      for (std::sregex_iterator it(f.text.begin(), f.text.end(), def), end; it != end; ++it, ++seen)
        CHECK_MESSAGE(declared.count((*it)[1].str()), std::string(t->name()) << " defines " << (*it)[1].str() << " undeclared");
    CHECK_MESSAGE(seen > 20, std::string(t->name()));  // the scan found the definitions
  }
}
