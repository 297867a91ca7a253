#include "symmetry.h"

#include <cstdint>
#include <vector>

#include "builtins_table.h"

namespace bine {
namespace {

// Two runs of the program with the same p and `commutative`: run A on rank x with root 0,
// run B on rank (x + R) mod p with root R. Rel says how a value b of run B relates to the
// value a the same expression has at the same point of run A.
struct Rel {
  enum Kind : uint8_t {
    bot,    ///< no value yet (a slot not assigned on this path)
    eq,     ///< b == a
    modp,   ///< b == a (mod p)
    shift,  ///< b == a + R (mod p)
    top,    ///< unknown
  };
  Kind kind = bot;
  bool exact = false;  ///< shift: b == a + R (as integers)
  bool canon = false;  ///< shift: a and b in [0, p), so b == (a + R) mod p

  static Rel of(Kind k) { return Rel{k, false, false}; }
  static Rel shifted(bool exact, bool canon) { return Rel{shift, exact, canon}; }
  bool is_eq() const { return kind == eq; }
  bool operator==(const Rel& o) const { return kind == o.kind && exact == o.exact && canon == o.canon; }
};

Rel join(Rel a, Rel b) {
  if (a.kind == Rel::bot) return b;
  if (b.kind == Rel::bot) return a;
  if (a.kind != b.kind) {
    if ((a.kind == Rel::eq && b.kind == Rel::modp) || (a.kind == Rel::modp && b.kind == Rel::eq)) return Rel::of(Rel::modp);
    return Rel::of(Rel::top);
  }
  if (a.kind == Rel::shift) return Rel::shifted(a.exact && b.exact, a.canon && b.canon);
  return a;
}

// How a block set of run B relates to run A's.
enum class SRel : uint8_t {
  bot,
  inv,   ///< the same set in both runs and invariant under rotation (all, none)
  same,  ///< the same set
  rot,   ///< run A's set rotated by R (rank-indexed blocks, B = p)
  top,
};

SRel sjoin(SRel a, SRel b) {
  if (a == SRel::bot || a == b) return b;
  if (b == SRel::bot) return a;
  if (a == SRel::inv && (b == SRel::same || b == SRel::rot)) return b;
  if (b == SRel::inv && (a == SRel::same || a == SRel::rot)) return a;
  return SRel::top;
}

struct NotProved {
  std::string why;
  Span at;
};

class Analysis {
 public:
  explicit Analysis(const RankProgram& rp)
      : rp_(rp), blocked_(collective_has_rank_blocks(rp.collective)) {
    st_.ints.assign(size_t(rp.num_slots), Rel{});
    st_.sets.assign(size_t(rp.num_slots), SRel::bot);
  }

  void run() {
    if (blocked_) {
      // Block b is rank b's: rotating the ranks rotates the blocks modulo p, so B must be p.
      if (rp_.blocks && !(rp_.blocks->kind == ExprKind::name && rp_.blocks->ref == NameKind::p))
        throw NotProved{"rank-indexed blocks with a block count other than p", rp_.blocks->span};
      if (rp_.scratch) throw NotProved{"rank-indexed blocks with scratch buffers", rp_.scratch->span};
    }
    for (const Binding& b : rp_.params) st_.ints[size_t(b.slot)] = int_rel(*b.value);
    for (const ExprPtr& e : rp_.requires_) need_eq(*e, "the requirement");
    if (rp_.blocks) need_eq(*rp_.blocks, "the block count");
    if (rp_.scratch) need_eq(*rp_.scratch, "the scratch buffer count");
    if (rp_.segment) need_eq(*rp_.segment, "the segment size");
    for (const InlinedUse& u : rp_.uses) {
      if (u.group != GroupKind::none)
        throw NotProved{"a phase on a sub-group (its regions are fixed sets of real ranks)", u.site->group_span};
      for (const Binding& b : u.params) st_.ints[size_t(b.slot)] = int_rel(*b.value);
      for (const ExprPtr& e : u.requires_) need_eq(*e, "the composed schedule's requirement");
      if (u.blocks) need_eq(*u.blocks, "the composed schedule's block count");
      if (u.scratch) need_eq(*u.scratch, "the composed schedule's scratch buffer count");
      if (u.segment) need_eq(*u.segment, "the composed schedule's segment size");
    }
    exec_block(rp_.body);
  }

 private:
  struct State {
    std::vector<Rel> ints;
    std::vector<SRel> sets;
    std::vector<Rel> frame;  ///< the fn frames' slots (ints)
    bool operator==(const State& o) const { return ints == o.ints && sets == o.sets && frame == o.frame; }
  };
  static State joined(const State& a, const State& b) {
    State out = a;
    for (size_t i = 0; i < out.ints.size(); ++i) out.ints[i] = join(a.ints[i], b.ints[i]);
    for (size_t i = 0; i < out.sets.size(); ++i) out.sets[i] = sjoin(a.sets[i], b.sets[i]);
    for (size_t i = 0; i < out.frame.size() && i < b.frame.size(); ++i) out.frame[i] = join(a.frame[i], b.frame[i]);
    return out;
  }

  void tick(const Span& at) {
    if (++work_ > kMaxWork) throw NotProved{"the program is too large for the symmetry analysis", at};
  }
  void need_eq(const Expr& e, const char* what) {
    if (!int_rel(e).is_eq()) throw NotProved{std::string(what) + " depends on the root", e.span};
  }
  /// A peer must be run A's peer plus R modulo p (the pipeline takes peers modulo p).
  void need_peer(const Expr& e) {
    if (int_rel(e).kind != Rel::shift) throw NotProved{"a peer that is not the root-0 peer shifted by the root", e.span};
  }
  /// A transferred block set: equal (vector blocks) or rotated (rank-indexed blocks).
  void need_blocks(const Expr& e) {
    const SRel s = set_rel(e);
    if (s == SRel::inv || s == (blocked_ ? SRel::rot : SRel::same)) return;
    throw NotProved{blocked_ ? "a block set that does not rotate with the root (rank-indexed blocks)"
                             : "a block set that depends on the root",
                    e.span};
  }

  // ---- statements ----
  void exec_block(const Block& b) {
    for (const StmtPtr& s : b) exec(*s);
  }
  void assign_slot(const Stmt& s) {
    if (s.in_fn) {
      frame_at(s.slot) = int_rel(*s.a);
    } else if (s.a->type == Type::set) {
      st_.sets[size_t(s.slot)] = set_rel(*s.a);
    } else {
      st_.ints[size_t(s.slot)] = int_rel(*s.a);
    }
  }
  Rel& frame_at(int slot) { return st_.frame[frame_base_.back() + size_t(slot)]; }

  /// A loop: the state at its head is the join over every number of iterations (a fixpoint;
  /// the lattice is short, so a few passes).
  template <class Body>
  void loop(const Span& at, Body&& body) {
    for (int pass = 0;; ++pass) {
      tick(at);
      if (pass > 64) throw NotProved{"the symmetry analysis of a loop did not converge", at};
      const State head = st_;
      body();
      State next = joined(head, st_);
      if (next == head) {
        st_ = std::move(next);
        return;
      }
      st_ = std::move(next);
    }
  }

  void exec(const Stmt& s) {
    tick(s.span);
    switch (s.kind) {
      case StmtKind::let:
      case StmtKind::var:
      case StmtKind::assign: assign_slot(s); return;
      case StmtKind::for_: {
        need_eq(*s.a, "a loop bound");
        need_eq(*s.b, "a loop bound");
        loop(s.span, [&] {
          if (s.in_fn) frame_at(s.slot) = Rel::of(Rel::eq);
          else st_.ints[size_t(s.slot)] = Rel::of(Rel::eq);
          exec_block(s.body);
        });
        return;
      }
      case StmtKind::if_: {
        need_eq(*s.a, "a branch condition");
        // Both runs take the same branch: the state after is the join of the branches'.
        const State before = st_;
        exec_block(s.body);
        State then = std::move(st_);
        st_ = before;
        exec_block(s.else_body);
        st_ = joined(then, st_);
        return;
      }
      case StmtKind::send:
      case StmtKind::recv:
        need_blocks(*s.a);
        need_peer(*s.b);
        return;
      case StmtKind::exchange:
        need_blocks(*s.a);
        need_blocks(*s.b);
        need_peer(*s.c);
        return;
      case StmtKind::local:
        need_blocks(*s.a);
        need_blocks(*s.b);
        return;
      case StmtKind::permute: {
        // Block j goes to f(j): equal maps (vector blocks), or f(j + R) == f(j) + R mod p
        // (rank-indexed blocks: j and f(j) in [0, p)).
        st_.ints[size_t(s.slot)] = blocked_ ? Rel::shifted(false, true) : Rel::of(Rel::eq);
        const Rel d = int_rel(*s.a);
        const bool ok = blocked_ ? d.kind == Rel::shift && d.canon : d.is_eq();
        if (!ok) throw NotProved{"a permutation that does not commute with the rotation", s.a->span};
        return;
      }
      case StmtKind::phase:
      case StmtKind::round_block: exec_block(s.body); return;
      case StmtKind::use:
        if (s.group != GroupKind::none)
          throw NotProved{"a phase on a sub-group (its regions are fixed sets of real ranks)", s.group_span};
        if (s.a) need_blocks(*s.a);
        exec_block(s.body);
        return;
      case StmtKind::frames:
        // Rank x plays node (x - root + frames root) mod P and its peers map back by
        // + root: a rotation, for packets that are vector blocks.
        if (blocked_) throw NotProved{"frames with rank-indexed blocks", s.span};
        return;
      case StmtKind::mirror: return;  // replays recorded rounds: a rotation of a rotation
    }
  }

  // ---- int expressions ----
  /// The relation of e's value; throws NotProved where e's evaluation may fail in one run
  /// and not the other (a partial operation on a root-dependent value) or take a
  /// root-dependent branch.
  Rel int_rel(const Expr& e) {
    tick(e.span);
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
    switch (e.kind) {
      case ExprKind::integer:
      case ExprKind::boolean: return EQ;
      case ExprKind::name:
        switch (e.ref) {
          case NameKind::p:
          case NameKind::commutative: return EQ;
          case NameKind::r: return Rel::shifted(false, true);  // (x + R) mod p
          case NameKind::root: return Rel::shifted(true, true);  // 0 + R
          case NameKind::slot: return st_.ints[size_t(e.slot)];
          case NameKind::fn_param: return frame_at(e.slot);
          case NameKind::unresolved: break;
        }
        return TOP;
      case ExprKind::unary: {
        const Rel a = int_rel(*e.kids[0]);
        if (a.is_eq()) return EQ;
        if (e.op == Tok::minus && a.kind == Rel::modp) return a;
        return TOP;  // total: no domain error
      }
      case ExprKind::binary: return binary(e);
      case ExprKind::ternary: {
        need_eq(*e.kids[0], "a condition");
        return join(int_rel(*e.kids[1]), int_rel(*e.kids[2]));
      }
      case ExprKind::call: return call(e);
      default: return TOP;
    }
  }
  Rel binary(const Expr& e) {
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
    if (e.kids[0]->type == Type::set) {
      const SRel x = set_rel(*e.kids[0]), y = set_rel(*e.kids[1]);
      // Equality of sets survives a common rotation (a bijection).
      const bool same = (x == SRel::inv || x == SRel::same) && (y == SRel::inv || y == SRel::same);
      const bool rot = (x == SRel::inv || x == SRel::rot) && (y == SRel::inv || y == SRel::rot);
      return same || rot ? EQ : TOP;
    }
    const Rel a = int_rel(*e.kids[0]);
    if (e.op == Tok::ampamp || e.op == Tok::pipepipe) {
      // The right side runs only for some values of the left: it must not fail differently.
      if (!a.is_eq()) throw NotProved{"a condition that depends on the root", e.kids[0]->span};
      const Rel b = int_rel(*e.kids[1]);
      return b.is_eq() ? EQ : TOP;
    }
    const Rel b = int_rel(*e.kids[1]);
    if (a.is_eq() && b.is_eq()) return EQ;
    const bool congruent_a = a.kind == Rel::eq || a.kind == Rel::modp;
    const bool congruent_b = b.kind == Rel::eq || b.kind == Rel::modp;
    switch (e.op) {
      case Tok::plus:
        if (congruent_a && congruent_b) return Rel::of(Rel::modp);
        if (a.kind == Rel::shift && congruent_b) return Rel::shifted(a.exact && b.is_eq(), false);
        if (b.kind == Rel::shift && congruent_a) return Rel::shifted(b.exact && a.is_eq(), false);
        return TOP;
      case Tok::minus:
        if (congruent_a && congruent_b) return Rel::of(Rel::modp);
        if (a.kind == Rel::shift && congruent_b) return Rel::shifted(a.exact && b.is_eq(), false);
        if (a.kind == Rel::shift && b.kind == Rel::shift) return a.exact && b.exact ? EQ : Rel::of(Rel::modp);
        return TOP;
      case Tok::star: return congruent_a && congruent_b ? Rel::of(Rel::modp) : TOP;
      case Tok::eq:
      case Tok::ne:
        // Two values in [0, p), each shifted by R modulo p, are equal in B iff in A.
        if (a.kind == Rel::shift && b.kind == Rel::shift && a.canon && b.canon) return EQ;
        return TOP;
      case Tok::slash:
      case Tok::percent:
        // Defined unless the divisor is 0: only a root-independent divisor fails alike.
        if (!b.is_eq()) throw NotProved{"a divisor that depends on the root", e.kids[1]->span};
        return TOP;
      case Tok::shl:
      case Tok::shr:
        if (!b.is_eq()) throw NotProved{"a shift amount that depends on the root", e.kids[1]->span};
        return TOP;
      default: return TOP;  // & | ^ < <= > >=: total
    }
  }
  Rel call(const Expr& e) {
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
    if (e.builtin < 0) return fn_call(e);
    const BuiltinId id = BuiltinId(e.builtin);
    if (id == BuiltinId::size) {
      const SRel s = set_rel(*e.kids[0]);
      return s == SRel::inv || s == SRel::same || s == SRel::rot ? EQ : TOP;
    }
    if (id == BuiltinId::contains) {
      const SRel s = set_rel(*e.kids[0]);
      const Rel x = int_rel(*e.kids[1]);
      if ((s == SRel::inv || s == SRel::same) && x.is_eq()) return EQ;
      // A rotated set (B = p) holds (x + R) mod p in B iff x in A.
      if (blocked_ && (s == SRel::inv || s == SRel::rot) && x.kind == Rel::shift && x.canon) return EQ;
      return TOP;
    }
    std::vector<Rel> args;
    for (const ExprPtr& k : e.kids) args.push_back(int_rel(*k));
    bool all_eq = true;
    for (const Rel& a : args) all_eq &= a.is_eq();
    if (all_eq) return EQ;
    switch (id) {
      case BuiltinId::mod: {
        // mod(a, b) fails only for b == 0; mod(a, p) of a value congruent (shifted) modulo
        // p is equal (shifted, in [0, p)).
        if (!args[1].is_eq()) throw NotProved{"a modulus that depends on the root", e.kids[1]->span};
        const bool by_p = e.kids[1]->kind == ExprKind::name && e.kids[1]->ref == NameKind::p;
        if (by_p && args[0].kind == Rel::modp) return EQ;
        if (by_p && args[0].kind == Rel::shift) return Rel::shifted(false, true);
        return TOP;
      }
      case BuiltinId::min:
      case BuiltinId::max:
      case BuiltinId::even:
      case BuiltinId::odd:
      case BuiltinId::is_pow2:
      case BuiltinId::popcount:
      case BuiltinId::ctz:
      case BuiltinId::clz:
      case BuiltinId::nb:
      case BuiltinId::from_nb: return TOP;  // total
      default:
        throw NotProved{std::string("built-in '") + e.name + "' on a value that depends on the root", e.span};
    }
  }
  Rel fn_call(const Expr& e) {
    const FnDecl& f = e.fn >= 0 ? rp_.fns[size_t(e.fn)] : rp_.program->fns[size_t(-2 - e.fn)];
    if (frame_base_.size() > 256) throw NotProved{"fn calls nested too deeply for the symmetry analysis", e.span};
    const size_t base = st_.frame.size();
    for (const ExprPtr& k : e.kids) {
      const Rel v = int_rel(*k);
      st_.frame.push_back(v);
    }
    st_.frame.resize(base + size_t(std::max<int64_t>(f.frame_size, int64_t(e.kids.size()))), Rel{});
    frame_base_.push_back(base);
    exec_block(f.stmts);
    const Rel v = int_rel(*f.body);
    frame_base_.pop_back();
    st_.frame.resize(base);
    return v;
  }

  // ---- set expressions ----
  SRel set_rel(const Expr& e) {
    tick(e.span);
    switch (e.kind) {
      case ExprKind::set_all:
      case ExprKind::set_none: return SRel::inv;
      case ExprKind::set_block: {
        // block(i) is block i mod B: total.
        const Rel i = int_rel(*e.kids[0]);
        if (i.is_eq()) return SRel::same;
        return blocked_ && i.kind == Rel::shift ? SRel::rot : SRel::top;
      }
      case ExprKind::set_range: {
        // [a, b) fails unless 0 <= a <= b <= B: both ends must be equal.
        const Rel a = int_rel(*e.kids[0]), b = int_rel(*e.kids[1]);
        if (a.is_eq() && b.is_eq()) return SRel::same;
        throw NotProved{"a block range whose ends depend on the root (use wrap)", e.span};
      }
      case ExprKind::set_wrap: {
        // wrap [a, b) fails unless 0 <= b - a <= B, and is blocks a mod B .. (b - 1) mod B:
        // with both ends shifted by exactly R it is the same length, rotated.
        const Rel a = int_rel(*e.kids[0]), b = int_rel(*e.kids[1]);
        if (a.is_eq() && b.is_eq()) return SRel::same;
        if (a.kind == Rel::shift && b.kind == Rel::shift && a.exact && b.exact) return blocked_ ? SRel::rot : SRel::top;
        throw NotProved{"a wrapping block range whose length may depend on the root", e.span};
      }
      case ExprKind::set_stride: {
        for (const ExprPtr& k : e.kids)
          if (!int_rel(*k).is_eq()) throw NotProved{"a stride set that depends on the root", e.span};
        return SRel::same;
      }
      case ExprKind::set_filter: {
        // { i in D if c }: c must be equal in both runs for the i that correspond: the same
        // i (vector blocks, or a domain that does not rotate), or i + R (a rotated domain).
        const SRel dom = set_rel(*e.kids[0]);
        SRel out;
        if (blocked_ && (dom == SRel::rot || dom == SRel::inv)) {
          st_.ints[size_t(e.slot)] = Rel::shifted(false, true);
          out = dom == SRel::inv ? SRel::rot : dom;
        } else if (dom == SRel::same || dom == SRel::inv) {
          st_.ints[size_t(e.slot)] = Rel::of(Rel::eq);
          out = SRel::same;
        } else {
          throw NotProved{"a filter over blocks that depend on the root", e.kids[0]->span};
        }
        if (!int_rel(*e.kids[1]).is_eq()) throw NotProved{"a block filter that depends on the root", e.kids[1]->span};
        return out;
      }
      case ExprKind::binary: {
        const SRel x = set_rel(*e.kids[0]), y = set_rel(*e.kids[1]);
        if (x == SRel::inv && y == SRel::inv) return SRel::inv;
        if ((x == SRel::inv || x == SRel::same) && (y == SRel::inv || y == SRel::same)) return SRel::same;
        if ((x == SRel::inv || x == SRel::rot) && (y == SRel::inv || y == SRel::rot)) return SRel::rot;
        return SRel::top;
      }
      case ExprKind::ternary:
        need_eq(*e.kids[0], "a condition");
        return sjoin(set_rel(*e.kids[1]), set_rel(*e.kids[2]));
      case ExprKind::name: return st_.sets[size_t(e.slot)];
      case ExprKind::call: {
        // buf(j, S), bufs(a, b, S): fail for buffers or blocks out of range.
        for (size_t k = 0; k + 1 < e.kids.size(); ++k)
          if (!int_rel(*e.kids[k]).is_eq()) throw NotProved{"a buffer index that depends on the root", e.kids[k]->span};
        const SRel s = set_rel(*e.kids.back());
        if (blocked_ || !(s == SRel::inv || s == SRel::same))
          throw NotProved{"scratch-buffer blocks that depend on the root", e.span};
        return SRel::same;
      }
      default: return SRel::top;
    }
  }

  static constexpr size_t kMaxWork = size_t(1) << 22;
  const RankProgram& rp_;
  bool blocked_;
  State st_;
  std::vector<size_t> frame_base_;
  size_t work_ = 0;
};

}  // namespace

RootSymmetry root_symmetry(const RankProgram& rp) {
  RootSymmetry out;
  if (!collective_is_rooted(rp.collective)) {
    out.reason = "not a rooted collective";
    return out;
  }
  out.rank_blocks = collective_has_rank_blocks(rp.collective);
  if (rp.fold != FoldKind::none) {
    // The body sees v = (x - root) mod p, root 0 and the fold's p: equal in both runs; the
    // fold maps body ranks and rank-indexed blocks to real ones by + root (FoldLayout).
    // `fold ring` keeps a rank's part of the vector, which does not rotate with the blocks.
    if (rp.fold == FoldKind::ring && out.rank_blocks) {
      out.reason = "fold ring with rank-indexed blocks";
      out.at = rp.fold_span;
      return out;
    }
    out.proved = true;
    return out;
  }
  try {
    Analysis(rp).run();
    out.proved = true;
  } catch (const NotProved& n) {
    out.reason = n.why;
    out.at = n.at;
  }
  return out;
}

}  // namespace bine
