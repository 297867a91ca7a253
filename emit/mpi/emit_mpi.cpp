#include "emit_mpi.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "builtins_table.h"
#include "frames.h"

namespace bine {

std::string emitted_function_name(const ScheduleDecl& s, const std::string& prefix) { return prefix + s.name; }

namespace {

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

const std::set<std::string>& reserved_cpp() {
  static const std::set<std::string> k = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit",
      "extern", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "try", "typedef",
      "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor",
      "int64_t", "size_t", "bine", "std", "cx", "rc", "B", "sendbuf", "recvbuf", "buffer", "count",
      "datatype", "op", "comm", "main", "sendcount", "recvcount", "sendtype", "recvtype", "root", "MPI_SUCCESS", "NULL", "or_eq", "and_eq", "bitand", "bitor", "compl",
  };
  return k;
}

}  // namespace

bool reserved_identifier(const std::string& name) {
  return reserved_cpp().count(name) > 0 || name.rfind("MPI_", 0) == 0 || name.rfind("PMPI_", 0) == 0;
}

namespace {

/// `text` as a C string literal.
std::string c_string(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') out += '\\', out += ch;
    else if (u < 0x20 || u >= 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
      out += "\"\"";  // ends the hex escape
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// Generated name of a schedule-language fn: its own namespace, so a `let` may share the name.
std::string fn_name(const std::string& n) { return "bine_fn_" + n; }

std::string mangle(const std::string& n) {
  if (reserved_cpp().count(n) || n.rfind("bine_", 0) == 0 || n.rfind("MPI_", 0) == 0) return n + "_";
  return n;
}

class Emitter {
 public:
  Emitter(const RankProgram& rp, const std::string& prefix) : rp_(rp), sd_(*rp.decl), prefix_(prefix) {}

  std::string function(const ProofSummary& proof) {
    std::ostringstream o;
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
    o << body();
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
  /// The schedule body, `static int bine_body_<function>(bine::mpi::Context& cx)`: the
  /// RankProgram over the runtime context, shared by every form of the function and by
  /// the CUDA target (emit_schedule_body()).
  std::string body() {
    std::ostringstream o;
    std::ostream* saved = out_;
    out_ = &o;
    const std::string fname = emitted_function_name(sd_, prefix_);
    o << "static int bine_body_" << fname << "(bine::mpi::Context& cx) {\n";
    o << "  int rc = MPI_SUCCESS;\n";
    o << "  if (cx.finished()) return cx.finish();\n";
    bool reads_regions = false;
    used_top_fns(&reads_regions);
    for (const InlinedUse& u : rp_.uses)
      if (u.group != GroupKind::none) reads_regions = true;  // the groups come from the layout
    if (reads_regions)  // region built-ins: the communicator's layout, bound before the plan lookup (its key)
      o << "  if ((rc = bine::mpi::bind_regions(cx)) != MPI_SUCCESS) return rc;\n";
    o << "  // A call of the same shape as an earlier one replays its rounds (persistent plan).\n";
    o << "  static thread_local bine::mpi::PlanCache bine_plans;\n";
    o << "  if ((rc = cx.plan(bine_plans)) != MPI_SUCCESS) return rc;\n";
    o << "  if (cx.replayed()) return cx.finish();\n";
    std::string ind = "  ";
    if (rp_.fold != FoldKind::none) {
      if (rp_.fold == FoldKind::ring) {
        o << "  // fold ring " << rp_.fold_ring << ": rings of " << rp_.fold_ring
          << " consecutive ranks, reductions postponed (Rabenseifner-Traeff Sec. 3.4); the body on p / "
          << rp_.fold_ring << " ranks, one part of the vector\n";
        o << "  cx.fold_setup_ring(" << rp_.fold_ring << ");\n";
        o << "  if (!cx.fold_applies()) return cx.fail_requires("
          << c_string(fold_ring_condition(rp_.fold_ring))
          << ");\n";
      } else if (rp_.fold == FoldKind::three_two) {
        o << "  // fold 3-2: one 3-2 and pairs of 2-1 elimination steps (Rabenseifner-Traeff Sec. 3.1, 3.3)\n";
        o << "  // fused with the body's first round; p' = 2^floor(log2 p) virtual ranks\n";
        o << "  cx.fold_setup(/*three_two=*/true);\n";
      } else {
        o << "  // fold: two-one elimination to p' = 2^floor(log2 p) virtual ranks\n";
        o << "  cx.fold_setup();\n";
      }
    }
    o << ind << "const int64_t p = cx.p();\n";
    o << ind << "const int64_t r = cx.r();\n";
    o << ind << "const int64_t root_ = cx.root();\n";
    o << ind << "const bool commutative = cx.commutative();\n";
    o << ind << "(void)p; (void)r; (void)root_; (void)commutative;\n";
    // Top-level fns first: params may call them (they cannot see params).
    const std::vector<bool> used = used_top_fns();
    for (size_t i = 0; i < rp_.program->fns.size(); ++i)
      if (used[i]) fn(rp_.program->fns[i], ind);
    for (const Binding& b : rp_.params)
      o << ind << "const int64_t " << mangle(b.name) << " = " << expr(*b.value) << ";  // params\n";
    for (int i = 0; i < rp_.top_fn_count; ++i) fn(rp_.fns[size_t(i)], ind);
    if (const Stmt* fr = find_frames(rp_.body))  // the frames fix p (compiler/ir/frames.h)
      o << ind << "if (p != " << fr->frames->nodes << ") return cx.fail_requires(" << c_string(frames_condition(*fr->frames))
        << ");\n";
    for (const ExprPtr& e : rp_.requires_)
      o << ind << "if (!(" << expr(*e) << ")) return cx." << (reads_root(*e) ? "fail_requires_root(" : "fail_requires(")
        << c_string(e->span.text()) << ");\n";
    o << ind << "const int64_t B = " << (rp_.blocks ? expr(*rp_.blocks) : std::string("p")) << ";  // blocks\n";
    o << ind << "if (B < 1) return cx.fail(MPI_ERR_OTHER, \"block count %lld is not positive\", (long long)B);\n";
    o << ind << "cx.set_blocks(B);\n";
    o << ind << "const int64_t bine_scratch = " << (rp_.scratch ? expr(*rp_.scratch) : std::string("0")) << ";  // scratch buffers\n";
    o << ind << "(void)bine_scratch;\n";
    if (rp_.fold == FoldKind::ring)  // the ring's R - 1 receive buffers, reused by the body's
      o << ind << "if ((rc = cx.set_scratch(bine_scratch > " << rp_.fold_ring - 1 << " ? bine_scratch : " << rp_.fold_ring - 1
        << ")) != MPI_SUCCESS) return rc;  // fold ring " << rp_.fold_ring << "\n";
    else if (rp_.scratch)
      o << ind << "if ((rc = cx.set_scratch(bine_scratch)) != MPI_SUCCESS) return rc;\n";
    if (rp_.segment)
      o << ind << "if ((rc = cx.set_segment(" << expr(*rp_.segment) << ")) != MPI_SUCCESS) return rc;  // segment (bytes)\n";
    // The requirements of composed schedules (hoisted by lower()), checked here on every
    // rank, before the fold's prologue: a false one must fail everywhere, not strand the
    // ranks that sit out.
    precheck_uses(-1, ind);
    if (rp_.fold != FoldKind::none) {
      o << "  if ((rc = cx.fold_prologue()) != MPI_SUCCESS) return rc;\n";
      o << "  if (cx.active()) {\n";
      ind = "    ";
    }
    block(rp_.body, ind);
    if (rp_.fold != FoldKind::none) o << "  }\n";
    o << "  return cx.finish();\n}\n\n";
    out_ = saved;
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
  /// The params of an inlined use, bound as lower() bound them: the caller's values into
  /// temporaries first (evaluated in the caller's scope, before the used schedule's names
  /// shadow it), then every param of the used schedule.
  void use_params(const InlinedUse& u, const std::string& in) { use_bindings(u, in, use_overrides(u, in)); }
  /// The caller's values of an inlined use's params, into temporaries (the caller's scope).
  std::vector<std::string> use_overrides(const InlinedUse& u, const std::string& in) {
    std::vector<std::string> value(u.params.size());
    int given = 0;
    for (size_t k = 0; k < u.params.size(); ++k) {
      if (!u.params[k].overridden) continue;
      value[k] = "bine_set_" + std::to_string(given++);
      *out_ << in << "const int64_t " << value[k] << " = " << expr(*u.params[k].value) << ";  // " << u.schedule->name
            << "(" << u.params[k].name << " = ...)\n";
    }
    return value;
  }
  /// Every param of an inlined use (the used schedule's scope), overridden ones from `value`.
  void use_bindings(const InlinedUse& u, const std::string& in, const std::vector<std::string>& value) {
    for (size_t k = 0; k < u.params.size(); ++k) {
      const Binding& b = u.params[k];
      *out_ << in << "const int64_t " << mangle(b.name) << " = " << (b.overridden ? value[k] : expr(*b.value))
            << ";  // params\n";
      *out_ << in << "(void)" << mangle(b.name) << ";\n";
    }
  }
  void use_fns(const InlinedUse& u, const std::string& in) {
    for (int i = u.fn_base; i < u.fn_base + u.fn_count; ++i) fn(rp_.fns[size_t(i)], in);
  }
  /// Opens the scope of a use on a sub-group inside the C++ block at `ind`: the group's size
  /// and index, the caller's parameter values, then a nested block where p, r (and the
  /// top-level fns, which may read them) are the group's, the params bound and `B` the used
  /// schedule's block count. Returns the nested block's indentation; the caller closes it.
  std::string open_group_scope(const InlinedUse& u, const std::string& ind) {
    std::ostream& o = *out_;
    const std::string kind = std::string("bine::GroupKind::") + group_kind_name(u.group);
    const bool rooted = collective_is_rooted(u.schedule->collective);
    o << ind << "int64_t bine_gp = 0, bine_gr = 0, bine_groot = 0;  // the group's size, this rank's index, the group's root\n";
    o << ind << "if ((rc = cx.group_of(" << kind << ", /*rooted=*/" << (rooted ? "true" : "false")
      << ", &bine_gp, &bine_gr, &bine_groot)) != MPI_SUCCESS) return rc;\n";
    const std::vector<std::string> given = use_overrides(u, ind);
    o << ind << "{  // on " << group_kind_name(u.group) << ": p, r and root are the group's\n";
    const std::string in = ind + "  ";
    o << in << "const int64_t p = bine_gp;\n" << in << "const int64_t r = bine_gr;\n" << in << "const int64_t root_ = bine_groot;\n"
      << in << "(void)p; (void)r; (void)root_;\n";
    const std::vector<bool> used = used_top_fns();
    for (size_t i = 0; i < rp_.program->fns.size(); ++i)
      if (used[i]) fn(rp_.program->fns[i], in);
    use_bindings(u, in, given);
    use_fns(u, in);
    o << in << "const int64_t B = " << (u.blocks ? expr(*u.blocks) : std::string("p")) << ";  // the blocks of " << u.schedule->name
      << "\n";
    return in;
  }
  /// The hoisted requirements, block, scratch and segment checks of the uses inlined in
  /// `parent` (-1: the top schedule), each in a C++ block of its own, nested so that a use
  /// inside a used schedule sees that schedule's params.
  void precheck_uses(int parent, const std::string& ind) {
    for (size_t k = 0; k < rp_.uses.size(); ++k) {
      const InlinedUse& u = rp_.uses[k];
      if (u.parent != parent) continue;
      const ScheduleDecl& t = *u.schedule;
      *out_ << ind << "{  // requires of composed schedule " << t.name << " (phase " << u.site->name << ")\n";
      std::string in = ind + "  ";
      const bool grouped = u.group != GroupKind::none;
      if (grouped) {
        in = open_group_scope(u, in);
      } else {
        use_params(u, in);
        use_fns(u, in);
      }
      const std::string of = " (of composed schedule " + t.name + ")";
      for (const ExprPtr& e : u.requires_)
        *out_ << in << "if (!(" << expr(*e) << ")) return cx.fail_requires(" << c_string(e->span.text() + of) << ");\n";
      if (grouped)
        *out_ << in << "if (B < 1) return cx.fail(MPI_ERR_OTHER, "
              << c_string("composed schedule " + t.name + " has a block count below 1") << ");\n";
      else if (u.blocks)
        *out_ << in << "if (const int64_t bine_b = " << expr(*u.blocks) << "; bine_b < 1 || B % bine_b != 0) return cx.fail(MPI_ERR_OTHER, "
              << c_string("composed schedule " + t.name + " has a block count that does not divide this schedule's") << ");\n";
      if (u.scratch)
        *out_ << in << "if ((" << expr(*u.scratch) << ") > bine_scratch) return cx.fail(MPI_ERR_OTHER, "
              << c_string("composed schedule " + t.name + " needs more scratch buffers") << ");\n";
      if (u.segment)
        *out_ << in << "if ((" << expr(*u.segment) << ") < 0) return cx.fail(MPI_ERR_OTHER, "
              << c_string("composed schedule " + t.name + " has a negative segment size") << ");\n";
      precheck_uses(int(k), in);
      if (grouped) *out_ << ind << "  }\n";
      *out_ << ind << "}\n";
    }
  }
  /// Every expression of a block, nested statements (and inlined bodies) included.
  static void exprs_of(const Block& b, std::vector<const Expr*>& out) {
    for (const StmtPtr& st : b) {
      for (const Expr* e : {st->a.get(), st->b.get(), st->c.get()})
        if (e) out.push_back(e);
      exprs_of(st->body, out);
      exprs_of(st->else_body, out);
    }
  }
  /// Top-level fns the program calls, directly, through local fns, through inlined uses, or
  /// through other fns (only those are emitted).
  std::vector<bool> used_top_fns(bool* reads_regions = nullptr) const {
    const std::vector<FnDecl>& top = rp_.program->fns;
    std::vector<bool> used(top.size(), false);
    std::vector<const Expr*> work;
    auto bindings = [&](const std::vector<Binding>& bs) {
      for (const Binding& b : bs) work.push_back(b.value.get());
    };
    bindings(rp_.params);
    for (const ExprPtr& e : rp_.requires_) work.push_back(e.get());
    for (const Expr* e : {rp_.blocks.get(), rp_.scratch.get(), rp_.segment.get()}) work.push_back(e);
    for (const InlinedUse& u : rp_.uses) {
      bindings(u.params);
      for (const ExprPtr& e : u.requires_) work.push_back(e.get());
      for (const Expr* e : {u.blocks.get(), u.scratch.get(), u.segment.get()}) work.push_back(e);
    }
    for (const FnDecl& f : rp_.fns) {
      work.push_back(f.body.get());
      exprs_of(f.stmts, work);
    }
    exprs_of(rp_.body, work);
    while (!work.empty()) {
      const Expr* e = work.back();
      work.pop_back();
      if (!e) continue;
      if (reads_regions && e->kind == ExprKind::call && builtin_reads_regions(e->builtin)) *reads_regions = true;
      if (e->kind == ExprKind::call && e->builtin < 0 && e->fn <= -2 && !used[size_t(-2 - e->fn)]) {
        used[size_t(-2 - e->fn)] = true;
        work.push_back(top[size_t(-2 - e->fn)].body.get());
        exprs_of(top[size_t(-2 - e->fn)].stmts, work);
      }
      for (const ExprPtr& k : e->kids) work.push_back(k.get());
    }
    return used;
  }
  void fn(const FnDecl& f, const std::string& ind) {
    // A parameter the fn never reads gets [[maybe_unused]]: the header compiles under
    // -Wall -Wextra -Werror whatever the schedule's fns look like.
    std::vector<bool> read(f.params.size(), false);
    std::vector<const Expr*> work{f.body.get()};
    exprs_of(f.stmts, work);
    while (!work.empty()) {
      const Expr* e = work.back();
      work.pop_back();
      if (!e) continue;
      if (e->kind == ExprKind::name && e->ref == NameKind::fn_param && e->slot >= 0 && size_t(e->slot) < read.size())
        read[size_t(e->slot)] = true;
      for (const ExprPtr& k : e->kids) work.push_back(k.get());
    }
    std::string params;
    for (size_t i = 0; i < f.params.size(); ++i)
      params += (i ? ", " : "") + std::string(read[i] ? "" : "[[maybe_unused]] ") + "int64_t " + mangle(f.params[i]);
    const char* result = f.result == Type::boolean ? "bool" : "int64_t";
    if (f.stmts.empty()) {
      *out_ << ind << "const auto " << fn_name(f.name) << " = [&](" << params << ") -> " << result << " { return "
            << expr(*f.body) << "; };\n";
    } else {
      *out_ << ind << "const auto " << fn_name(f.name) << " = [&](" << params << ") -> " << result << " {\n";
      block(f.stmts, ind + "  ");
      *out_ << ind << "  return " << expr(*f.body) << ";\n" << ind << "};\n";
    }
    *out_ << ind << "(void)" << fn_name(f.name) << ";\n";
  }
  void block(const Block& b, const std::string& ind) {
    for (const StmtPtr& s : b) stmt(*s, ind);
  }
  void end_round(const std::string& ind) {
    *out_ << ind << "if ((rc = cx.end_round()) != MPI_SUCCESS) return rc;\n";
  }
  void stmt(const Stmt& s, const std::string& ind) {
    std::ostream& o = *out_;
    if (s.round) {
      o << ind << "{  // round (line " << s.span.line << ")\n";
      o << ind << "  cx.begin_round();\n";
      stmt_inner(s, ind + "  ");
      end_round(ind + "  ");
      o << ind << "}\n";
      return;
    }
    stmt_inner(s, ind);
  }
  /// Whether `e` reads the root (a clause that excludes roots, not only p).
  static bool reads_root(const Expr& e) {
    if (e.kind == ExprKind::name && e.ref == NameKind::root) return true;
    for (const ExprPtr& k : e.kids)
      if (reads_root(*k)) return true;
    return false;
  }
  /// A `frames` statement: its table (built here, as the verifier's instances read it:
  /// compiler/ir/frames.h) as static arrays, and one round per step reading it through
  /// bine::frames_op (bine/frames.hpp). Storage O(P * F + runs), not O(steps).
  void frames(const Stmt& s, const std::string& ind) {
    std::ostream& o = *out_;
    const FramesData& f = *s.frames;
    const int64_t N = rp_.blocks && rp_.blocks->kind == ExprKind::integer ? rp_.blocks->value : 0;
    FramesTableData tab;
    std::string err;
    if (N < 1 || !build_frames_table(f, N, tab, err)) {
      if (err.empty()) err = "the frames need 'blocks N' with an integer literal N";
      o << ind << "return cx.fail(MPI_ERR_OTHER, " << c_string("frames: " + err) << ");\n";
      return;
    }
    const size_t bytes = 4 * (tab.slot.size() + tab.entry.size() + tab.run.size());
    o << ind << "{  // frames (line " << s.span.line << "): " << f.nodes << " nodes, root node " << f.root << ", " << f.frames.size()
      << " frames, packet " << packet_rule_name(f.rule) << "; N = " << N << " packets, T = " << tab.steps << " steps\n";
    o << ind << "  // table: " << tab.entry.size() / 4 << " entries, " << tab.run.size() / 4 << " runs, " << bytes
      << " bytes; rank r plays node (r - root + " << f.root << ") mod " << f.nodes << "\n";
    auto array = [&](const char* name, const std::vector<int32_t>& v) {
      o << ind << "  static const int32_t " << name << "[] = {";
      std::string line;
      const std::string lead = ind + "      ";
      if (v.empty()) line = "0";
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string item = std::to_string(v[i]) + (i + 1 < v.size() ? "," : "");
        if (line.size() + item.size() + 1 > 96) {
          o << "\n" << lead << line;
          line.clear();
        }
        line += (line.empty() ? "" : " ") + item;
      }
      o << "\n" << lead << line << "};\n";
    };
    array("bine_frames_slot", tab.slot);
    array("bine_frames_entry", tab.entry);
    array("bine_frames_run", tab.run);
    o << ind << "  const bine::FramesTable bine_tab{" << tab.nodes << ", " << tab.frames << ", " << tab.steps
      << ", bine_frames_slot, bine_frames_entry, bine_frames_run};\n";
    o << ind << "  const int64_t bine_node = bine::mod(bine::add(bine::sub(r, root_), " << f.root << "), " << f.nodes << ");\n";
    o << ind << "  bine::FramesOp bine_op;\n";
    o << ind << "  for (int64_t bine_t = 0; bine_t < bine_tab.steps; ++bine_t) {  // one round per step\n";
    o << ind << "    cx.begin_round();\n";
    o << ind << "    if (bine::frames_op(bine_tab, bine_node, bine_t, bine_op)) {\n";
    o << ind << "      const int64_t bine_peer = bine::mod(bine::add(bine::sub(bine_op.peer, " << f.root << "), root_), " << f.nodes
      << ");\n";
    o << ind << "      if (bine_op.send) cx.send(bine::BlockSet::block(bine_op.packet, B), bine_peer);\n";
    o << ind << "      else cx.recv(bine::BlockSet::block(bine_op.packet, B), bine_peer, /*reduce=*/false);\n";
    o << ind << "    }\n";
    end_round(ind + "    ");
    o << ind << "  }\n";
    o << ind << "}\n";
  }
  static const char* ctype(Type t) {
    return t == Type::set ? "bine::BlockSet" : t == Type::boolean ? "bool" : "int64_t";
  }
  void stmt_inner(const Stmt& s, const std::string& ind) {
    std::ostream& o = *out_;
    switch (s.kind) {
      case StmtKind::let:
        o << ind << "const " << ctype(s.a->type) << " " << mangle(s.name) << " = " << expr(*s.a) << ";\n";
        o << ind << "(void)" << mangle(s.name) << ";\n";
        return;
      case StmtKind::var:
        o << ind << ctype(s.a->type) << " " << mangle(s.name) << " = " << expr(*s.a) << ";\n";
        return;
      case StmtKind::assign:
        o << ind << mangle(s.name) << " = " << expr(*s.a) << ";\n";
        return;
      case StmtKind::for_: {
        const std::string end = "bine_end" + std::to_string(++counter_);
        const std::string v = mangle(s.name);
        o << ind << "for (int64_t " << v << " = " << expr(*s.a) << ", " << end << " = " << expr(*s.b) << "; "
          << v << " < " << end << "; ++" << v << ") {";
        o << (s.round_loop ? "  // one round per iteration\n" : "\n");
        if (s.round_loop) o << ind << "  cx.begin_round();\n";
        block(s.body, ind + "  ");
        if (s.round_loop) end_round(ind + "  ");
        o << ind << "}\n";
        return;
      }
      case StmtKind::if_: {
        o << ind << "if (" << condition(*s.a) << ") {\n";
        block(s.body, ind + "  ");
        if (!s.else_body.empty()) {
          o << ind << "} else {\n";
          block(s.else_body, ind + "  ");
        }
        o << ind << "}\n";
        return;
      }
      case StmtKind::send:
        o << ind << "cx.send(" << expr(*s.a) << ", " << expr(*s.b) << ");\n";
        return;
      case StmtKind::recv:
        o << ind << "cx.recv(" << expr(*s.a) << ", " << expr(*s.b) << ", /*reduce=*/" << (s.reduce ? "true" : "false") << ");\n";
        return;
      case StmtKind::exchange: {
        o << ind << "{\n" << ind << "  const int64_t bine_peer = " << expr(*s.c) << ";\n";
        o << ind << "  cx.send(" << expr(*s.a) << ", bine_peer);\n";
        o << ind << "  cx.recv(" << expr(*s.b) << ", bine_peer, /*reduce=*/" << (s.reduce ? "true" : "false") << ");\n";
        o << ind << "}\n";
        return;
      }
      case StmtKind::phase:
        o << ind << "// phase " << s.name << "\n";
        o << ind << "cx.begin_phase(" << s.phase_id << ");\n";
        o << ind << "{\n";
        block(s.body, ind + "  ");
        o << ind << "}\n";
        o << ind << "cx.end_phase(" << s.phase_id << ");\n";
        return;
      case StmtKind::mirror:
        o << ind << "// phase " << s.name << " = mirror(" << s.other << "): rounds reversed, sends <-> receives\n";
        if (rp_.fold == FoldKind::three_two && s.at_end)
          o << ind << "if ((rc = cx.mirror(" << s.mirror_of
            << ", /*fold 3-2 epilogue fused with its first round*/ true)) != MPI_SUCCESS) return rc;\n";
        else
          o << ind << "if ((rc = cx.mirror(" << s.mirror_of << ")) != MPI_SUCCESS) return rc;\n";
        return;
      case StmtKind::round_block:
        o << ind << "{\n";
        block(s.body, ind + "  ");
        o << ind << "}\n";
        return;
      case StmtKind::frames:
        frames(s, ind);
        return;
      case StmtKind::local:
        o << ind << "cx.local(" << expr(*s.a) << ", " << expr(*s.b) << ", /*reduce=*/" << (s.reduce ? "true" : "false") << ");\n";
        return;
      case StmtKind::permute:
        o << ind << "cx.permute([&](int64_t " << mangle(s.name) << ") -> int64_t { return " << expr(*s.a) << "; });\n";
        return;
      case StmtKind::use: {
        // Composition, inlined by lower(): the used schedule's body in its own scope (its
        // fold is not applied; its requires and block count were checked up front).
        const InlinedUse& u = rp_.uses[size_t(s.use)];
        const ScheduleDecl& t = *u.schedule;
        o << ind << "// phase " << s.name << " = " << t.name << " (" << t.name_span.file->name << ":" << t.name_span.line
          << ")" << (u.group != GroupKind::none ? std::string(" on ") + group_kind_name(u.group) : std::string()) << ", inlined\n";
        o << ind << "cx.begin_phase(" << s.phase_id << ");\n";
        o << ind << "{\n";
        std::string in = ind + "  ";
        if (u.group != GroupKind::none) {
          o << in << "const bine::BlockSet bine_window = " << (s.a ? expr(*s.a) : std::string("bine::BlockSet::all(B)"))
            << ";  // in the caller's blocks\n";
          in = open_group_scope(u, in);
          o << in << "if ((rc = cx.begin_group(bine::GroupKind::" << group_kind_name(u.group) << ", bine_window, B, /*rooted=*/"
            << (collective_is_rooted(t.collective) ? "true" : "false") << ")) != MPI_SUCCESS) return rc;\n";
        } else {
          use_params(u, in);
          use_fns(u, in);
          if (u.blocks) {
            // Its own block count: fewer than the caller's are rescaled (GroupKind::whole: each of
            // its blocks B / b consecutive caller blocks; the same count maps nothing).
            o << in << "const int64_t bine_inner_B = " << expr(*u.blocks) << ", bine_outer_B = B;  // the blocks of " << t.name
              << ", the caller's\n";
            o << in << "{\n";
            in += "  ";
            o << in << "const int64_t B = bine_inner_B;\n" << in << "(void)B;\n";
            o << in << "if ((rc = cx.begin_group(bine::GroupKind::whole, bine::BlockSet::all(bine_outer_B), B, /*rooted=*/false)) != "
                       "MPI_SUCCESS) return rc;\n";
          }
        }
        if (u.segment) {
          o << in << "const int64_t bine_outer_segment = cx.segment();\n";
          o << in << "if ((rc = cx.set_segment(" << expr(*u.segment) << ")) != MPI_SUCCESS) return rc;  // segment of " << t.name
            << "\n";
        }
        block(s.body, in);
        if (u.segment) o << in << "cx.set_segment(bine_outer_segment);\n";
        if (u.group != GroupKind::none || u.blocks) o << in << "cx.end_group();\n" << ind << "  }\n";
        o << ind << "}\n";
        o << ind << "cx.end_phase(" << s.phase_id << ");\n";
        return;
      }
    }
  }

  /// An `if` condition: a comparison without the parentheses expr() puts around every
  /// binary expression (clang's -Wparentheses-equality warns on `if ((a == b))`).
  std::string condition(const Expr& e) {
    std::string c = expr(e);
    if (e.kind == ExprKind::binary && e.kids[0]->type != Type::set && c.size() > 2 && c.front() == '(' && c.back() == ')')
      c = c.substr(1, c.size() - 2);
    return c;
  }
  std::string expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::integer: return std::to_string(e.value);
      case ExprKind::boolean: return e.value ? "true" : "false";
      case ExprKind::name:
        switch (e.ref) {
          case NameKind::p: return "p";
          case NameKind::r: return "r";
          case NameKind::root: return "root_";
          case NameKind::commutative: return "commutative";
          case NameKind::fn_param: return mangle(e.name);  // a parameter or a local of a fn body
          default: return mangle(e.name);
        }
      case ExprKind::unary:
        if (e.op == Tok::minus) return "bine::neg(" + expr(*e.kids[0]) + ")";
        return std::string("(") + op_spelling(e.op) + expr(*e.kids[0]) + ")";
      case ExprKind::binary: {
        const std::string a = expr(*e.kids[0]), b = expr(*e.kids[1]);
        if (e.kids[0]->type == Type::integer) {
          switch (e.op) {
            case Tok::slash: return "bine::div(" + a + ", " + b + ")";
            case Tok::percent: return "bine::rem(" + a + ", " + b + ")";
            case Tok::shl: return "bine::shl(" + a + ", " + b + ")";
            case Tok::shr: return "bine::shr(" + a + ", " + b + ")";
            // wrapping 64-bit arithmetic, as in the compiler's interpreter (no signed overflow)
            case Tok::plus: return "bine::add(" + a + ", " + b + ")";
            case Tok::minus: return "bine::sub(" + a + ", " + b + ")";
            case Tok::star: return "bine::mul(" + a + ", " + b + ")";
            default: break;
          }
        }
        return "(" + a + " " + op_spelling(e.op) + " " + b + ")";
      }
      case ExprKind::ternary:
        return "(" + expr(*e.kids[0]) + " ? " + expr(*e.kids[1]) + " : " + expr(*e.kids[2]) + ")";
      case ExprKind::call: {
        std::string args;
        for (size_t i = 0; i < e.kids.size(); ++i) args += (i ? ", " : "") + expr(*e.kids[i]);
        if (e.builtin >= 0) return std::string(builtin_fns()[size_t(e.builtin)].cpp) + "(" + args + ")";
        return fn_name(e.name) + "(" + args + ")";
      }
      case ExprKind::set_all: return "bine::BlockSet::all(B)";
      case ExprKind::set_none: return "bine::BlockSet()";
      case ExprKind::set_block: return "bine::BlockSet::block(" + expr(*e.kids[0]) + ", B)";
      case ExprKind::set_range: return "bine::BlockSet::range(" + expr(*e.kids[0]) + ", " + expr(*e.kids[1]) + ", B)";
      case ExprKind::set_wrap: return "bine::BlockSet::wrap(" + expr(*e.kids[0]) + ", " + expr(*e.kids[1]) + ", B)";
      case ExprKind::set_stride:
        return "bine::BlockSet::stride(" + expr(*e.kids[0]) + ", " + expr(*e.kids[1]) + ", " + expr(*e.kids[2]) + ", B)";
      case ExprKind::set_filter: {
        const std::string v = mangle(e.name);
        return "[&]() { const bine::BlockSet bine_dom = " + expr(*e.kids[0]) +
               "; bine::BlockSet bine_out; for (const auto& bine_rg : bine_dom.ranges()) for (int64_t " + v +
               " = bine_rg.first; " + v + " < bine_rg.second; ++" + v + ") if (" + expr(*e.kids[1]) +
               ") bine_out.push_back_block(" + v + "); return bine_out; }()";
      }
    }
    return "0";
  }

  const RankProgram& rp_;
  const ScheduleDecl& sd_;    ///< the top schedule (its name, collective and source location)
  const std::string prefix_;  ///< EmitOptions::prefix
  std::ostream* out_ = nullptr;
  int counter_ = 0;
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

std::string emit_schedule_body(const RankProgram& rp, const std::string& prefix) { return Emitter(rp, prefix).body(); }

std::string emit_mpi_header(const std::vector<const RankProgram*>& programs, const std::vector<ProofSummary>& proofs,
                            const EmitOptions& options) {
  std::vector<const ScheduleDecl*> schedules;
  for (const RankProgram* rp : programs) schedules.push_back(rp->decl);
  const std::string& prefix = options.prefix;
  std::string macro_prefix = prefix;
  for (char& ch : macro_prefix) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  auto fname = [&](const ScheduleDecl& s) { return emitted_function_name(s, prefix); };
  std::ostringstream o;
  o << "// Generated by bine-cc (target mpi). Do not edit: change the .bine source and regenerate.\n//\n";
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
  o << "#if defined(__cplusplus) && defined(BINE_IMPLEMENTATION)\n#include <cstdint>\n#include <new>\n\n#include \"bine/mpi_runtime.hpp\"\n\n";
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
    o << Emitter(*programs[i], prefix).function(proofs[i]) << "\n";
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
