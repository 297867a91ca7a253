#include "emit_mpi.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace bine {

namespace {

/// The body API's names in the host runtimes (bine::mpi::BasicContext<Transport>).
const BodyDialect kHostBody = {"bine::mpi::Context", "bine::mpi::PlanCache", "bine::mpi::bind_regions", "MPI_SUCCESS",
                               "MPI_ERR_OTHER"};

/// The parameter list of a collective's generated function (the MPI collective's, with
/// size_t counts) and the names in it, in order (bine/collective.hpp's table).
struct Signature {
  const char* params;
  const char* names;
};
Signature signature(Collective c) { return {collective_info(c).params, collective_info(c).args}; }

}  // namespace

namespace {

// The irregular (`v`) forms: bine::irregular_form() (bine/collective.hpp's table).

/// Whether a schedule gets an irregular `_v` form: an allgather, gather, scatter or
/// reduce_scatter whose every verified instance keeps each block's index
/// (ProofSummary::keeps_blocks), or an alltoall whose every verified instance sends each
/// item once, from its source straight to its destination (ProofSummary::direct).
bool has_irregular_form(const ScheduleDecl& s, const ProofSummary& proof) {
  if (s.collective == Collective::alltoall) return proof.direct;
  return irregular_form(s.collective) && proof.keeps_blocks;
}

}  // namespace

std::string emitted_prototype(const ScheduleDecl& s, const std::string& prefix) {
  return "int " + emitted_function_name(s, prefix) + "(" + signature(s.collective).params + ")";
}

namespace {

class AbiEmitter {
 public:
  AbiEmitter(const RankProgram& rp, const std::string& prefix, const MpiAbiDialect& d) : rp_(rp), sd_(*rp.decl), prefix_(prefix), d_(d) {}

  std::string function(const ProofSummary& proof) {
    std::ostringstream o;
    proof_ = &proof;
    out_ = &o;
    std::string order = "{";
    for (size_t i = 0; i < proof.order_ranges.size(); ++i)
      order += (i ? ", {" : "{") + std::to_string(proof.order_ranges[i].first) + ", " +
               std::to_string(proof.order_ranges[i].second) + "}";
    order += "}";
    // The body, then the C entry point: a context named after the function (error texts),
    // and the error text cleared or completed on the way out (Context::result).
    const std::string fname = emitted_function_name(sd_, prefix_);
    std::ostringstream run;  // the entry with the arguments: begin_*, then the body
    run << "static int bine_run_" << fname << "(bine::mpi::Context& cx, " << signature(sd_.collective).params << ") {\n";
    {  // cx.begin_<collective>(<its arguments>[, the order proof of a reducing one])
      const CollectiveInfo& c = collective_info(sd_.collective);
      const std::string call = std::string("  int rc = cx.begin_") + c.name + "(";
      run << call << c.args;
      if (c.reduces) run << ",\n" << std::string(call.size(), ' ') << "/*non-commutative ops allowed for p in*/ " << order;
      run << ");\n";
    }
    run << "  if (rc != MPI_SUCCESS) return rc;\n";
    run << "  return bine_body_" << fname << "(cx);\n}\n\n";
    // The schedule body: every collective form (plain, persistent, nonblocking, irregular)
    // runs it after its own begin_* (the arguments' checks and copy-in).
    o << emit_schedule_body(rp_, prefix_, kHostBody);
    o << run.str();
    // A call of a shape seen before runs the operations that shape's replay made
    // (bine::mpi::run_call, bine/flat_replay.hpp); others run the body on a context.
    const std::string names = signature(sd_.collective).names;
    o << "extern \"C\" " << emitted_prototype(sd_, prefix_) << " {\n";
    o << "  static thread_local bine::mpi::FlatCache bine_flat;\n";
    o << "  return bine::mpi::run_call(bine_flat, " << c_string(fname) << ", bine_run_" << fname << ", " << names
      << ");\n}\n";
    const Signature sig = signature(sd_.collective);
    persistent(fname, sig.params, sig.names, "bine_run_" + fname, false, /*flat=*/true);
    nonblocking(fname);
    if (has_irregular_form(sd_, proof)) {
      const IrregularForm& v = *irregular_form(sd_.collective);
      o << "static int bine_run_" << fname << "_v(bine::mpi::Context& cx, " << v.params << ") {\n";
      o << "  const int rc = cx." << v.begin << "(" << v.names;
      if (collective_reduces(sd_.collective)) o << ",\n      /*non-commutative ops allowed for p in*/ " << order;
      o << ");\n";
      o << "  if (rc != MPI_SUCCESS) return rc;\n";
      o << "  return bine_body_" << fname << "(cx);\n}\n";
      o << "extern \"C\" int " << fname << "_v(" << v.params << ") {\n";
      o << "  bine::mpi::Context cx(" << c_string(fname + "_v") << ");\n";
      o << "  return cx.result(bine_run_" << fname << "_v(cx, " << v.names << "));\n}\n";
      persistent(fname + "_v", v.params, v.names, "bine_run_" + fname + "_v", v.rooted, /*flat=*/false);
      nonblocking_irregular(fname, v);
    }
    return o.str();
  }
  /// The nonblocking form (like MPI_Iallreduce): `<fname>_i` checks the call and builds or
  /// finds its plan in a dry run (errors return at once, as from the plain call), then
  /// starts the plan on a tag of its own (bine::mpi::nb_tag) and returns a request that
  /// <prefix>test / <prefix>wait advance (docs/architecture.md, "Nonblocking forms").
  void nonblocking(const std::string& fname) {
    std::ostream& o = *out_;
    const Signature sig = signature(sd_.collective);
    const std::string req_t = prefix_ + "request";
    o << "extern \"C\" int " << fname << "_i(" << sig.params << ", " << req_t << "* request) {\n";
    o << "  bine::mpi::Context cx(" << c_string(fname) << ");\n";
    o << "  if (!request) return cx.result(cx.fail(MPI_ERR_ARG, \"the request pointer is NULL\"));\n";
    o << "  *request = nullptr;\n";
    o << "  // A dry run: every check of a call, and the rounds planned (or found), without moving data.\n";
    o << "  cx.dry_run();\n";
    o << "  int rc = bine_run_" << fname << "(cx, " << sig.names << ");\n";
    o << "  if (rc != MPI_SUCCESS) return cx.result(rc);\n";
    o << "  " << req_t << "_s* q = new (std::nothrow) " << req_t << "_s(" << c_string(fname) << ");\n";
    o << "  if (!q) return cx.result(cx.fail(MPI_ERR_NO_MEM, \"cannot allocate the request\"));\n";
    o << "  int tag = 0;\n";
    o << "  if ((rc = bine::mpi::nb_tag(comm, &tag)) == MPI_SUCCESS) {\n";
    o << "    q->call.cx.start_nonblocking(tag);\n";
    o << "    rc = bine_run_" << fname << "(q->call.cx, " << sig.names << ");\n";
    o << "  }\n";
    o << "  bine::mpi::nb_register(&q->call, rc);  // its first round posted; a failed start ends the request\n";
    o << "  *request = q;\n";
    o << "  return cx.result(MPI_SUCCESS);\n}\n";
  }
  /// The persistent form (MPI-4 style, like MPI_Allreduce_init): `<fname>_init` binds the
  /// arguments to a plan object and builds its rounds in a dry run (every check of a call,
  /// no data moved, nothing communicated); each start() then replays them on the buffers.
  /// `fname` the form's function (`<schedule>` or `<schedule>_v`), `params` / `names` its
  /// parameters, `run` the static function that runs it on a Context. `rooted`: a rooted
  /// irregular form (gatherv, scatterv), whose _init also shares the root's block sizes
  /// once (a broadcast: _init is collective there, like MPI_Gatherv_init) and whose starts
  /// reuse them.
  /// The persistent form `<fname>_init` and its plan's start(); `flat`: starts after the
  /// first run the flat plan the first recorded (not for the irregular forms, whose count
  /// arrays the shape does not hold).
  void persistent(const std::string& fname, const std::string& sig_params, const std::string& sig_names,
                  const std::string& run, bool rooted, bool flat) {
    std::ostream& o = *out_;
    const std::vector<std::string> params = split(sig_params), names = split(sig_names);
    const std::string plan_t = prefix_ + "plan";
    o << "extern \"C\" int " << fname << "_init(" << sig_params << ", " << plan_t << "* plan) {\n";
    o << "  struct Bound final : " << plan_t << "_s {\n";
    for (const std::string& prm : params) o << "    " << prm << ";\n";
    if (rooted) o << "    std::vector<uint64_t> sizes;  // the root's block sizes, shared by _init\n";
    o << "    int start() override {\n";
    // A start after the first runs the operations the first made (bine/flat_replay.hpp):
    // the arguments are the bound ones, so the shape is always the same.
    if (flat) {
      o << "      const bine::mpi::CallKey key(" << sig_names << ");  // the bound arguments\n";
      o << "      if (int rc; flat.run(key, " << c_string(fname) << ", &rc)) return rc;\n";
    }
    o << "      bine::mpi::Context cx(" << c_string(fname) << ");\n";
    o << "      cx.use_plans(plans);\n";
    // A target whose transfers can land straight in the receivers' buffers (the uTofu
    // target, docs/utofu.md "Static landing layout"): the persistent plain form's starts
    // use it when the landing proof covers every transfer.
    if (d_.landing && flat && proof_ && proof_->landing_direct)
      o << "      // every transfer lands in the receiver's buffer, proved for p = " << proof_->landing_lo << ".."
        << proof_->landing_hi << " (bine-cc check --landing)\n"
        << "      cx.landing_direct(" << proof_->landing_lo << ", " << proof_->landing_hi << ");\n";
    if (rooted) o << "      cx.preset_block_bytes(&sizes);\n";
    if (flat) o << "      cx.record_flat(&flat, &key);\n";
    o << "      return cx.result(" << run << "(cx, " << sig_names << "));\n";
    o << "    }\n";
    if (flat) o << "    bine::mpi::FlatCache flat;\n";
    o << "  };\n";
    o << "  bine::mpi::Context cx(" << c_string(fname) << ");  // the plain call's error texts\n";
    o << "  if (!plan) return cx.result(cx.fail(MPI_ERR_ARG, \"the plan pointer is NULL\"));\n";
    o << "  Bound* b = new (std::nothrow) Bound;\n";
    o << "  if (!b) return cx.result(cx.fail(MPI_ERR_NO_MEM, \"cannot allocate the plan\"));\n";
    for (const std::string& n : names) o << "  b->" << n << " = " << n << ";\n";
    o << "  // A dry run: every check of a call, and the rounds planned, without moving data"
      << (rooted ? " (the sizes broadcast once)" : "") << ".\n";
    o << "  cx.dry_run();\n  cx.use_plans(b->plans);\n";
    o << "  const int rc = " << run << "(cx, " << sig_names << ");\n";
    o << "  if (rc != MPI_SUCCESS) {\n    delete b;\n    return cx.result(rc);\n  }\n";
    if (rooted) o << "  b->sizes = cx.block_bytes();\n";
    o << "  *plan = b;\n  return cx.result(MPI_SUCCESS);\n}\n";
  }
  /// The nonblocking irregular form `<fname>_v_i` (like MPI_Iallgatherv): the call's own
  /// plan (bine::mpi::nb_start_irregular); a rooted form first broadcasts the root's block
  /// sizes without waiting, and reports the root's argument errors from the wait.
  void nonblocking_irregular(const std::string& fname, const IrregularForm& v) {
    std::ostream& o = *out_;
    const std::string req_t = prefix_ + "request";
    o << "extern \"C\" int " << fname << "_v_i(" << v.params << ", " << req_t << "* request) {\n";
    o << "  bine::mpi::Context cx(" << c_string(fname + "_v") << ");\n";
    o << "  if (!request) return cx.result(cx.fail(MPI_ERR_ARG, \"the request pointer is NULL\"));\n";
    o << "  *request = nullptr;\n";
    o << "  " << req_t << "_s* q = new (std::nothrow) " << req_t << "_s(" << c_string(fname + "_v") << ");\n";
    o << "  if (!q) return cx.result(cx.fail(MPI_ERR_NO_MEM, \"cannot allocate the request\"));\n";
    o << "  q->call.run = [=](bine::mpi::Context& c) { return bine_run_" << fname << "_v(c, " << v.names << "); };\n";
    o << "  int rc = bine::mpi::nb_tag(comm, &q->call.tag);\n";
    o << "  if (rc != MPI_SUCCESS) {\n    delete q;\n    return cx.result(rc);\n  }\n";
    o << "  rc = bine::mpi::nb_start_irregular(&q->call, /*rooted=*/" << (v.rooted ? "true" : "false")
      << ");  // describes its own errors\n";
    o << "  if (rc != MPI_SUCCESS) {\n    delete q;\n    return rc;\n  }\n";
    o << "  *request = q;\n";
    o << "  return cx.result(MPI_SUCCESS);\n}\n";
  }
  static std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = list.find(", ", at);
      out.push_back(list.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (comma == std::string::npos) break;
      at = comma + 2;
    }
    return out;
  }


 private:
  const RankProgram& rp_;
  const ScheduleDecl& sd_;    ///< the top schedule
  const std::string prefix_;  ///< EmitOptions::prefix
  const MpiAbiDialect& d_;    ///< the target's runtime and extensions
  const ProofSummary* proof_ = nullptr;  ///< function()'s
  std::ostream* out_ = nullptr;
};

/// The condition a p outside the verified range fails, as `_requires` states it.
std::string range_condition(const ProofSummary& p) {
  return std::to_string(p.p_lo) + " <= p <= " + std::to_string(p.p_hi) + " (the verified range)";
}

/// The body of `_requires` inside the verified range: one case list per distinct reason,
/// reasons in order of their first p.
void requires_switch(std::ostream& o, const ProofSummary& pf) {
  if (pf.not_applicable.empty()) {
    o << "  return NULL;\n";
    return;
  }
  auto reason = [&](size_t k) { return k < pf.unmet.size() ? pf.unmet[k] : std::string("a `requires` clause"); };
  std::vector<std::string> reasons;
  for (size_t k = 0; k < pf.not_applicable.size(); ++k)
    if (std::find(reasons.begin(), reasons.end(), reason(k)) == reasons.end()) reasons.push_back(reason(k));
  o << "  switch (p) {\n";
  for (const std::string& why : reasons) {
    for (size_t k = 0; k < pf.not_applicable.size(); ++k)
      if (reason(k) == why) o << "    case " << pf.not_applicable[k] << ":\n";
    o << "      return " << c_string(why) << ";\n";
  }
  o << "    default:\n      return NULL;\n  }\n";
}

std::string proof_line(const ProofSummary& p, bool rooted) {
  std::string s = "verified by bine-cc for p = " + std::to_string(p.p_lo) + ".." + std::to_string(p.p_hi) +
                  (rooted ? ", every root" : "") + ": postcondition, deadlock freedom (zero buffering), no races";
  if (!p.not_applicable.empty()) s += "; not applicable (requires) for " + std::to_string(p.not_applicable.size()) + " of these p";
  return s;
}

}  // namespace

std::vector<DefinedName> mpi_abi_defined_names(const std::vector<const ScheduleDecl*>& schedules,
                                               const EmitOptions& options) {
  std::vector<DefinedName> out;
  for (const char* own : {"plan", "plan_s", "plan_start", "plan_free", "last_error", "request", "request_s", "test", "wait",
                          "waitall"})
    out.push_back({options.prefix + own, "a function of the header itself", nullptr});
  if (options.dispatch)
    for (const std::string& name : dispatch_names(*options.dispatch, options.prefix))
      out.push_back({name, "a dispatcher of --dispatch " + options.dispatch->source, nullptr});
  for (const ScheduleDecl* s : schedules)
    for (const char* suffix : {"", "_applicable", "_requires", "_init", "_i", "_v", "_v_init", "_v_i"})
      out.push_back({emitted_function_name(*s, options.prefix) + suffix, "schedule '" + s->name + "'", s});
  return out;
}

const MpiAbiDialect& mpi_abi_dialect() {
  static const MpiAbiDialect d = {"// Generated by bine-cc (target mpi).", "bine/mpi_runtime.hpp", false};
  return d;
}

std::string emit_mpi_header(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                            const EmitOptions& options, const MpiAbiDialect& dialect) {
  std::vector<const ScheduleDecl*> schedules;
  for (const RankProgram* rp : programs) schedules.push_back(rp->decl);
  const std::string& prefix = options.prefix;
  std::string macro_prefix = prefix;
  for (char& ch : macro_prefix) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  auto fname = [&](const ScheduleDecl& s) { return emitted_function_name(s, prefix); };
  std::ostringstream o;
  o << dialect.banner << " Do not edit: change the .bine source and regenerate.\n//\n";
  for (size_t i = 0; i < schedules.size(); ++i) {
    const ScheduleDecl& s = *schedules[i];
    o << "// " << fname(s) << ": schedule " << s.name << " implements " << collective_name(s.collective)
      << "\n//   source: " << s.name_span.file->name << ":" << s.name_span.line << "\n//   "
      << proof_line(proofs[i], collective_is_rooted(s.collective)) << "\n";
    if (collective_reduces(s.collective))
      o << "//   order-preserving (safe for non-commutative ops): " << (proofs[i].order_preserving ? "yes" : "no")
        << "; same bracketing on all ranks: " << (proofs[i].same_bracketing ? "yes" : "no") << "\n";
  }
  o << "//\n// Usage: include this header anywhere for the C prototypes; in exactly one C++ translation\n"
    << "// unit, #define BINE_IMPLEMENTATION before including it. Needs runtime/include on the include path.\n"
    << "// Every function returns MPI_SUCCESS or an MPI error code (see bine/mpi_runtime.hpp).\n";
  o << "#pragma once\n#include <mpi.h>\n#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
  const std::string plan_t = prefix + "plan";
  o << "/// A persistent collective (MPI-4 style, like MPI_Allreduce_init / MPI_Start): made by a\n"
    << "/// function's _init form, which binds its arguments (buffers, counts, datatype, op, root,\n"
    << "/// communicator: they must stay valid until the plan is freed); " << prefix << "plan_start() runs the\n"
    << "/// collective on them (blocking: MPI_Start plus MPI_Wait), as often as wanted, replaying the\n"
    << "/// rounds (partners, block ranges, folds, allocation sizes) _init planned once.\n"
    << "typedef struct " << plan_t << "_s* " << plan_t << ";\n"
    << "/// Runs the plan's collective once on the bound buffers (their contents at the start);\n"
    << "/// returns what the plain function would return.\n"
    << "/// MPI_ERR_REQUEST for a NULL plan. Starts of one plan must not overlap.\n"
    << "int " << prefix << "plan_start(" << plan_t << " plan);\n"
    << "/// Frees the plan and sets *plan to NULL (a NULL *plan is allowed); MPI_ERR_ARG for NULL.\n"
    << "/// Leaves " << prefix << "last_error() as it was (the last start's error stays readable).\n"
    << "int " << prefix << "plan_free(" << plan_t << "* plan);\n";
  const std::string req_t = prefix + "request";
  o << "/// A nonblocking collective in flight (like an MPI_Request of MPI_Iallreduce): made by a\n"
    << "/// function's _i form, which checks the arguments (errors return at once), starts the\n"
    << "/// collective and returns; the buffers must stay untouched until it completes. Only\n"
    << "/// " << prefix << "test / " << prefix << "wait / " << prefix << "waitall advance it (not MPI_Test: MPI has no progress\n"
    << "/// hook for such requests), and each of them advances every call in flight, so several\n"
    << "/// calls on one communicator complete in any order of waits; a blocking function of\n"
    << "/// this header advances them too while it waits. NULL: no call (like MPI_REQUEST_NULL).\n"
    << "typedef struct " << req_t << "_s* " << req_t << ";\n"
    << "/// *flag = 1 when the call has completed (then *request is freed and set to NULL, and the\n"
    << "/// call's result is returned), else *flag = 0 and MPI_SUCCESS. A NULL *request: *flag = 1.\n"
    << "/// MPI_ERR_ARG for a NULL request or flag pointer.\n"
    << "int " << prefix << "test(" << req_t << "* request, int* flag);\n"
    << "/// Advances calls in flight until *request completes; frees it, sets it to NULL and\n"
    << "/// returns the call's result (MPI_SUCCESS for a NULL *request).\n"
    << "int " << prefix << "wait(" << req_t << "* request);\n"
    << "/// " << prefix << "wait on each of count requests; returns the first error (every request is\n"
    << "/// completed and set to NULL regardless).\n"
    << "int " << prefix << "waitall(int count, " << req_t << "* requests);\n";
  for (size_t i = 0; i < schedules.size(); ++i) {
    o << emitted_prototype(*schedules[i], prefix) << ";\n";
    o << "/// The persistent form: binds the arguments of " << fname(*schedules[i]) << " to *plan (" << prefix
      << "plan_start,\n/// " << prefix << "plan_free) and plans its rounds, without communicating or touching the\n"
      << "/// buffers. Returns every error the plain call would return before communicating (root,\n"
      << "/// datatype, operator, `requires`), then *plan is untouched; MPI_ERR_ARG for a NULL plan.\n";
    o << "int " << fname(*schedules[i]) << "_init(" << signature(schedules[i]->collective).params << ", " << plan_t
      << "* plan);\n";
    if (has_irregular_form(*schedules[i], proofs[i])) {
      const IrregularForm& v = *irregular_form(schedules[i]->collective);
      o << "/// The irregular form (" << v.mpi << ", size_t counts and displacements in extents of the\n"
        << "/// counted type; " << v.counts << "):\n"
        << (schedules[i]->collective == Collective::alltoall
                ? "/// every message of the schedule is one item, from its source to its destination, so the\n"
                  "/// proof holds for any item sizes. The rounds do not depend on the sizes: the plain\n"
                  "/// form replays the plan of a plain call of the same shape.\n"
                : "/// every message of the schedule keeps its blocks' indices, so the proof holds for any\n"
                  "/// block sizes. The plain form builds its rounds each call (the sizes are not in the\n"
                  "/// plan key).\n")
        << "int " << fname(*schedules[i]) << "_v(" << v.params << ");\n";
      o << "/// The persistent irregular form (like MPI_" << v.mpi + 4 << "_init): binds the arguments, count and\n"
        << "/// displacement arrays included (they must stay valid and unchanged until the plan is\n"
        << "/// freed), and plans the rounds once" << (v.rooted ? "; the root's block sizes are broadcast once,\n/// here (so every rank calls it, as for MPI_" + std::string(v.mpi + 4) + "_init), and the starts reuse them" : "")
        << ".\n"
        << "int " << fname(*schedules[i]) << "_v_init(" << v.params << ", " << plan_t << "* plan);\n";
      std::string nb_name = v.mpi + 4;  // MPI_Igatherv, MPI_Ireduce_scatter, ...
      nb_name[0] = char(std::tolower(static_cast<unsigned char>(nb_name[0])));
      o << "/// The nonblocking irregular form (like MPI_I" << nb_name << "): starts " << fname(*schedules[i])
        << "_v and sets\n/// *request (" << prefix << "wait)"
        << (v.rooted ? "; the root's sizes are broadcast without waiting, so the root's argument\n/// errors "
                       "(sent to every rank) return from the wait, the other errors at once"
                     : "; argument errors return at once")
        << ".\n"
        << "int " << fname(*schedules[i]) << "_v_i(" << v.params << ", " << req_t << "* request);\n";
    }
    o << "/// The nonblocking form: starts " << fname(*schedules[i]) << " and sets *request (" << prefix << "wait).\n";
    o << "int " << fname(*schedules[i]) << "_i(" << signature(schedules[i]->collective).params << ", " << req_t
      << "* request);\n";
    o << "/// 1 when the schedule applies to p processes, 0 when its `requires` excludes p, -1 when p\n"
      << "/// is outside the verified range (" << proofs[i].p_lo << ".." << proofs[i].p_hi << ").\n";
    o << "int " << fname(*schedules[i]) << "_applicable(int p);\n";
    o << "/// Why the schedule does not apply to p processes: the `requires` condition that is false\n"
      << "/// at p, as written in the source (e.g. \"p % 3 == 0 (fold ring 3)\"), or \"" << range_condition(proofs[i])
      << "\"\n/// outside the verified range; NULL when it applies (_applicable(p) == 1). Static storage.\n";
    o << "const char* " << fname(*schedules[i]) << "_requires(int p);\n";
  }
  o << "/// Why the last call of a function of this header on the calling thread failed, as one\n"
    << "/// sentence naming the function (e.g. \"" << prefix << "x: does not apply at p = 8: requires p % 3 == 0\");\n"
    << "/// \"\" after a successful call. Static thread-local storage of at most 511 characters.\n";
  o << "const char* " << prefix << "last_error(void);\n";
  if (options.dispatch) emit_dispatch_prototypes(o, *options.dispatch, prefix);
  o << "#ifdef __cplusplus\n}\n#endif\n\n";
  // Registry: X-macro lists per collective, X(function, order_preserving, same_bracketing).
  o << "// Registry of the functions above, per collective: X(function, order_preserving, same_bracketing).\n";
  for (Collective c : {Collective::allreduce, Collective::bcast, Collective::reduce, Collective::allgather,
                       Collective::gather, Collective::scatter, Collective::reduce_scatter, Collective::alltoall,
                       Collective::scan, Collective::exscan, Collective::barrier}) {
    std::string up = collective_name(c);
    for (char& ch : up) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    o << "#define " << macro_prefix << up << "_SCHEDULES(X)";
    for (size_t i = 0; i < schedules.size(); ++i)
      if (schedules[i]->collective == c)
        o << " \\\n  X(" << fname(*schedules[i]) << ", " << (proofs[i].order_preserving ? 1 : 0) << ", "
          << (proofs[i].same_bracketing ? 1 : 0) << ")";
    o << "\n";
  }
  // The irregular forms; X(function, order_preserving, same_bracketing) as above for
  // reduce_scatter (the proof's flags), 1, 1 for the forms without an operator.
  for (Collective c : {Collective::allgather, Collective::gather, Collective::scatter, Collective::reduce_scatter,
                       Collective::alltoall}) {
    std::string up = collective_name(c);
    for (char& ch : up) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    o << "#define " << macro_prefix << up << "V_SCHEDULES(X)";
    for (size_t i = 0; i < schedules.size(); ++i)
      if (schedules[i]->collective == c && has_irregular_form(*schedules[i], proofs[i]))
        o << " \\\n  X(" << fname(*schedules[i]) << "_v, "
          << (!collective_reduces(c) || proofs[i].order_preserving ? 1 : 0) << ", "
          << (!collective_reduces(c) || proofs[i].same_bracketing ? 1 : 0) << ")";
    o << "\n";
  }
  o << "\n";
  o << "#if defined(__cplusplus) && defined(BINE_IMPLEMENTATION)\n#include <cstdint>\n#include <new>\n\n#include \"" << dialect.runtime_header << "\"\n\n";
  o << "struct " << plan_t << "_s {\n  virtual ~" << plan_t << "_s() = default;\n  virtual int start() = 0;\n"
    << "  bine::mpi::PlanCache plans;  ///< this plan's rounds, built by _init's dry run\n};\n";
  o << "extern \"C\" int " << prefix << "plan_start(" << plan_t << " plan) {\n"
    << "  if (!plan) {\n    bine::mpi::Context cx(\"" << prefix << "plan_start\");\n"
    << "    return cx.result(cx.fail(MPI_ERR_REQUEST, \"the plan is NULL\"));\n  }\n  return plan->start();\n}\n";
  o << "extern \"C\" int " << prefix << "plan_free(" << plan_t << "* plan) {\n"
    << "  if (!plan) {\n    bine::mpi::Context cx(\"" << prefix << "plan_free\");\n"
    << "    return cx.result(cx.fail(MPI_ERR_ARG, \"the plan pointer is NULL\"));\n  }\n"
    << "  delete *plan;\n  *plan = nullptr;\n  return MPI_SUCCESS;\n}\n";
  o << "struct " << req_t << "_s {\n  explicit " << req_t << "_s(const char* name) : call(name) {}\n"
    << "  bine::mpi::NbCall call;  ///< the call's state and, once done, its result\n};\n";
  o << "extern \"C\" int " << prefix << "test(" << req_t << "* request, int* flag) {\n"
    << "  if (!request || !flag) {\n    bine::mpi::Context cx(\"" << prefix << "test\");\n"
    << "    return cx.result(cx.fail(MPI_ERR_ARG, \"the %s pointer is NULL\", request ? \"flag\" : \"request\"));\n  }\n"
    << "  if (!*request) {\n    *flag = 1;\n    return MPI_SUCCESS;\n  }\n"
    << "  bine::mpi::nb_test(&(*request)->call, flag);\n"
    << "  if (!*flag) return MPI_SUCCESS;\n"
    << "  const int rc = bine::mpi::nb_result(&(*request)->call);\n"
    << "  delete *request;\n  *request = nullptr;\n  return rc;\n}\n";
  o << "extern \"C\" int " << prefix << "wait(" << req_t << "* request) {\n"
    << "  for (int flag = 0;;) {\n"
    << "    const int rc = " << prefix << "test(request, &flag);\n"
    << "    if (flag || rc != MPI_SUCCESS) return rc;\n  }\n}\n";
  o << "extern \"C\" int " << prefix << "waitall(int count, " << req_t << "* requests) {\n"
    << "  if (count > 0 && !requests) {\n    bine::mpi::Context cx(\"" << prefix << "waitall\");\n"
    << "    return cx.result(cx.fail(MPI_ERR_ARG, \"the request array is NULL\"));\n  }\n"
    << "  int first = MPI_SUCCESS;\n"
    << "  for (int i = 0; i < count; ++i) {\n"
    << "    const int rc = " << prefix << "wait(&requests[i]);\n"
    << "    if (first == MPI_SUCCESS) first = rc;\n  }\n  return first;\n}\n\n";
  for (size_t i = 0; i < schedules.size(); ++i) {
    const ScheduleDecl& s = *schedules[i];
    o << "// schedule " << s.name << " (" << s.name_span.file->name << ":" << s.name_span.line << ")\n";
    o << AbiEmitter(*programs[i], prefix, dialect).function(proofs[i]) << "\n";
    o << "extern \"C\" int " << fname(s) << "_applicable(int p) {\n";
    o << "  if (p < " << proofs[i].p_lo << " || p > " << proofs[i].p_hi << ") return -1;\n";
    if (proofs[i].not_applicable.empty()) {
      o << "  return 1;\n}\n\n";
    } else {
      o << "  switch (p) {\n";
      for (int64_t x : proofs[i].not_applicable) o << "    case " << x << ":\n";
      o << "      return 0;  // `requires` is false\n    default:\n      return 1;\n  }\n}\n\n";
    }
    o << "extern \"C\" const char* " << fname(s) << "_requires(int p) {\n";
    o << "  if (p < " << proofs[i].p_lo << " || p > " << proofs[i].p_hi << ") return " << c_string(range_condition(proofs[i]))
      << ";\n";
    requires_switch(o, proofs[i]);
    o << "}\n\n";
  }
  o << "extern \"C\" const char* " << prefix << "last_error(void) { return bine::mpi::error_text(); }\n\n";
  if (options.dispatch) emit_dispatch_definitions(o, *options.dispatch, programs, proofs, prefix);
  o << "#endif  // BINE_IMPLEMENTATION\n";
  return o.str();
}

}  // namespace bine
