#include "pipeline.h"

#include <chrono>

#include "emit_body.h"

namespace bine {

namespace {

/// One stage's log line (PipelineOptions::log) with its time since `started`.
void log_pass(const PipelineOptions& o, const char* stage, const ScheduleDecl& s, const std::string& result,
              std::chrono::steady_clock::time_point started) {
  if (!o.log) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  char t[32];
  std::snprintf(t, sizeof t, "%.1f", ms);
  *o.log << "pass " << stage << " " << s.name << ": " << result << " (" << t << " ms)\n";
}

}  // namespace

bool landing_eligible(const RankProgram& rp) {
  const Collective k = rp.collective;
  for (const InlinedUse& u : rp.uses)
    if (u.group != GroupKind::none) return false;
  return k == Collective::bcast || k == Collective::allgather || k == Collective::gather || k == Collective::scatter;
}

PipelineResult run_pipeline(const Program& program, const ScheduleDecl& s, const PipelineOptions& o,
                            DiagnosticSink& diags) {
  using Clock = std::chrono::steady_clock;
  PipelineResult r;
  auto t = Clock::now();
  r.program = std::make_unique<RankProgram>();
  if (!lower(program, s, *r.program, diags)) {
    r.program.reset();
    log_pass(o, "lower", s, "error", t);
    return r;
  }
  log_pass(o, "lower", s, "ok", t);
  const RankProgram& rp = *r.program;
  if (o.target) {
    r.stopped = PipelineResult::Stage::target;
    t = Clock::now();
    r.unsupported = unsupported(*o.target, rp);
    if (r.unsupported.empty() && o.emit && reserved_identifier(emitted_function_name(s, o.emit->prefix)))
      r.reserved_name = true;
    log_pass(o, "target", s,
             !r.unsupported.empty() ? "does not support " + r.unsupported
                                    : r.reserved_name ? std::string("reserved name") : std::string(o.target->name()),
             t);
    if (!r.unsupported.empty() || r.reserved_name) return r;
  }
  r.stopped = PipelineResult::Stage::verify;
  t = Clock::now();
  r.report = check_schedule(rp, o.check, diags);
  log_pass(o, "verify", s,
           r.report.ok ? "verified p = " + std::to_string(o.check.p_lo) + ".." + std::to_string(o.check.p_hi)
                       : "fails at p = " + std::to_string(r.report.failed_p),
           t);
  if (!r.report.ok) return r;
  r.proof = r.report.proof();
  r.proof.p_lo = o.check.p_lo;
  r.proof.p_hi = o.check.p_hi;
  r.stopped = PipelineResult::Stage::analyse;
  // The target's analyses: a target with the landing feature lands every transfer of a
  // schedule straight in the receivers' buffers when the static landing layout proves all
  // of them direct (docs/utofu.md, "Static landing layout").
  const bool target_landing = o.target && o.target->features().landing && landing_eligible(rp);
  if (o.landing || target_landing) {
    t = Clock::now();
    r.landing = landing_schedule(rp, o.check);
    r.analysed = true;
    const bool direct = r.landing.analysed && r.landing.count.transfers > 0 &&
                        r.landing.count.direct == r.landing.count.transfers;
    if (target_landing && direct) {
      r.proof.landing_direct = true;
      r.proof.landing_lo = r.landing.p_lo;
      r.proof.landing_hi = r.landing.p_hi;
    }
    log_pass(o, "analyse", s,
             "landing " + std::to_string(r.landing.count.direct) + "/" + std::to_string(r.landing.count.transfers) +
                 " direct",
             t);
  }
  r.stopped = PipelineResult::Stage::done;
  return r;
}

}  // namespace bine
