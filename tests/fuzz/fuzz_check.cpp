// libFuzzer target for the front end and `bine-cc check` (docs/testing.md, ctest `fuzz`):
// the input bytes are one .bine file; they go through the lexer, parser and sema
// (load_program_text) and, when they load cleanly, every schedule is checked as `bine-cc
// check --ranks 1..9 --all-roots-up-to 0` would (check_schedule: lower, instantiate and
// verify for p = 1..9, roots 0, 1, p/2, p-1, each value of `commutative`). Any crash,
// sanitizer report, hang (-timeout) or memory blow-up (-rss_limit_mb) is a bug of ours. An
// instance refused by its memory account (resource.h; budget 1.5 GiB, below the 2 GiB
// -rss_limit_mb) is bine-cc's `resource limit` error, exit 2: a result, not a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "check.h"
#include "resource.h"
#include "sema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bine;
  static const bool budget = (set_memory_budget(uint64_t(1536) << 20), true);
  (void)budget;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Program prog;
  DiagnosticSink diags;
  if (!load_program_text("fuzz.bine", text, prog, diags)) return 0;
  CheckOptions opt;
  opt.p_lo = 1;
  opt.p_hi = 9;
  opt.all_roots_up_to = 0;  // roots 0, 1, p/2, p-1
  for (const ScheduleDecl& s : prog.schedules) {
    DiagnosticSink one;
    try {
      const CheckReport rep = check_schedule(prog, s, opt, one);
      (void)summary_line(s, rep, opt);
      (void)witness_lines(s, rep);
      (void)report_json(s, rep, opt);
    } catch (const ResourceLimit& e) {
      (void)e.what();
    }
    for (const Diagnostic& d : one.all()) (void)render_text(d);
  }
  for (const Diagnostic& d : diags.all()) (void)render_text(d);
  return 0;
}
