// Translation validation of the compiler's instantiation against its reference (issue 12):
// every schedule of the given files, instantiated by bine::instantiate (the interpreter
// over the round pipeline, bine/rounds.hpp) and by bine::reference::reference_instantiate
// (the interpreter that built the folds' rounds globally, kept as the oracle), must give
// the same status, the same unmet requirement, the same diagnostics and the same instance
// (field by field, the ops' origins included, which implies byte-identical
// `schedule --json` text), for p = 1..MAXP, every root up to p = ROOTS (roots 0, 1, p/2,
// p-1 above), with `commutative` false and (where the schedule mentions it) true.
//
// Usage: pipeline_vs_reference MAXP ROOTS FILE.bine...   Exit 0 when all agree, 1 otherwise
// (the first differences are printed: schedule, p, root, what differs).
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "bine/builtins.hpp"
#include "instantiate.h"
#include "reference_instantiate.h"
#include "sema.h"

namespace {

std::string diags_text(const bine::DiagnosticSink& d) {
  std::string s;
  for (const bine::Diagnostic& x : d.all()) s += bine::render_text(x);
  return s;
}

/// First line where a and b differ (1-based), with both lines.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t line = 1, i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '\n') ++line;
    ++i;
  }
  auto line_at = [&](const std::string& s) {
    size_t st = s.rfind('\n', i ? i - 1 : 0);
    st = (st == std::string::npos || i == 0) ? 0 : st + 1;
    const size_t en = s.find('\n', i);
    return s.substr(st, en == std::string::npos ? std::string::npos : en - st);
  };
  return "line " + std::to_string(line) + ": pipeline '" + line_at(a) + "' vs reference '" + line_at(b) + "'";
}

bool same_origin(const bine::Origin& a, const bine::Origin& b) {
  auto same_span = [](const bine::Span& x, const bine::Span& y) {
    return x.file == y.file && x.begin == y.begin && x.end == y.end;
  };
  return same_span(a.span, b.span) && a.via == b.via && same_span(a.via_span, b.via_span);
}

/// Structural equality of two instances, origins (spans, derivations) included: stricter
/// than their JSON text, and fast enough for p = 1..256.
bool same_schedule(const bine::Schedule& a, const bine::Schedule& b) {
  if (a.name != b.name || a.collective != b.collective || a.p != b.p || a.root != b.root || a.blocks != b.blocks ||
      a.scratch != b.scratch || a.fold != b.fold || a.fold_ring != b.fold_ring || a.fold_helper != b.fold_helper ||
      a.num_rounds != b.num_rounds || a.round_labels != b.round_labels || a.round_segments != b.round_segments ||
      a.ranks.size() != b.ranks.size())
    return false;
  for (size_t x = 0; x < a.ranks.size(); ++x) {
    if (a.ranks[x].size() != b.ranks[x].size()) return false;
    for (size_t t = 0; t < a.ranks[x].size(); ++t) {
      const bine::Round& ra = a.ranks[x][t];
      const bine::Round& rb = b.ranks[x][t];
      if (ra.size() != rb.size()) return false;
      for (size_t i = 0; i < ra.size(); ++i) {
        const bine::Op& oa = ra[i];
        const bine::Op& ob = rb[i];
        if (oa.index() != ob.index() || bine::peer_of(oa) != bine::peer_of(ob) || !(bine::blocks_of(oa) == bine::blocks_of(ob)) ||
            !same_origin(bine::origin_of(oa), bine::origin_of(ob)))
          return false;
        if (const auto* r = std::get_if<bine::RecvOp>(&oa); r && r->reduce != std::get<bine::RecvOp>(ob).reduce) return false;
        if (const auto* l = std::get_if<bine::LocalOp>(&oa)) {
          const auto& m = std::get<bine::LocalOp>(ob);
          if (l->reduce != m.reduce || !(l->src.get() == m.src.get())) return false;
        }
        if (const auto* pm = std::get_if<bine::PermuteOp>(&oa); pm && pm->to.get() != std::get<bine::PermuteOp>(ob).to.get()) return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // --regions SPEC: the region layout of every instance (bine-cc --regions), so that the
  // schedules that read it (locality-aware Bruck, phases on sub-groups) are compared on it.
  if (argc > 2 && std::string(argv[1]) == "--regions") {
    bine::region_spec() = argv[2];
    argv += 2;
    argc -= 2;
  }
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s [--regions SPEC] MAXP ROOTS FILE.bine...\n", argv[0]);
    return 2;
  }
  const int64_t maxp = std::atoll(argv[1]), all_roots = std::atoll(argv[2]);
  std::vector<std::string> files(argv + 3, argv + argc);
  bine::Program prog;
  bine::DiagnosticSink load_diags;
  if (!bine::load_program(files, prog, load_diags)) {
    for (const bine::Diagnostic& d : load_diags.all()) std::fputs(bine::render_text(d).c_str(), stderr);
    return 2;
  }
  long compared = 0, differ = 0;
  for (const bine::ScheduleDecl& s : prog.schedules) {
    for (int64_t p = 1; p <= maxp; ++p) {
      std::set<int64_t> roots{0};
      if (bine::collective_is_rooted(s.collective)) {
        if (p <= all_roots)
          for (int64_t r = 0; r < p; ++r) roots.insert(r);
        else
          roots.insert({1 % p, p / 2, p - 1});
      }
      // `commutative` changes the instance only where the schedule mentions it.
      const std::vector<bool> comms = s.mentions_commutative ? std::vector<bool>{false, true} : std::vector<bool>{false};
      for (int64_t root : roots)
        for (bool comm : comms) {
          const bine::InstanceRequest req{p, root, comm};
          bine::Schedule a, b;
          bine::DiagnosticSink da, db;
          std::string ua, ub;
          const bine::InstStatus sa = bine::instantiate(prog, s, req, a, da, &ua);
          const bine::InstStatus sb = bine::reference::reference_instantiate(prog, s, req, b, db, &ub);
          ++compared;
          std::string why;
          if (sa != sb) why = "status " + std::to_string(int(sa)) + " vs " + std::to_string(int(sb));
          else if (ua != ub) why = "unmet '" + ua + "' vs '" + ub + "'";
          else if (diags_text(da) != diags_text(db)) why = "diagnostics:\n" + diags_text(da) + "--- reference:\n" + diags_text(db);
          else if (sa == bine::InstStatus::ok && !same_schedule(a, b)) {
            const std::string ja = bine::schedule_json(a), jb = bine::schedule_json(b);
            why = ja != jb ? "instance JSON, " + first_difference(ja, jb) : "origins or fold helpers (same JSON)";
          }
          if (why.empty()) continue;
          if (++differ <= 10)
            std::printf("DIFFER %s p=%lld root=%lld commutative=%d: %s\n", s.name.c_str(), (long long)p, (long long)root,
                        int(comm), why.c_str());
        }
    }
  }
  std::printf("%ld instances compared, %ld differ%s\n", compared, differ,
              bine::region_spec().empty() ? "" : (" (--regions " + bine::region_spec() + ")").c_str());
  return differ ? 1 : 0;
}
