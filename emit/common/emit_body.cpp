// The schedule-body emitter shared by every target (docs/architecture.md, "Targets").
#include "emit_body.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "builtins_table.h"
#include "frames.h"

namespace bine {

std::string emitted_function_name(const ScheduleDecl& s, const std::string& prefix) { return prefix + s.name; }

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

namespace {

/// Generated name of a schedule-language fn: its own namespace, so a `let` may share the name.
std::string fn_name(const std::string& n) { return "bine_fn_" + n; }

/// A source name as a C++ identifier: names the generated code or C++ reserves get a '_'.
std::string mangle(const std::string& n) {
  if (reserved_cpp().count(n) || n.rfind("bine_", 0) == 0 || n.rfind("MPI_", 0) == 0) return n + "_";
  return n;
}

class BodyEmitter {
 public:
  BodyEmitter(const RankProgram& rp, const std::string& prefix, const BodyDialect& d) : rp_(rp), sd_(*rp.decl), prefix_(prefix), d_(d) {}

  /// The schedule body, `static int bine_body_<function>(<context>& cx)`: the RankProgram
  /// over the runtime context (emit_schedule_body()).
  std::string body() {
    std::ostringstream o;
    std::ostream* saved = out_;
    out_ = &o;
    const std::string fname = emitted_function_name(sd_, prefix_);
    o << "static int bine_body_" << fname << "(" << d_.context << "& cx) {\n";
    o << "  int rc = " << d_.ok << ";\n";
    o << "  if (cx.finished()) return cx.finish();\n";
    bool reads_regions = false;
    used_top_fns(&reads_regions);
    for (const InlinedUse& u : rp_.uses)
      if (u.group != GroupKind::none) reads_regions = true;  // the groups come from the layout
    if (reads_regions)  // region built-ins: the communicator's layout, bound before the plan lookup (its key)
      o << "  if ((rc = " << d_.bind_regions << "(cx)) != " << d_.ok << ") return rc;\n";
    o << "  // A call of the same shape as an earlier one replays its rounds (persistent plan).\n";
    o << "  static thread_local " << d_.plan_cache << " bine_plans;\n";
    o << "  if ((rc = cx.plan(bine_plans)) != " << d_.ok << ") return rc;\n";
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
    o << ind << "if (B < 1) return cx.fail(" << d_.err_other << ", \"block count %lld is not positive\", (long long)B);\n";
    o << ind << "cx.set_blocks(B);\n";
    o << ind << "const int64_t bine_scratch = " << (rp_.scratch ? expr(*rp_.scratch) : std::string("0")) << ";  // scratch buffers\n";
    o << ind << "(void)bine_scratch;\n";
    if (rp_.fold == FoldKind::ring)  // the ring's R - 1 receive buffers, reused by the body's
      o << ind << "if ((rc = cx.set_scratch(bine_scratch > " << rp_.fold_ring - 1 << " ? bine_scratch : " << rp_.fold_ring - 1
        << ")) != " << d_.ok << ") return rc;  // fold ring " << rp_.fold_ring << "\n";
    else if (rp_.scratch)
      o << ind << "if ((rc = cx.set_scratch(bine_scratch)) != " << d_.ok << ") return rc;\n";
    if (rp_.segment)
      o << ind << "if ((rc = cx.set_segment(" << expr(*rp_.segment) << ")) != " << d_.ok << ") return rc;  // segment (bytes)\n";
    // The requirements of composed schedules (hoisted by lower()), checked here on every
    // rank, before the fold's prologue: a false one must fail everywhere, not strand the
    // ranks that sit out.
    precheck_uses(-1, ind);
    if (rp_.fold != FoldKind::none) {
      o << "  if ((rc = cx.fold_prologue()) != " << d_.ok << ") return rc;\n";
      o << "  if (cx.active()) {\n";
      ind = "    ";
    }
    block(rp_.body, ind);
    if (rp_.fold != FoldKind::none) o << "  }\n";
    o << "  return cx.finish();\n}\n\n";
    out_ = saved;
    return o.str();
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
      << ", &bine_gp, &bine_gr, &bine_groot)) != " << d_.ok << ") return rc;\n";
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
        *out_ << in << "if (B < 1) return cx.fail(" << d_.err_other << ", "
              << c_string("composed schedule " + t.name + " has a block count below 1") << ");\n";
      else if (u.blocks)
        *out_ << in << "if (const int64_t bine_b = " << expr(*u.blocks) << "; bine_b < 1 || B % bine_b != 0) return cx.fail(" << d_.err_other << ", "
              << c_string("composed schedule " + t.name + " has a block count that does not divide this schedule's") << ");\n";
      if (u.scratch)
        *out_ << in << "if ((" << expr(*u.scratch) << ") > bine_scratch) return cx.fail(" << d_.err_other << ", "
              << c_string("composed schedule " + t.name + " needs more scratch buffers") << ");\n";
      if (u.segment)
        *out_ << in << "if ((" << expr(*u.segment) << ") < 0) return cx.fail(" << d_.err_other << ", "
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
    *out_ << ind << "if ((rc = cx.end_round()) != " << d_.ok << ") return rc;\n";
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
      o << ind << "return cx.fail(" << d_.err_other << ", " << c_string("frames: " + err) << ");\n";
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
            << ", /*fold 3-2 epilogue fused with its first round*/ true)) != " << d_.ok << ") return rc;\n";
        else
          o << ind << "if ((rc = cx.mirror(" << s.mirror_of << ")) != " << d_.ok << ") return rc;\n";
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
            << (collective_is_rooted(t.collective) ? "true" : "false") << ")) != " << d_.ok << ") return rc;\n";
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
              << d_.ok << ") return rc;\n";
          }
        }
        if (u.segment) {
          o << in << "const int64_t bine_outer_segment = cx.segment();\n";
          o << in << "if ((rc = cx.set_segment(" << expr(*u.segment) << ")) != " << d_.ok << ") return rc;  // segment of " << t.name
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
  const BodyDialect& d_;      ///< the target's names for the context and status codes
  std::ostream* out_ = nullptr;
  int counter_ = 0;
};

}  // namespace

std::string emit_schedule_body(const RankProgram& rp, const std::string& prefix, const BodyDialect& dialect) {
  return BodyEmitter(rp, prefix, dialect).body();
}

}  // namespace bine
