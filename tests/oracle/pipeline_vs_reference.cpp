// Translation validation of the compiler's instantiation against its reference (issue 12):
// every schedule of the given files, instantiated by bine::instantiate (the interpreter
// over the round pipeline, bine/rounds.hpp) and by bine::reference::reference_instantiate
// (the interpreter that built the folds' rounds globally, kept as the oracle), must give
// the same status, the same unmet requirement, the same diagnostics and byte-identical
// `schedule --json` text, for p = 1..MAXP, every root up to p = ROOTS (roots 0, 1, p/2,
// p-1 above), with `commutative` false and (where the schedule mentions it) true.
//
// Usage: pipeline_vs_reference MAXP ROOTS FILE.bine...   Exit 0 when all agree, 1 otherwise
// (the first differences are printed: schedule, p, root, what differs).
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MAXP ROOTS FILE.bine...\n", argv[0]);
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
          else if (sa == bine::InstStatus::ok) {
            const std::string ja = bine::schedule_json(a), jb = bine::schedule_json(b);
            if (ja != jb) why = "instance JSON, " + first_difference(ja, jb);
            else if (a.fold_helper != b.fold_helper) why = "fold helpers";
          }
          if (why.empty()) continue;
          if (++differ <= 10)
            std::printf("DIFFER %s p=%lld root=%lld commutative=%d: %s\n", s.name.c_str(), (long long)p, (long long)root,
                        int(comm), why.c_str());
        }
    }
  }
  std::printf("%ld instances compared, %ld differ\n", compared, differ);
  return differ ? 1 : 0;
}
