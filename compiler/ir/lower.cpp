// Lowering the Program IR of one schedule to its RankProgram: one copy of the tree with
// composition inlined into one frame (docs/architecture.md, "The lowered program").
#include "lower.h"

#include <ostream>

#include "builtins_table.h"

namespace bine {
namespace {

/// Where a schedule's own numbering lands in the RankProgram.
struct Scope {
  int slot_base = 0;
  int phase_base = 0;
  int fn_base = 0;
};

ExprPtr copy(const Expr* e, const Scope& sc) {
  if (!e) return nullptr;
  auto c = std::make_unique<Expr>();
  c->kind = e->kind;
  c->span = e->span;
  c->type = e->type;
  c->value = e->value;
  c->name = e->name;
  c->op = e->op;
  c->ref = e->ref;
  c->slot = e->slot;
  // A schedule slot (a name, or a comprehension's variable) moves with its scope; a fn
  // parameter or fn-body local indexes the fn's own frame.
  if ((e->ref == NameKind::slot || e->kind == ExprKind::set_filter) && e->slot >= 0) c->slot += sc.slot_base;
  c->builtin = e->builtin;
  c->fn = e->fn >= 0 ? e->fn + sc.fn_base : e->fn;
  c->kids.reserve(e->kids.size());
  for (const ExprPtr& k : e->kids) c->kids.push_back(copy(k.get(), sc));
  return c;
}

class Lowering {
 public:
  Lowering(const Program& prog, RankProgram& rp, DiagnosticSink& diags) : prog_(prog), rp_(rp), diags_(diags) {}

  bool run(const ScheduleDecl& sd) {
    rp_.program = &prog_;
    rp_.decl = &sd;
    rp_.name = sd.name;
    rp_.collective = sd.collective;
    rp_.fold = sd.fold;
    rp_.fold_ring = sd.fold == FoldKind::ring ? sd.fold_ring : 0;
    rp_.fold_span = sd.fold_span;
    const Scope top = open_scope(sd, "");
    rp_.top_fn_count = int(rp_.fns.size());
    for (const Param& pr : sd.params) rp_.params.push_back(bind(pr, top, nullptr));
    for (const ExprPtr& e : sd.requires_) rp_.requires_.push_back(copy(e.get(), top));
    rp_.blocks = copy(sd.blocks.get(), top);
    rp_.scratch = copy(sd.scratch.get(), top);
    rp_.segment = copy(sd.segment.get(), top);
    rp_.body = block(sd.body, top, /*at_end=*/true, -1, "");
    return !failed_;
  }

 private:
  /// Gives schedule `s` its slots, phase ids and local fns in the RankProgram.
  Scope open_scope(const ScheduleDecl& s, const std::string& path) {
    Scope sc{rp_.num_slots, rp_.num_phases, int(rp_.fns.size())};
    rp_.num_slots += s.num_slots;
    for (const std::string& n : s.slot_names) rp_.slot_names.push_back(path.empty() ? n : path + "." + n);
    rp_.num_phases += s.num_phases;
    for (const FnDecl& f : s.fns) {
      FnDecl c;
      c.name = f.name;
      c.span = f.span;
      c.name_span = f.name_span;
      c.params = f.params;
      c.param_spans = f.param_spans;
      c.body = copy(f.body.get(), sc);
      c.stmts = block(f.stmts, sc, false, -1, path);
      c.frame_size = f.frame_size;
      c.result = f.result;
      rp_.fns.push_back(std::move(c));
    }
    return sc;
  }
  Binding bind(const Param& pr, const Scope& sc, const Stmt::Override* given, const Scope* caller = nullptr) {
    Binding b;
    b.name = pr.name;
    b.span = pr.span;
    b.slot = pr.slot + sc.slot_base;
    b.overridden = given != nullptr;
    b.value = given ? copy(given->value.get(), *caller) : copy(pr.init.get(), sc);
    return b;
  }
  Block block(const Block& b, const Scope& sc, bool at_end, int use, const std::string& path) {
    Block out;
    out.reserve(b.size());
    for (size_t i = 0; i < b.size(); ++i) out.push_back(stmt(*b[i], sc, at_end && i + 1 == b.size(), use, path));
    return out;
  }
  StmtPtr stmt(const Stmt& s, const Scope& sc, bool at_end, int use, const std::string& path) {
    auto c = std::make_unique<Stmt>();
    c->kind = s.kind;
    c->span = s.span;
    c->name = s.name;
    c->other = s.other;
    c->name_span = s.name_span;
    c->a = copy(s.a.get(), sc);
    c->b = copy(s.b.get(), sc);
    c->c = copy(s.c.get(), sc);
    c->reduce = s.reduce;
    c->reduce_span = s.reduce_span;
    c->slot = s.slot >= 0 && !s.in_fn ? s.slot + sc.slot_base : s.slot;
    c->communicates = s.communicates;
    c->round = s.round;
    c->round_loop = s.round_loop;
    c->round_level_if = s.round_level_if;
    c->phase_id = s.phase_id >= 0 ? s.phase_id + sc.phase_base : -1;
    c->mirror_of = s.mirror_of >= 0 ? s.mirror_of + sc.phase_base : -1;
    if (s.kind == StmtKind::mirror) rp_.has_mirror = true;
    c->target = s.target;
    c->group = s.group;
    c->group_span = s.group_span;
    for (const Stmt::Override& ov : s.overrides)
      c->overrides.push_back(Stmt::Override{ov.name, ov.span, copy(ov.value.get(), sc), ov.param});
    c->in_fn = s.in_fn;
    c->frames = s.frames;
    c->at_end = at_end;
    c->body = block(s.body, sc, false, use, path);
    c->else_body = block(s.else_body, sc, false, use, path);
    if (s.kind == StmtKind::use && s.target >= 0) inline_use(s, *c, sc, at_end, use, path);
    return c;
  }
  /// `phase NAME = SCHEDULE(...)`: the used schedule gets a scope of its own, its params are
  /// bound (the caller's overrides evaluated in the caller's scope), its checks hoisted, and
  /// its body becomes the lowered statement's body.
  void inline_use(const Stmt& s, Stmt& c, const Scope& caller, bool at_end, int parent, const std::string& path) {
    if (rp_.uses.size() >= kMaxInlinedUses) {
      if (!failed_)
        diags_.error(s.c ? s.c->span : s.span, "schedule '" + rp_.name + "' inlines more than " +
                                                   std::to_string(kMaxInlinedUses) +
                                                   " composed schedules (phase NAME = SCHEDULE, through every level)");
      failed_ = true;
      return;
    }
    const ScheduleDecl& t = prog_.schedules[size_t(s.target)];
    for (const StmtPtr& st : t.body)
      if (st->kind == StmtKind::frames) {
        if (!failed_)
          diags_.error(s.c ? s.c->span : s.span, "schedule '" + t.name +
                                                     "' is a 'frames' schedule, which cannot be composed (its frames fix p and the whole body)");
        failed_ = true;
        return;
      }
    if (s.group != GroupKind::none)
      for (int q = parent; q >= 0; q = rp_.uses[size_t(q)].parent)
        if (rp_.uses[size_t(q)].group != GroupKind::none) {
          if (!failed_)
            diags_.error(s.group_span, "phase '" + s.name + "' runs on a sub-group inside phase '" + rp_.uses[size_t(q)].path +
                                           "', which runs on one already; sub-groups do not nest");
          failed_ = true;
          return;
        }
    const int k = int(rp_.uses.size());
    const std::string sub = path.empty() ? s.name : path + "." + s.name;
    rp_.uses.emplace_back();
    const Scope sc = open_scope(t, sub);
    InlinedUse u;
    u.schedule = &t;
    u.site = &c;
    u.parent = parent;
    u.group = s.group;
    u.path = sub;
    u.slot_base = sc.slot_base;
    u.phase_base = sc.phase_base;
    u.fn_base = sc.fn_base;
    u.fn_count = int(t.fns.size());
    for (size_t i = 0; i < t.params.size(); ++i) {
      const Stmt::Override* given = nullptr;
      for (const Stmt::Override& ov : s.overrides)
        if (ov.param == int(i)) given = &ov;
      u.params.push_back(bind(t.params[i], sc, given, &caller));
    }
    for (const ExprPtr& e : t.requires_) u.requires_.push_back(copy(e.get(), sc));
    u.blocks = copy(t.blocks.get(), sc);
    u.scratch = copy(t.scratch.get(), sc);
    u.segment = copy(t.segment.get(), sc);
    rp_.uses[size_t(k)] = std::move(u);
    c.use = k;
    c.body = block(t.body, sc, at_end, k, sub);
  }

  const Program& prog_;
  RankProgram& rp_;
  DiagnosticSink& diags_;
  bool failed_ = false;
};

// ---- the text form ----

class Printer {
 public:
  Printer(const RankProgram& rp, std::ostream& os) : rp_(rp), os_(os) {}

  void print() {
    const ScheduleDecl& d = *rp_.decl;
    os_ << "rank program " << rp_.name << " implements " << collective_name(rp_.collective) << "  // "
        << d.name_span.file->name << ":" << d.name_span.line << "\n";
    os_ << "  fold " << fold_text() << "\n";
    os_ << "  frame " << rp_.num_slots << " slots, " << rp_.num_phases << " phases, " << rp_.fns.size() << " local fns, "
        << rp_.uses.size() << " inlined uses\n";
    for (size_t i = 0; i < rp_.fns.size(); ++i) fn(i);
    for (const Binding& b : rp_.params) binding(b, "  ");
    for (const ExprPtr& e : rp_.requires_) os_ << "  requires " << expr(*e) << "\n";
    os_ << "  blocks " << (rp_.blocks ? expr(*rp_.blocks) : std::string("p")) << "\n";
    if (rp_.scratch) os_ << "  scratch " << expr(*rp_.scratch) << "\n";
    if (rp_.segment) os_ << "  segment " << expr(*rp_.segment) << "\n";
    for (size_t k = 0; k < rp_.uses.size(); ++k) {
      const InlinedUse& u = rp_.uses[k];
      os_ << "  use #" << k << " " << u.path << " = " << u.schedule->name << "  // " << u.schedule->name_span.file->name << ":"
          << u.schedule->name_span.line << "; inside " << (u.parent < 0 ? std::string("the top schedule") : "use #" + std::to_string(u.parent))
          << "; slots from " << u.slot_base << ", phases from " << u.phase_base << "\n";
      if (u.group != GroupKind::none)
        os_ << "    on " << group_kind_name(u.group) << ": p, r and blocks are the group's (size, index, the used schedule's blocks)\n";
      for (const Binding& b : u.params) binding(b, "    ");
      for (const ExprPtr& e : u.requires_) os_ << "    check requires " << expr(*e) << "\n";
      if (u.blocks) os_ << "    check blocks " << expr(*u.blocks) << " divides B (fewer: rescaled)\n";
      if (u.scratch) os_ << "    check scratch " << expr(*u.scratch) << " <= the caller's\n";
      if (u.segment) os_ << "    segment " << expr(*u.segment) << "\n";
    }
    os_ << "  body\n";
    block(rp_.body, "    ");
  }

 private:
  std::string fold_text() const {
    switch (rp_.fold) {
      case FoldKind::none: return "none";
      case FoldKind::two_one: return "2-1";
      case FoldKind::three_two: return "3-2";
      case FoldKind::ring: return "ring " + std::to_string(rp_.fold_ring);
    }
    return "?";
  }
  std::string slot(int s) const {
    return s >= 0 && size_t(s) < rp_.slot_names.size() ? rp_.slot_names[size_t(s)] + "@" + std::to_string(s) : "?";
  }
  void binding(const Binding& b, const char* ind) {
    os_ << ind << "param " << slot(b.slot) << " = " << expr(*b.value) << (b.overridden ? "  // set by the caller" : "") << "\n";
  }
  void fn(size_t i) {
    const FnDecl& f = rp_.fns[i];
    os_ << "  fn #" << i << " " << f.name << "(";
    for (size_t k = 0; k < f.params.size(); ++k) os_ << (k ? ", " : "") << f.params[k];
    os_ << ")";
    if (f.stmts.empty()) {
      os_ << " = " << expr(*f.body) << "\n";
      return;
    }
    os_ << " {\n";
    block(f.stmts, "    ");
    os_ << "    return " << expr(*f.body) << "\n  }\n";
  }
  std::string name(const Expr& e) const {
    switch (e.ref) {
      case NameKind::slot: return slot(e.slot);
      case NameKind::fn_param: return e.name;
      default: return e.name;
    }
  }
  std::string expr(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::integer: return std::to_string(e.value);
      case ExprKind::boolean: return e.value ? "true" : "false";
      case ExprKind::name: return name(e);
      case ExprKind::unary: return op_spelling(e.op) + expr(*e.kids[0]);
      case ExprKind::binary: return "(" + expr(*e.kids[0]) + " " + op_spelling(e.op) + " " + expr(*e.kids[1]) + ")";
      case ExprKind::ternary: return "(" + expr(*e.kids[0]) + " ? " + expr(*e.kids[1]) + " : " + expr(*e.kids[2]) + ")";
      case ExprKind::call: {
        std::string s = e.builtin >= 0 ? e.name : e.fn >= 0 ? "fn#" + std::to_string(e.fn) + ":" + e.name : e.name;
        s += "(";
        for (size_t i = 0; i < e.kids.size(); ++i) s += (i ? ", " : "") + expr(*e.kids[i]);
        return s + ")";
      }
      case ExprKind::set_all: return "all";
      case ExprKind::set_none: return "none";
      case ExprKind::set_block: return "block(" + expr(*e.kids[0]) + ")";
      case ExprKind::set_range: return "[" + expr(*e.kids[0]) + ", " + expr(*e.kids[1]) + ")";
      case ExprKind::set_wrap: return "wrap[" + expr(*e.kids[0]) + ", " + expr(*e.kids[1]) + ")";
      case ExprKind::set_stride:
        return "stride(" + expr(*e.kids[0]) + ", " + expr(*e.kids[1]) + ", " + expr(*e.kids[2]) + ")";
      case ExprKind::set_filter:
        return "{" + slot(e.slot) + " in " + expr(*e.kids[0]) + " if " + expr(*e.kids[1]) + "}";
    }
    return "?";
  }
  /// "line N" in the top schedule's file, "FILE:N" in another (an inlined schedule's).
  std::string where(const Span& sp) const {
    if (sp.file && sp.file != rp_.decl->name_span.file) return sp.file->name + ":" + std::to_string(sp.line);
    return "line " + std::to_string(sp.line);
  }
  std::string target(const Stmt& s) const { return s.in_fn ? s.name : slot(s.slot); }
  void block(const Block& b, const std::string& ind) {
    for (const StmtPtr& s : b) stmt(*s, ind);
  }
  void stmt(const Stmt& s, const std::string& ind) {
    std::string tag;
    if (s.round) tag += " [round]";
    if (s.round_loop) tag += " [a round per iteration]";
    if (s.at_end) tag += " [final]";
    const std::string line = "  // " + where(s.span);
    const std::string red = s.reduce ? " reduce" : "";
    switch (s.kind) {
      case StmtKind::let: os_ << ind << "let " << target(s) << " = " << expr(*s.a) << tag << line << "\n"; return;
      case StmtKind::var: os_ << ind << "var " << target(s) << " = " << expr(*s.a) << tag << line << "\n"; return;
      case StmtKind::assign: os_ << ind << target(s) << " = " << expr(*s.a) << tag << line << "\n"; return;
      case StmtKind::for_:
        os_ << ind << "for " << target(s) << " in " << expr(*s.a) << " .. " << expr(*s.b) << tag << line << "\n";
        block(s.body, ind + "  ");
        return;
      case StmtKind::if_:
        os_ << ind << "if " << expr(*s.a) << tag << line << "\n";
        block(s.body, ind + "  ");
        if (!s.else_body.empty()) {
          os_ << ind << "else\n";
          block(s.else_body, ind + "  ");
        }
        return;
      case StmtKind::send: os_ << ind << "send " << expr(*s.a) << " to " << expr(*s.b) << tag << line << "\n"; return;
      case StmtKind::recv: os_ << ind << "recv " << expr(*s.a) << " from " << expr(*s.b) << red << tag << line << "\n"; return;
      case StmtKind::exchange:
        os_ << ind << "exchange " << expr(*s.a) << " / " << expr(*s.b) << " with " << expr(*s.c) << red << tag << line << "\n";
        return;
      case StmtKind::local:
        os_ << ind << (s.reduce ? "reduce " : "copy ") << expr(*s.a) << " into " << expr(*s.b) << tag << line << "\n";
        return;
      case StmtKind::permute:
        os_ << ind << "permute " << slot(s.slot) << " -> " << expr(*s.a) << tag << line << "\n";
        return;
      case StmtKind::frames: {
        const FramesData& f = *s.frames;
        os_ << ind << "frames: " << f.nodes << " nodes, root node " << f.root << ", " << f.links.size() << " links, "
            << f.frames.size() << " frames, packet " << packet_rule_name(f.rule) << " [a round per step]" << line << "\n";
        for (size_t k = 0; k < f.frames.size(); ++k) {
          os_ << ind << "  frame " << k << ":";
          for (auto [u, v] : f.frames[k]) os_ << " " << u << ">" << v;
          os_ << "  // " << where(f.frame_spans[k]) << "\n";
        }
        return;
      }
      case StmtKind::round_block:
        os_ << ind << "round" << tag << line << "\n";
        block(s.body, ind + "  ");
        return;
      case StmtKind::phase:
        os_ << ind << "phase #" << s.phase_id << " " << s.name << tag << line << "\n";
        block(s.body, ind + "  ");
        return;
      case StmtKind::mirror:
        os_ << ind << "phase #" << s.phase_id << " " << s.name << " = mirror(#" << s.mirror_of << " " << s.other << ")" << tag
            << (s.at_end && rp_.fold == FoldKind::three_two ? " [fused with the fold 3-2 epilogue when phase #" +
                                                                  std::to_string(s.mirror_of) + " starts with the first round]"
                                                            : "")
            << line << "\n";
        return;
      case StmtKind::use:
        os_ << ind << "phase #" << s.phase_id << " " << s.name << " = use #" << s.use << " " << s.other
            << (s.group != GroupKind::none ? std::string(" on ") + group_kind_name(s.group) : std::string())
            << (s.a ? " window " + expr(*s.a) : std::string()) << " (inlined)" << tag << line << "\n";
        block(s.body, ind + "  ");
        return;
    }
  }

  const RankProgram& rp_;
  std::ostream& os_;
};

}  // namespace

bool lower(const Program& program, const ScheduleDecl& decl, RankProgram& out, DiagnosticSink& diags) {
  out = RankProgram{};
  return Lowering(program, out, diags).run(decl);
}

void print_rank_program(const RankProgram& rp, std::ostream& os) { Printer(rp, os).print(); }

}  // namespace bine
