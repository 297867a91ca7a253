// Sema: resolves names to slots, types every expression, enforces the collective rules
// (reduce only in reducing collectives, fold only where an elimination is defined) and
// fixes the round structure (docs/language.md, "Rounds").
#include "sema.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <functional>
#include <map>
#include <sstream>
#include <unordered_map>

#include "builtins_table.h"
#include "parser.h"

namespace bine {

const char* type_name(Type t) {
  switch (t) {
    case Type::error: return "<error>";
    case Type::integer: return "int";
    case Type::boolean: return "bool";
    case Type::set: return "block set";
  }
  return "?";
}

const char* packet_rule_name(PacketRule r) {
  return r == PacketRule::lowest ? "lowest" : r == PacketRule::potential ? "potential" : "stream";
}
namespace {

enum class VarKind { let, var, loop, param, filter };

struct Binding {
  int slot;
  Type type;
  VarKind kind;
  Span decl;
  bool fn_frame = false;  ///< a local of a fn body (slot indexes the fn's frame)
};

class Sema {
 public:
  Sema(Program& p, DiagnosticSink& d) : prog_(p), diags_(d) {}

  void run() {
    index_fns(prog_.fns, top_first_);
    for (size_t i = 0; i < prog_.fns.size(); ++i) check_fn(prog_.fns[i], nullptr, i);
    std::map<std::string, Span> seen;
    for (ScheduleDecl& s : prog_.schedules) {
      auto [it, fresh] = seen.emplace(s.name, s.name_span);
      if (!fresh) {
        Diagnostic& d = diags_.error(s.name_span, "redefinition of schedule '" + s.name + "'");
        add_note(d, it->second, "previous definition is here");
      }
      check_schedule(s);
    }
    check_use_cycles();
    propagate_commutative();
  }
  /// A schedule reads `commutative` when a schedule it composes does (transitively).
  void propagate_commutative() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const Use& u : uses_) {
        ScheduleDecl& from = prog_.schedules[size_t(u.from)];
        if (!from.mentions_commutative && prog_.schedules[size_t(u.to)].mentions_commutative) {
          from.mentions_commutative = true;
          changed = true;
        }
      }
    }
  }
  /// Composition must not recurse: report a cycle of `phase X = SCHEDULE` uses.
  void check_use_cycles() {
    const size_t n = prog_.schedules.size();
    std::vector<int> state(n, 0);  // 0 new, 1 on the DFS stack, 2 done
    std::function<bool(int)> dfs = [&](int v) {
      state[size_t(v)] = 1;
      for (const auto& u : uses_) {
        if (u.from != v) continue;
        if (state[size_t(u.to)] == 1) {
          diags_.error(u.site->c->span, "schedule '" + prog_.schedules[size_t(v)].name + "' uses '" + u.site->other +
                                            "', which uses it back: composition cannot recurse");
          return false;
        }
        if (state[size_t(u.to)] == 0 && !dfs(u.to)) return false;
      }
      state[size_t(v)] = 2;
      return true;
    };
    for (size_t v = 0; v < n; ++v)
      if (state[v] == 0 && !dfs(int(v))) return;
  }

 private:
  // ---- scopes ----
  void push() { scopes_.emplace_back(); }
  void pop() { scopes_.pop_back(); }
  const Binding* lookup(const std::string& n) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(n);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  static bool reserved(const std::string& n) {
    return n == "p" || n == "r" || n == "root" || n == "commutative" || n == "n";
  }
  int declare(const std::string& n, Type t, VarKind k, const Span& at) {
    if (reserved(n)) {
      diags_.error(at, "'" + n + "' is a reserved name of the schedule scope and cannot be redefined");
    } else if (find_builtin(n) >= 0) {
      diags_.error(at, "'" + n + "' is the name of a built-in function");
    } else if (auto f = scopes_.back().find(n); f != scopes_.back().end()) {
      Diagnostic& d = diags_.error(at, "redefinition of '" + n + "' in the same scope");
      add_note(d, f->second.decl, "previous definition is here");
    }
    if (in_fn_ && cur_fn_ && std::find(cur_fn_->params.begin(), cur_fn_->params.end(), n) != cur_fn_->params.end())
      diags_.error(at, "'" + n + "' is a parameter of fn '" + cur_fn_->name + "' and cannot be redeclared in its body");
    if (in_fn_ && cur_fn_) {  // a fn body's local: a slot of the fn's own frame
      const int slot = cur_fn_->frame_size++;
      scopes_.back()[n] = Binding{slot, t, k, at, true};
      return slot;
    }
    const int slot = sched_->num_slots++;
    sched_->slot_names.push_back(n);
    scopes_.back()[n] = Binding{slot, t, k, at, false};
    return slot;
  }

  // ---- fns ----
  /// Checks a fn; `owner` is the schedule for schedule-local fns. Fns see their
  /// parameters, p/r/root/commutative, the schedule's params, and earlier fns.
  void check_fn(FnDecl& f, ScheduleDecl* owner, size_t index) {
    if (find_builtin(f.name) >= 0) {
      diags_.error(f.name_span, "'" + f.name + "' is the name of a built-in function");
    } else if (reserved(f.name)) {
      diags_.error(f.name_span, "'" + f.name + "' is a reserved name of the schedule scope and cannot be redefined");
    } else {
      // Top-level and schedule-local fns share one namespace (generated code defines them
      // side by side), so a local fn cannot reuse a top-level name either.
      // (The first fn of each name, from the name indexes: linear in the fns, not quadratic.)
      const FnDecl* prev = nullptr;
      const size_t top_lim = owner ? prog_.fns.size() : index;
      if (auto it = top_first_.find(f.name); it != top_first_.end() && it->second < top_lim) prev = &prog_.fns[it->second];
      if (auto it = local_first_.find(f.name); !prev && owner && it != local_first_.end() && it->second < index)
        prev = &owner->fns[it->second];
      if (prev) {
        Diagnostic& d = diags_.error(f.name_span, "redefinition of fn '" + f.name + "'");
        add_note(d, prev->name_span, "previous definition is here");
      }
    }
    for (size_t i = 0; i < f.params.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (f.params[i] == f.params[j]) {
          Diagnostic& d = diags_.error(f.param_spans[i], "duplicate parameter '" + f.params[i] + "' in fn '" + f.name + "'");
          add_note(d, f.param_spans[j], "previous definition is here");
          break;
        }
    cur_fn_ = &f;
    fn_params_ = &f.params;
    fn_limit_ = owner ? owner->fns.size() : index;
    fn_owner_limit_ = owner ? index : 0;
    fn_top_limit_ = owner ? prog_.fns.size() : index;
    in_fn_ = true;
    auto saved = std::move(scopes_);
    scopes_.clear();
    if (owner) {
      push();
      for (const Param& pr : owner->params)
        if (pr.slot >= 0) scopes_.back()[pr.name] = Binding{pr.slot, Type::integer, VarKind::param, pr.span};
    }
    // A block body: let, var, assignment, for and if over ints and bools, in the fn's frame
    // (parameters first, then locals).
    f.frame_size = int(f.params.size());
    push();
    for (StmtPtr& st : f.stmts) check_fn_stmt(*st);
    f.result = f.body ? check_expr(*f.body) : Type::error;
    pop();
    if (f.result == Type::set) {
      diags_.error(f.body->span, "fn '" + f.name + "' computes a block set; a fn must compute an int or a bool");
      f.result = Type::error;
    }
    scopes_ = std::move(saved);
    in_fn_ = false;
    fn_params_ = nullptr;
    cur_fn_ = nullptr;
  }
  void check_fn_stmt(Stmt& st) {
    st.in_fn = true;
    switch (st.kind) {
      case StmtKind::let:
      case StmtKind::var:
      case StmtKind::assign:
      case StmtKind::for_:
      case StmtKind::if_:
        check_stmt(st, false, true, false);
        break;
      default:
        diags_.error(st.span, "only let, var, assignment, for and if are allowed in a fn body");
        return;
    }
    if ((st.kind == StmtKind::let || st.kind == StmtKind::var) && st.a->type == Type::set)
      diags_.error(st.a->span, "fn locals are ints or bools, not block sets");
    for (StmtPtr& k : st.body) mark_fn(*k);
    for (StmtPtr& k : st.else_body) mark_fn(*k);
  }
  /// Nested statements of a fn body also live in its frame and cannot communicate.
  void mark_fn(Stmt& st) {
    st.in_fn = true;
    if (st.kind != StmtKind::let && st.kind != StmtKind::var && st.kind != StmtKind::assign &&
        st.kind != StmtKind::for_ && st.kind != StmtKind::if_)
      diags_.error(st.span, "only let, var, assignment, for and if are allowed in a fn body");
    for (StmtPtr& k : st.body) mark_fn(*k);
    for (StmtPtr& k : st.else_body) mark_fn(*k);
  }
  const FnDecl* find_fn(const std::string& n, int& index, bool& local) const {
    // The first fn of the name that is visible (declared before the limit); a later fn of
    // the same name is a redefinition, reported at its declaration.
    if (sched_) {
      const size_t lim = in_fn_ ? fn_owner_limit_ : sched_->fns.size();
      if (auto it = local_first_.find(n); it != local_first_.end() && it->second < lim && it->second < sched_->fns.size()) {
        index = int(it->second);
        local = true;
        return &sched_->fns[it->second];
      }
    }
    const size_t lim = in_fn_ ? fn_top_limit_ : prog_.fns.size();
    if (auto it = top_first_.find(n); it != top_first_.end() && it->second < lim && it->second < prog_.fns.size()) {
      index = int(it->second);
      local = false;
      return &prog_.fns[it->second];
    }
    return nullptr;
  }
  /// name -> index of the first fn of that name in `fns`.
  static void index_fns(const std::vector<FnDecl>& fns, std::unordered_map<std::string, size_t>& first) {
    first.clear();
    first.reserve(fns.size());
    for (size_t i = 0; i < fns.size(); ++i) first.emplace(fns[i].name, i);
  }

  // ---- schedules ----
  void check_schedule(ScheduleDecl& s) {
    sched_ = &s;
    s.mentions_commutative = top_fn_mentions_commutative_;
    scopes_.clear();
    phases_.clear();
    if (!collective_from_name(s.collective_name, s.collective))
      diags_.error(s.collective_span, "unknown collective '" + s.collective_name +
                                          "' (expected bcast, reduce, allreduce, reduce_scatter, allgather, gather, scatter, alltoall, scan, exscan or barrier)");
    if (s.fold != FoldKind::none && s.collective == Collective::alltoall)
      diags_.error(s.fold_span, "'fold' is not defined for alltoall (no two-one elimination of a p x p block grid)");
    else if (s.fold != FoldKind::none && !collective_folds(s.collective))
      diags_.error(s.fold_span, std::string("'fold' is not defined for ") + collective_name(s.collective) +
                                    " (write the elimination steps in the body: docs/language.md, \"Collective contracts\")");
    if (s.fold == FoldKind::three_two && s.collective != Collective::allreduce && collective_folds(s.collective))
      diags_.error(s.fold_span, "'fold 3-2' is defined for allreduce only (its eliminated ranks get the whole result back); "
                                "use 'fold' (2-1) for " + s.collective_name);
    if (s.fold == FoldKind::ring && s.collective != Collective::allreduce && collective_folds(s.collective))
      diags_.error(s.fold_span, "'fold ring' is defined for allreduce only (its ring allgather returns the whole result); "
                                "use 'fold' (2-1) for " + s.collective_name);
    if (s.fold == FoldKind::three_two && s.scratch)
      diags_.error(s.scratch->span, "'scratch' cannot be combined with 'fold 3-2' (the elimination moves vector blocks only)");
    push();
    for (Param& pr : s.params) {
      const Type t = pr.init ? check_expr(*pr.init) : Type::error;
      if (t != Type::integer && t != Type::error) diags_.error(pr.init->span, "parameter '" + pr.name + "' must be an int, not " + type_name(t));
      pr.slot = declare(pr.name, Type::integer, VarKind::param, pr.span);
    }
    index_fns(s.fns, local_first_);
    for (size_t i = 0; i < s.fns.size(); ++i) check_fn(s.fns[i], &s, i);
    for (ExprPtr& e : s.requires_) {
      const Type t = check_expr(*e);
      if (t != Type::boolean && t != Type::error) diags_.error(e->span, std::string("'requires' needs a bool condition, not ") + type_name(t));
      if (mentions_commutative(*e)) s.uses_commutative_requirement = true;
    }
    if (s.blocks) {
      const Type t = check_expr(*s.blocks);
      if (t != Type::integer && t != Type::error) diags_.error(s.blocks->span, std::string("'blocks' needs an int block count, not ") + type_name(t));
    }
    if (s.segment) {
      const Type t = check_expr(*s.segment);
      if (t != Type::integer && t != Type::error) diags_.error(s.segment->span, std::string("'segment' needs an int size in bytes, not ") + type_name(t));
    }
    if (s.scratch) {
      const Type t = check_expr(*s.scratch);
      if (t != Type::integer && t != Type::error)
        diags_.error(s.scratch->span, std::string("'scratch' needs an int buffer count, not ") + type_name(t));
      else if (collective_has_rank_blocks(s.collective) || s.collective == Collective::barrier)
        diags_.error(s.scratch->span, std::string("'scratch' buffers are available to bcast, reduce, allreduce, scan and exscan schedules, not ") +
                                          collective_name(s.collective) +
                                          (s.collective == Collective::barrier ? " (no data)" : " (rank-indexed blocks)"));
    }
    // Params and the top-level statements share one scope (generated code declares them
    // side by side), so a top-level 'let' cannot reuse a parameter's name.
    for (StmtPtr& st : s.body) check_stmt(*st, /*round_level=*/true, /*in_round=*/false, /*top=*/true);
    check_frames_schedule(s);
    s.num_phases = int(phases_.size());
    pop();
    sched_ = nullptr;
  }
  /// A schedule with a `frames` statement: a bcast whose body is that statement alone,
  /// without fold, scratch or segment, with `blocks` an integer literal (the packet count
  /// N that the emitted table is built for; docs/language.md, "frames").
  void check_frames_schedule(const ScheduleDecl& s) {
    const Stmt* fr = nullptr;
    for (const StmtPtr& st : s.body)
      if (st->kind == StmtKind::frames) fr = fr ? fr : st.get();
    if (!fr) return;
    for (const StmtPtr& st : s.body)
      if (st.get() != fr) {
        Diagnostic& d = diags_.error(st->span, "a schedule with 'frames' has no other statements (the frames are its body)");
        add_note(d, fr->span, "the frames are here");
        return;
      }
    if (s.collective != Collective::bcast)
      diags_.error(fr->span, std::string("'frames' describe a broadcast; schedule '") + s.name + "' implements " + s.collective_name);
    if (s.fold != FoldKind::none) diags_.error(s.fold_span, "'fold' cannot be combined with 'frames' (the frames fix p)");
    if (s.scratch) diags_.error(s.scratch->span, "'scratch' cannot be combined with 'frames'");
    if (s.segment) diags_.error(s.segment->span, "'segment' cannot be combined with 'frames' (a frame's message is one packet, one block)");
    if (!s.blocks || s.blocks->kind != ExprKind::integer)
      diags_.error(s.blocks ? s.blocks->span : s.name_span,
                   "a schedule with 'frames' needs 'blocks N' with an integer literal N (the packet count its table is built for)");
  }
  /// The topology and frames of a `frames` statement: node ids in 0..nodes-1, links
  /// between two distinct nodes, each once; every frame a matching (a node in at most one
  /// of its arcs) of arcs along links.
  void check_frames(const Stmt& st) {
    const FramesData& f = *st.frames;
    constexpr int64_t kMaxNodes = 1 << 20;
    if (f.nodes < 1 || f.nodes > kMaxNodes) {
      diags_.error(f.nodes_span, "node count " + std::to_string(f.nodes) + " outside 1.." + std::to_string(kMaxNodes));
      return;
    }
    auto node_ok = [&](int64_t v, const Span& at) {
      if (v >= 0 && v < f.nodes) return true;
      diags_.error(at, "node " + std::to_string(v) + " outside 0.." + std::to_string(f.nodes - 1) + " ('nodes " +
                           std::to_string(f.nodes) + "')");
      return false;
    };
    node_ok(f.root, f.root_span.file ? f.root_span : st.span);
    std::map<std::pair<int64_t, int64_t>, size_t> links;
    for (size_t i = 0; i < f.links.size(); ++i) {
      auto [u, v] = f.links[i];
      const Span& at = f.link_spans[i];
      if (!node_ok(u, at) || !node_ok(v, at)) continue;
      if (u == v) {
        diags_.error(at, "link " + std::to_string(u) + "-" + std::to_string(v) + " joins a node to itself");
        continue;
      }
      auto [it, fresh] = links.emplace(std::minmax(u, v), i);
      if (!fresh) {
        Diagnostic& d = diags_.error(at, "duplicate link " + std::to_string(u) + "-" + std::to_string(v));
        add_note(d, f.link_spans[it->second], "first given here");
      }
    }
    bool streams = f.rule == PacketRule::stream;
    constexpr int64_t kMaxStreams = 1 << 16;
    if (streams && (f.streams < 1 || f.streams > kMaxStreams)) {
      diags_.error(f.rule_span, "stream count " + std::to_string(f.streams) + " outside 1.." + std::to_string(kMaxStreams));
      streams = false;  // no second error per arc
    }
    const bool tags_ok = f.rule != PacketRule::stream || streams;
    for (size_t k = 0; k < f.frames.size(); ++k) {
      std::map<int64_t, size_t> busy;  // node -> the arc of this frame it is in
      for (size_t i = 0; i < f.frames[k].size(); ++i) {
        auto [u, v] = f.frames[k][i];
        const Span& at = f.arc_spans[k][i];
        const int64_t tag = f.arc_streams[k][i];
        if (streams && tag < 0)
          diags_.error(at, "arc " + std::to_string(u) + ">" + std::to_string(v) + " names no stream ('packet stream " +
                               std::to_string(f.streams) + "': write U>V:J, J in 0.." + std::to_string(f.streams - 1) + ")");
        else if (streams && tag >= f.streams)
          diags_.error(at, "stream " + std::to_string(tag) + " of arc " + std::to_string(u) + ">" + std::to_string(v) +
                               " outside 0.." + std::to_string(f.streams - 1) + " ('packet stream " + std::to_string(f.streams) + "')");
        else if (!streams && tags_ok && tag >= 0)
          diags_.error(at, std::string("arc ") + std::to_string(u) + ">" + std::to_string(v) + " names a stream, but the packet rule is '" +
                               packet_rule_name(f.rule) + "' (streams need 'packet stream K')");
        if (!node_ok(u, at) || !node_ok(v, at)) continue;
        if (!links.count(std::minmax(u, v))) {
          diags_.error(at, "arc " + std::to_string(u) + ">" + std::to_string(v) + " of frame " + std::to_string(k) +
                               " is not along a link of the topology");
          continue;
        }
        for (int64_t x : {u, v}) {
          auto [it, fresh] = busy.emplace(x, i);
          if (!fresh) {
            Diagnostic& d = diags_.error(at, "node " + std::to_string(x) + " is in two arcs of frame " + std::to_string(k) +
                                                 " (a frame is a matching: each node sends or receives at most once a step)");
            add_note(d, f.arc_spans[k][it->second], "its other arc");
            break;
          }
        }
      }
    }
  }
  static bool mentions_commutative(const Expr& e) {
    if (e.kind == ExprKind::name && e.ref == NameKind::commutative) return true;
    for (const ExprPtr& k : e.kids)
      if (mentions_commutative(*k)) return true;
    return false;
  }

  void check_block(Block& b, bool round_level, bool in_round, bool top) {
    push();
    for (StmtPtr& st : b) check_stmt(*st, round_level, in_round, top);
    pop();
  }
  static bool has_comm(const Block& b) {
    for (const StmtPtr& s : b)
      if (s->communicates) return true;
    return false;
  }
  static bool has_round_loop(const Block& b) {
    for (const StmtPtr& s : b)
      if (s->round_loop || s->round_level_if || s->kind == StmtKind::phase || s->kind == StmtKind::mirror) return true;
    return false;
  }
  void expect_type(const Expr& e, Type got, Type want, const char* what) {
    if (got != want && got != Type::error)
      diags_.error(e.span, std::string(what) + " must be " + type_name(want) + ", not " + type_name(got));
  }

  void check_stmt(Stmt& st, bool round_level, bool in_round, bool top) {
    switch (st.kind) {
      case StmtKind::let:
      case StmtKind::var: {
        const Type t = check_expr(*st.a);
        st.slot = declare(st.name, t, st.kind == StmtKind::let ? VarKind::let : VarKind::var, st.name_span);
        return;
      }
      case StmtKind::assign: {
        const Type t = check_expr(*st.a);
        const Binding* b = lookup(st.name);
        if (!b) {
          if (reserved(st.name)) diags_.error(st.name_span, "cannot assign to '" + st.name + "'");
          else diags_.error(st.name_span, "assignment to undeclared name '" + st.name + "' (declare it with 'var')");
          return;
        }
        if (b->kind != VarKind::var) {
          Diagnostic& d = diags_.error(st.name_span, "cannot assign to '" + st.name + "': only 'var' names are mutable");
          add_note(d, b->decl, "declared here");
          return;
        }
        if (t != b->type && t != Type::error && b->type != Type::error)
          diags_.error(st.a->span, std::string("cannot assign ") + (t == Type::integer ? "an " : "a ") + type_name(t) + " to '" +
                                       st.name + "' of type " + type_name(b->type));
        st.slot = b->slot;
        return;
      }
      case StmtKind::for_: {
        expect_type(*st.a, check_expr(*st.a), Type::integer, "a loop bound");
        expect_type(*st.b, check_expr(*st.b), Type::integer, "a loop bound");
        push();
        st.slot = declare(st.name, Type::integer, VarKind::loop, st.name_span);
        const bool body_round_level = round_level && !in_round;
        // A loop at round level whose body communicates makes one round per iteration;
        // its body is then inside a round.
        for (StmtPtr& k : st.body) check_stmt(*k, false, true, false);
        st.communicates = has_comm(st.body);
        // Re-run the classification now that we know whether the body communicates.
        if (body_round_level && st.communicates) st.round_loop = true;
        else if (!in_round && st.communicates) st.round = true;
        pop();
        return;
      }
      case StmtKind::if_: {
        expect_type(*st.a, check_expr(*st.a), Type::boolean, "an 'if' condition");
        // Branches are first checked as round level; if they contain round loops, the if
        // is transparent (its condition must be rank-uniform, checked at instantiation).
        const bool rl = round_level && !in_round;
        ++if_depth_;
        check_block(st.body, rl, in_round, false);
        check_block(st.else_body, rl, in_round, false);
        --if_depth_;
        st.communicates = has_comm(st.body) || has_comm(st.else_body);
        if (rl && (has_round_loop(st.body) || has_round_loop(st.else_body))) {
          st.round_level_if = true;
          mark_rounds(st.body);
          mark_rounds(st.else_body);
        } else if (!in_round && st.communicates) {
          st.round = true;
          clear_rounds(st.body);
          clear_rounds(st.else_body);
        }
        return;
      }
      case StmtKind::send:
      case StmtKind::recv:
      case StmtKind::exchange: {
        expect_type(*st.a, check_expr(*st.a), Type::set, st.kind == StmtKind::exchange ? "the sent blocks" : "the transferred blocks");
        if (st.kind == StmtKind::exchange) {
          expect_type(*st.b, check_expr(*st.b), Type::set, "the received blocks");
          expect_type(*st.c, check_expr(*st.c), Type::integer, "the exchange partner");
        } else {
          expect_type(*st.b, check_expr(*st.b), Type::integer, st.kind == StmtKind::send ? "the destination rank" : "the source rank");
        }
        if (st.reduce && sched_ && !collective_reduces(sched_->collective))
          diags_.error(st.reduce_span, std::string("'reduce' in ") + (collective_name(sched_->collective)[0] == 'a' ? "an " : "a ") +
                                           collective_name(sched_->collective) +
                                           " schedule: only reduce, allreduce, reduce_scatter, scan and exscan combine data");
        st.communicates = true;
        st.round = !in_round;
        return;
      }
      case StmtKind::local: {
        expect_type(*st.a, check_expr(*st.a), Type::set, st.reduce ? "the blocks to reduce" : "the blocks to copy");
        expect_type(*st.b, check_expr(*st.b), Type::set, "the destination blocks");
        if (st.reduce && sched_ && !collective_reduces(sched_->collective))
          diags_.error(st.reduce_span, std::string("'reduce' in ") + (collective_name(sched_->collective)[0] == 'a' ? "an " : "a ") +
                                           collective_name(sched_->collective) +
                                           " schedule: only reduce, allreduce, reduce_scatter, scan and exscan combine data");
        st.communicates = true;  // like a transfer, it belongs to a round
        st.round = !in_round;
        return;
      }
      case StmtKind::frames: {
        if (!top) diags_.error(st.span, "'frames' is only allowed at the top level of a schedule");
        check_frames(st);
        st.communicates = true;
        return;
      }
      case StmtKind::round_block: {
        check_block(st.body, false, true, false);
        st.communicates = has_comm(st.body);
        st.round = !in_round;
        return;
      }
      case StmtKind::permute: {
        push();
        st.slot = declare(st.name, Type::integer, VarKind::loop, st.name_span);
        expect_type(*st.a, check_expr(*st.a), Type::integer, "the destination block of 'permute'");
        pop();
        if (in_round || if_depth_ > 0)
          diags_.error(st.span, "'permute' is a round of its own: it cannot be inside a round loop, a round, or an 'if'");
        else if (sched_ && !collective_has_rank_blocks(sched_->collective))
          diags_.error(st.span, std::string("'permute' needs blocks of equal size (gather, scatter, allgather, reduce_scatter, alltoall); ") +
                                    collective_name(sched_->collective) + " blocks differ by one element when p does not divide n");
        st.communicates = true;
        st.round = !in_round;
        return;
      }
      case StmtKind::phase: {
        if (!top) { diags_.error(st.span, "'phase' is only allowed at the top level of a schedule"); }
        declare_phase(st);
        check_block(st.body, true, false, false);
        st.communicates = true;
        return;
      }
      case StmtKind::use: {
        declare_phase(st);
        int found = -1;
        for (size_t i = 0; i < prog_.schedules.size(); ++i)
          if (prog_.schedules[i].name == st.other) found = int(i);
        const int self = int(sched_ - prog_.schedules.data());
        if (found < 0 && phases_.count(st.other) && st.other != st.name) {
          diags_.error(st.c->span, "'" + st.other + "' is a phase of this schedule, not a schedule; write mirror(" + st.other +
                                       ") to run it reversed");
        } else if (found < 0) {
          diags_.error(st.c->span, "phase '" + st.name + "' uses unknown schedule '" + st.other + "'");
        } else if (found == self) {
          diags_.error(st.c->span, "schedule '" + st.other + "' cannot use itself");
        } else {
          uses_.push_back({self, found, &st});
          const ScheduleDecl& t = prog_.schedules[size_t(found)];
          Collective tc = Collective::bcast;  // t may not be checked yet: resolve its name here
          if (collective_from_name(t.collective_name, tc) && collective_reduces(tc) &&
              !collective_reduces(sched_->collective))
            diags_.error(st.c->span, std::string("phase '") + st.name + "' uses the " + collective_name(tc) +
                                         " schedule '" + t.name + "', which reduces, in a " + collective_name(sched_->collective) + " schedule");
          st.target = found;
        }
        if (st.group != GroupKind::none && sched_->fold != FoldKind::none)
          diags_.error(st.group_span, "phase '" + st.name + "' runs on a sub-group in a schedule with a fold; groups are of real "
                                      "ranks, so a schedule with phases on sub-groups cannot fold");
        if (st.a) expect_type(*st.a, check_expr(*st.a), Type::set, "the window");
        check_overrides(st, found);
        st.communicates = true;
        return;
      }
      case StmtKind::mirror: {
        declare_phase(st);
        auto it = phases_.find(st.other);
        if (st.other == st.name) {
          diags_.error(st.c->span, "phase '" + st.name + "' cannot mirror itself (a phase can only mirror an earlier phase)");
        } else if (it == phases_.end()) {
          diags_.error(st.c->span, "mirror of unknown phase '" + st.other + "' (a phase can only mirror an earlier phase)");
        } else if (it->second.mirror) {
          diags_.error(st.c->span, "phase '" + st.other + "' is itself a mirror; mirror the original phase instead");
        } else {
          st.mirror_of = it->second.id;
        }
        st.communicates = true;
        return;
      }
    }
  }
  /// `phase NAME = SCHEDULE(k = EXPR, ...)`: each name must be a parameter of the used
  /// schedule, given once; each value an int expression of literals, p, r, root,
  /// commutative, the caller's params and fns (it is evaluated before the caller's body, in
  /// generated code, to check the used schedule's requirements up front).
  void check_overrides(Stmt& st, int target) {
    for (size_t i = 0; i < st.overrides.size(); ++i) {
      Stmt::Override& ov = st.overrides[i];
      const Type t = check_expr(*ov.value);
      if (t != Type::integer && t != Type::error)
        diags_.error(ov.value->span, "the value of parameter '" + ov.name + "' must be an int, not " + type_name(t));
      if (t == Type::integer) {
        const Expr* bad = non_param_name(*ov.value);
        if (bad)
          diags_.error(bad->span, "'" + bad->name + "' is not a parameter of schedule '" + sched_->name +
                                      "': the value of a composed schedule's parameter may only use literals, p, r, root, "
                                      "commutative, this schedule's params and fns");
      }
      for (size_t j = 0; j < i; ++j)
        if (st.overrides[j].name == ov.name) {
          Diagnostic& d = diags_.error(ov.span, "parameter '" + ov.name + "' is given twice");
          add_note(d, st.overrides[j].span, "first given here");
        }
      if (target < 0) continue;
      const ScheduleDecl& t2 = prog_.schedules[size_t(target)];
      for (size_t k = 0; k < t2.params.size(); ++k)
        if (t2.params[k].name == ov.name) ov.param = int(k);
      if (ov.param < 0) {
        std::string have;
        for (const Param& pr : t2.params) have += (have.empty() ? "" : ", ") + pr.name;
        diags_.error(ov.span, "schedule '" + t2.name + "' has no parameter '" + ov.name + "' (" +
                                  (have.empty() ? std::string("it has no params") : "its params: " + have) + ")");
      }
    }
  }
  /// The first name in `e` that is a variable other than one of the schedule's params.
  const Expr* non_param_name(const Expr& e) const {
    if (e.kind == ExprKind::name && e.ref == NameKind::slot) {
      bool is_param = false;
      for (const Param& pr : sched_->params) is_param |= pr.slot == e.slot;
      if (!is_param) return &e;
    }
    for (const ExprPtr& k : e.kids)
      if (const Expr* b = non_param_name(*k)) return b;
    return nullptr;
  }
  struct PhaseInfo { int id; bool mirror; Span at; };
  void declare_phase(Stmt& st) {
    auto [it, fresh] = phases_.emplace(st.name, PhaseInfo{int(phases_.size()), st.kind == StmtKind::mirror, st.name_span});
    if (!fresh) {
      Diagnostic& d = diags_.error(st.name_span, "redefinition of phase '" + st.name + "'");
      add_note(d, it->second.at, "previous definition is here");
    }
    st.phase_id = it->second.id;
  }
  /// Statements in a transparent if are classified as at round level.
  void mark_rounds(Block& b) {
    for (StmtPtr& s : b)
      if (s->communicates && s->kind != StmtKind::for_ && !s->round_level_if) s->round = true;
  }
  void clear_rounds(Block& b) {
    for (StmtPtr& s : b) {
      s->round = false;
      s->round_loop = false;
      clear_rounds(s->body);
      clear_rounds(s->else_body);
    }
  }

  // ---- expressions ----
  Type set(Expr& e, Type t) { return e.type = t; }
  Type check_expr(Expr& e) {
    switch (e.kind) {
      case ExprKind::integer: return set(e, Type::integer);
      case ExprKind::boolean: return set(e, Type::boolean);
      case ExprKind::name: return set(e, resolve_name(e));
      case ExprKind::unary: {
        const Type t = check_expr(*e.kids[0]);
        if (t == Type::error) return set(e, Type::error);
        const Type want = e.op == Tok::bang ? Type::boolean : Type::integer;
        if (t != want) {
          diags_.error(e.span, std::string("operator ") + tok_name(e.op) + " needs " + type_name(want) + ", not " + type_name(t));
          return set(e, Type::error);
        }
        return set(e, want);
      }
      case ExprKind::binary: return set(e, check_binary(e));
      case ExprKind::ternary: {
        const Type c = check_expr(*e.kids[0]);
        const Type a = check_expr(*e.kids[1]);
        const Type b = check_expr(*e.kids[2]);
        expect_type(*e.kids[0], c, Type::boolean, "the condition of '?:'");
        if (a != Type::error && b != Type::error && a != b) {
          diags_.error(e.span, std::string("the branches of '?:' have different types (") + type_name(a) + " and " + type_name(b) + ")");
          return set(e, Type::error);
        }
        return set(e, a == Type::error ? b : a);
      }
      case ExprKind::call: return set(e, check_call(e));
      case ExprKind::set_all:
      case ExprKind::set_none: return set(e, Type::set);
      case ExprKind::set_block:
      case ExprKind::set_range:
      case ExprKind::set_wrap:
      case ExprKind::set_stride: {
        bool ok = true;
        for (ExprPtr& k : e.kids) {
          const Type t = check_expr(*k);
          if (t != Type::integer && t != Type::error) {
            diags_.error(k->span, std::string("a block index must be int, not ") + type_name(t));
            ok = false;
          }
        }
        return set(e, ok ? Type::set : Type::error);
      }
      case ExprKind::set_filter: {
        expect_type(*e.kids[0], check_expr(*e.kids[0]), Type::set, "the domain of a set comprehension");
        if (in_fn_) {
          diags_.error(e.span, "set comprehensions are not allowed in fn bodies");
          return set(e, Type::error);
        }
        push();
        e.slot = declare(e.name, Type::integer, VarKind::filter, e.span);
        expect_type(*e.kids[1], check_expr(*e.kids[1]), Type::boolean, "the condition of a set comprehension");
        pop();
        return set(e, Type::set);
      }
    }
    return set(e, Type::error);
  }
  Type resolve_name(Expr& e) {
    if (e.name == "p") { e.ref = NameKind::p; return Type::integer; }
    if (e.name == "r") { e.ref = NameKind::r; return Type::integer; }
    if (e.name == "root") { e.ref = NameKind::root; return Type::integer; }
    if (e.name == "commutative") {
      e.ref = NameKind::commutative;
      if (sched_) sched_->mentions_commutative = true;
      else top_fn_mentions_commutative_ = true;
      return Type::boolean;
    }
    if (in_fn_ && fn_params_) {
      for (size_t i = 0; i < fn_params_->size(); ++i)
        if ((*fn_params_)[i] == e.name) { e.ref = NameKind::fn_param; e.slot = int(i); return Type::integer; }
    }
    if (const Binding* b = lookup(e.name)) {
      e.ref = b->fn_frame ? NameKind::fn_param : NameKind::slot;
      e.slot = b->slot;
      return b->type;
    }
    if (e.name == "n")
      diags_.error(e.span, "'n' (the element count) is not available to schedules: they are written in blocks");
    else if (find_builtin(e.name) >= 0)
      diags_.error(e.span, "built-in function '" + e.name + "' used without arguments");
    else
      diags_.error(e.span, "use of undeclared name '" + e.name + "'");
    return Type::error;
  }
  Type check_binary(Expr& e) {
    const Type a = check_expr(*e.kids[0]);
    const Type b = check_expr(*e.kids[1]);
    if (a == Type::error || b == Type::error) return Type::error;
    auto bad = [&]() {
      diags_.error(e.span, std::string("invalid operands to ") + tok_name(e.op) + " (" + type_name(a) + " and " + type_name(b) + ")");
      return Type::error;
    };
    switch (e.op) {
      case Tok::pipepipe:
      case Tok::ampamp: return a == Type::boolean && b == Type::boolean ? Type::boolean : bad();
      case Tok::eq:
      case Tok::ne: return a == b ? Type::boolean : bad();
      case Tok::lt: case Tok::le: case Tok::gt: case Tok::ge:
        return a == Type::integer && b == Type::integer ? Type::boolean : bad();
      case Tok::pipe:
      case Tok::amp:
      case Tok::minus:
        if (a == Type::set && b == Type::set) return Type::set;
        return a == Type::integer && b == Type::integer ? Type::integer : bad();
      default: return a == Type::integer && b == Type::integer ? Type::integer : bad();
    }
  }
  Type check_call(Expr& e) {
    for (ExprPtr& k : e.kids) check_expr(*k);
    const int bi = find_builtin(e.name);
    if (bi >= 0) {
      const BuiltinFn& f = builtin_fns()[size_t(bi)];
      e.builtin = bi;
      if (e.kids.size() != f.args.size()) {
        diags_.error(e.span, "'" + e.name + "' takes " + std::to_string(f.args.size()) + " argument" +
                                 (f.args.size() == 1 ? "" : "s") + ", " + std::to_string(e.kids.size()) + " given");
        return Type::error;
      }
      for (size_t i = 0; i < f.args.size(); ++i)
        if (e.kids[i]->type != f.args[i] && e.kids[i]->type != Type::error) {
          diags_.error(e.kids[i]->span, "argument " + std::to_string(i + 1) + " of '" + e.name + "' must be " +
                                            type_name(f.args[i]) + ", not " + type_name(e.kids[i]->type));
          return Type::error;
        }
      return f.result;
    }
    int idx = -1;
    bool local = false;
    const FnDecl* f = find_fn(e.name, idx, local);
    if (!f) {
      // Inside a fn only earlier fns are visible; say so when the callee comes later.
      const FnDecl* later = nullptr;
      for (size_t i = 0; sched_ && i < sched_->fns.size() && !later; ++i)
        if (sched_->fns[i].name == e.name) later = &sched_->fns[i];
      for (size_t i = 0; i < prog_.fns.size() && !later; ++i)
        if (prog_.fns[i].name == e.name) later = &prog_.fns[i];
      if (later && later == cur_fn_) {
        diags_.error(e.span, "fn '" + e.name + "' calls itself; fns cannot be recursive");
      } else if (later) {
        Diagnostic& d = diags_.error(e.span, "fn '" + e.name + "' is called before its definition (a fn can only call fns defined before it)");
        add_note(d, later->name_span, "'" + e.name + "' is defined here");
      } else {
        diags_.error(e.span, "call of undeclared function '" + e.name + "'");
      }
      return Type::error;
    }
    e.fn = local ? idx : -2 - idx;  // >= 0: schedule-local fn; <= -2: top-level fn (-2 - index)
    if (e.kids.size() != f->params.size()) {
      diags_.error(e.span, "'" + e.name + "' takes " + std::to_string(f->params.size()) + " argument" +
                               (f->params.size() == 1 ? "" : "s") + ", " + std::to_string(e.kids.size()) + " given");
      return Type::error;
    }
    for (size_t i = 0; i < e.kids.size(); ++i)
      if (e.kids[i]->type != Type::integer && e.kids[i]->type != Type::error) {
        diags_.error(e.kids[i]->span, "arguments of fn '" + e.name + "' must be int, not " + type_name(e.kids[i]->type));
        return Type::error;
      }
    return f->result;
  }

  Program& prog_;
  std::unordered_map<std::string, size_t> top_first_;    ///< top-level fn name -> first index
  std::unordered_map<std::string, size_t> local_first_;  ///< the current schedule's fns, likewise
  DiagnosticSink& diags_;
  ScheduleDecl* sched_ = nullptr;
  std::vector<std::map<std::string, Binding>> scopes_;
  std::map<std::string, PhaseInfo> phases_;
  struct Use {
    int from, to;
    const Stmt* site;
  };
  std::vector<Use> uses_;
  bool in_fn_ = false;
  bool top_fn_mentions_commutative_ = false;
  int if_depth_ = 0;  ///< statements nested in an if  ///< a top-level fn reads `commutative`
  FnDecl* cur_fn_ = nullptr;  ///< the fn being checked
  const std::vector<std::string>* fn_params_ = nullptr;
  size_t fn_limit_ = 0, fn_owner_limit_ = 0, fn_top_limit_ = 0;
};

}  // namespace

bool check_program(Program& program, DiagnosticSink& diags) {
  const size_t before = diags.error_count();
  Sema(program, diags).run();
  return diags.error_count() == before;
}

bool load_program_text(const std::string& name, const std::string& text, Program& program,
                       DiagnosticSink& diags) {
  program.files.push_back(std::make_unique<SourceFile>(name, text));
  const size_t before = diags.error_count();
  parse_file(*program.files.back(), program, diags);
  if (diags.error_count() != before) return false;
  return check_program(program, diags);
}

bool load_program(const std::vector<std::string>& paths, Program& program, DiagnosticSink& diags) {
  const size_t before = diags.error_count();
  bool stdin_read = false;
  for (const std::string& path : paths) {
    std::stringstream ss;
    if (path == "-") {  // standard input, named <stdin> in diagnostics; read once
      if (stdin_read) {
        diags.error(Span{}, "'-' (standard input) given twice");
        continue;
      }
      stdin_read = true;
      ss << std::cin.rdbuf();
      program.files.push_back(std::make_unique<SourceFile>("<stdin>", ss.str()));
      parse_file(*program.files.back(), program, diags);
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      diags.error(Span{}, "cannot open '" + path + "'");
      continue;
    }
    ss << in.rdbuf();
    program.files.push_back(std::make_unique<SourceFile>(path, ss.str()));
    parse_file(*program.files.back(), program, diags);
  }
  if (diags.error_count() != before) return false;
  return check_program(program, diags);
}

}  // namespace bine
