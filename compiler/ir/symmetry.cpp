#include "symmetry.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "builtins_table.h"
#include "token.h"

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

// The bounds that make the relations above hold for the integers themselves: `+ - *` wrap
// around 2^64 (language.md), and a wrapped sum is congruent to the exact one modulo 2^64,
// not modulo p. So every root-dependent `+ - *` must be proved not to wrap, from the range
// each value lies in (in either run, at every p and root):
constexpr int64_t kMaxRanks = (int64_t(1) << 31) - 1;  ///< p: an MPI communicator's size is an int
constexpr int64_t kMaxBlocks = int64_t(1) << 24;       ///< B * (scratch + 1) (language.md, `blocks`)
using i128 = __int128;

/// The values an int expression (or a bool: 0, 1) may take in either run: [lo, hi], or
/// empty (lo > hi) where it has none yet (a slot not assigned on this path).
struct Itv {
  int64_t lo = 1, hi = 0;
  static Itv of(int64_t a, int64_t b) { return Itv{a, b}; }
  static Itv all() { return Itv{INT64_MIN, INT64_MAX}; }
  static Itv boolean() { return Itv{0, 1}; }
  bool empty() const { return lo > hi; }
  bool operator==(const Itv& o) const { return (empty() && o.empty()) || (lo == o.lo && hi == o.hi); }
  bool operator!=(const Itv& o) const { return !(*this == o); }
};

Itv hull(Itv a, Itv b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return Itv{std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}
/// An operand's range; none yet (read before any assignment) counts as any value.
Itv known(Itv a) { return a.empty() ? Itv::all() : a; }
/// The exact (unwrapped) result range [lo, hi]: itself where it fits in 64 bits (*fits), else
/// every value (the wrapped results may be anywhere).
Itv exact(i128 lo, i128 hi, bool* fits = nullptr) {
  const bool f = lo >= i128(INT64_MIN) && hi <= i128(INT64_MAX);
  if (fits) *fits = f;
  return f ? Itv{int64_t(lo), int64_t(hi)} : Itv::all();
}
i128 mag(int64_t x) { return x < 0 ? -i128(x) : i128(x); }
/// floor(log2 x) and ceil(log2 x) for x >= 1.
int64_t floor_log2(int64_t x) { return 63 - __builtin_clzll(uint64_t(x)); }
int64_t ceil_log2_of(int64_t x) { return x <= 1 ? 0 : floor_log2(x - 1) + 1; }
/// 2^k - 1 >= x for x >= 0: every bit up to x's highest.
int64_t fill_bits(int64_t x) { return x <= 0 ? 0 : int64_t((uint64_t(1) << floor_log2(x)) * 2 - 1); }

/// An int or bool value of the two runs: how run B's relates to run A's, and where both lie.
struct Val {
  Rel rel;
  Itv range;
  bool operator==(const Val& o) const { return rel == o.rel && range == o.range; }
};
Val vjoin(const Val& a, const Val& b) { return Val{join(a.rel, b.rel), hull(a.range, b.range)}; }

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

/// What run B shifts: the root (root_symmetry(): run B is rank (x + R) mod p with root R)
/// or the rank alone (translation_symmetry(): rank (x + d) mod p, the same root).
enum class Shift : uint8_t { root, rank };

class Analysis {
 public:
  /// `rotate`: block sets must rotate with the shift (B = p); else they must be equal.
  Analysis(const RankProgram& rp, Shift shift, bool rotate) : rp_(rp), blocked_(rotate), shift_(shift) {
    st_.ints.assign(size_t(rp.num_slots), Val{});
    st_.sets.assign(size_t(rp.num_slots), SRel::bot);
  }

  void run() {
    if (blocked_) {
      // Block b is rank b's: rotating the ranks rotates the blocks modulo p, so B must be p.
      if (rp_.blocks && !(rp_.blocks->kind == ExprKind::name && rp_.blocks->ref == NameKind::p))
        throw NotProved{"rank-indexed blocks with a block count other than p", rp_.blocks->span};
      if (rp_.scratch) throw NotProved{"rank-indexed blocks with scratch buffers", rp_.scratch->span};
    }
    for (const Binding& b : rp_.params) st_.ints[size_t(b.slot)] = value(*b.value);
    for (const ExprPtr& e : rp_.requires_) need_eq(*e, "the requirement");
    if (rp_.blocks) need_eq(*rp_.blocks, "the block count");
    if (rp_.scratch) need_eq(*rp_.scratch, "the scratch buffer count");
    if (rp_.segment) need_eq(*rp_.segment, "the segment size");
    for (const InlinedUse& u : rp_.uses) {
      if (u.group != GroupKind::none)
        throw NotProved{"a phase on a sub-group (its regions are fixed sets of real ranks)", u.site->group_span};
      for (const Binding& b : u.params) st_.ints[size_t(b.slot)] = value(*b.value);
      for (const ExprPtr& e : u.requires_) need_eq(*e, "the composed schedule's requirement");
      if (u.blocks) need_eq(*u.blocks, "the composed schedule's block count");
      // Fewer blocks than the caller's are rescaled (each b-th of the caller's blocks): a
      // rotation of rank-indexed blocks commutes with that only for b = p (nothing to map)
      // and b = 1 (its one block is every block).
      if (blocked_ && u.blocks && !(u.blocks->kind == ExprKind::name && u.blocks->ref == NameKind::p) &&
          !(u.blocks->kind == ExprKind::integer && u.blocks->value == 1))
        throw NotProved{"a composed schedule whose block count may differ from p (its blocks would be rescaled)", u.blocks->span};
      if (u.scratch) need_eq(*u.scratch, "the composed schedule's scratch buffer count");
      if (u.segment) need_eq(*u.segment, "the composed schedule's segment size");
    }
    exec_block(rp_.body);
  }

 private:
  struct State {
    std::vector<Val> ints;
    std::vector<SRel> sets;
    std::vector<Val> frame;  ///< the fn frames' slots (ints)
    bool operator==(const State& o) const { return ints == o.ints && sets == o.sets && frame == o.frame; }
  };
  static State joined(const State& a, const State& b) {
    State out = a;
    for (size_t i = 0; i < out.ints.size(); ++i) out.ints[i] = vjoin(a.ints[i], b.ints[i]);
    for (size_t i = 0; i < out.sets.size(); ++i) out.sets[i] = sjoin(a.sets[i], b.sets[i]);
    for (size_t i = 0; i < out.frame.size() && i < b.frame.size(); ++i) out.frame[i] = vjoin(a.frame[i], b.frame[i]);
    return out;
  }
  /// Widening: a range still growing after kWidenAfter passes of a loop (a value that
  /// changes every iteration, `w = w + d`) becomes every value, so the fixpoint is reached.
  static void widen(const State& head, State& next) {
    auto w = [](const std::vector<Val>& h, std::vector<Val>& n) {
      for (size_t i = 0; i < n.size() && i < h.size(); ++i)
        if (n[i].range != h[i].range && !n[i].range.empty()) n[i].range = Itv::all();
    };
    w(head.ints, next.ints);
    w(head.frame, next.frame);
  }

  void tick(const Span& at) {
    if (++work_ > kMaxWork) throw NotProved{"the program is too large for the symmetry analysis", at};
  }
  void need_eq(const Expr& e, const char* what) {
    if (!value(e).rel.is_eq()) throw NotProved{std::string(what) + " depends on the root", e.span};
  }
  /// A peer must be run A's peer plus R modulo p (the pipeline takes peers modulo p).
  void need_peer(const Expr& e) {
    if (value(e).rel.kind != Rel::shift) throw NotProved{"a peer that is not the root-0 peer shifted by the root", e.span};
  }
  /// A transferred block set: equal (vector blocks) or rotated (rank-indexed blocks).
  void need_blocks(const Expr& e) {
    const SRel s = set_rel(e);
    if (s == SRel::inv || s == (blocked_ ? SRel::rot : SRel::same)) return;
    throw NotProved{blocked_ ? "a block set that does not rotate with the root (rank-indexed blocks)"
                             : "a block set that depends on the root",
                    e.span};
  }
  /// A root-dependent `+ - *` (or unary `-`) whose relation is congruent or shifted holds
  /// that relation for the exact integers only: it must not wrap around 2^64 in either run.
  static void need_no_wrap(const Val& a, const Val& b, const Rel& out, bool fits, const Expr& e) {
    if (fits || (a.rel.is_eq() && b.rel.is_eq())) return;
    if (out.kind == Rel::modp || out.kind == Rel::shift)
      throw NotProved{std::string("root-dependent arithmetic ('") + op_spelling(e.op) + "') that may wrap around 2^64",
                      e.span};
  }

  // ---- statements ----
  void exec_block(const Block& b) {
    for (const StmtPtr& s : b) exec(*s);
  }
  void assign_slot(const Stmt& s) {
    if (s.in_fn) {
      frame_at(s.slot) = value(*s.a);
    } else if (s.a->type == Type::set) {
      st_.sets[size_t(s.slot)] = set_rel(*s.a);
    } else {
      st_.ints[size_t(s.slot)] = value(*s.a);
    }
  }
  Val& frame_at(int slot) { return st_.frame[frame_base_.back() + size_t(slot)]; }

  /// A loop: the state at its head is the join over every number of iterations (a fixpoint;
  /// the relations form a short lattice, and ranges are widened: a few passes).
  template <class Body>
  void loop(const Span& at, Body&& body) {
    for (int pass = 0;; ++pass) {
      tick(at);
      if (pass > 64) throw NotProved{"the symmetry analysis of a loop did not converge", at};
      const State head = st_;
      body();
      State next = joined(head, st_);
      if (pass >= kWidenAfter) widen(head, next);
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
        const Val lo = value(*s.a);
        if (!lo.rel.is_eq()) throw NotProved{"a loop bound depends on the root", s.a->span};
        const Val hi = value(*s.b);
        if (!hi.rel.is_eq()) throw NotProved{"a loop bound depends on the root", s.b->span};
        // The variable runs over [lo, hi - 1] (any range where the loop never runs).
        const Itv l = known(lo.range), h = known(hi.range);
        const Val var{Rel::of(Rel::eq), Itv::of(l.lo, std::max(l.lo, h.hi == INT64_MIN ? l.lo : h.hi - 1))};
        loop(s.span, [&] {
          if (s.in_fn) frame_at(s.slot) = var;
          else st_.ints[size_t(s.slot)] = var;
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
        st_.ints[size_t(s.slot)] =
            Val{blocked_ ? Rel::shifted(false, true) : Rel::of(Rel::eq), Itv::of(0, kMaxBlocks - 1)};
        const Rel d = value(*s.a).rel;
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
        // + root: a rotation, for packets that are vector blocks. Under a rank shift the
        // frames root stays where it is.
        if (shift_ == Shift::rank) throw NotProved{"frames (the frames root is a fixed rank)", s.span};
        if (blocked_) throw NotProved{"frames with rank-indexed blocks", s.span};
        return;
      case StmtKind::mirror: return;  // replays recorded rounds: a rotation of a rotation
    }
  }

  // ---- int expressions ----
  /// The relation and range of e's value; throws NotProved where e's evaluation may fail in
  /// one run and not the other (a partial operation on a root-dependent value), take a
  /// root-dependent branch, or wrap around 2^64 where its relation needs the exact value.
  Val value(const Expr& e) {
    tick(e.span);
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
    switch (e.kind) {
      case ExprKind::integer:
      case ExprKind::boolean: return Val{EQ, Itv::of(e.value, e.value)};
      case ExprKind::name:
        switch (e.ref) {
          case NameKind::p: return Val{EQ, Itv::of(1, kMaxRanks)};
          case NameKind::commutative: return Val{EQ, Itv::boolean()};
          // Root shift: r is (x + R) mod p, root 0 + R (the exact shift). Rank shift: the
          // shift of this pair of runs is D = r_B - r_A (d or d - p, congruent to d modulo
          // p), so r is exactly shifted and root (0 in both: an unrooted collective) equal.
          case NameKind::r: return Val{Rel::shifted(shift_ == Shift::rank, true), Itv::of(0, kMaxRanks - 1)};
          case NameKind::root:
            if (shift_ == Shift::rank) return Val{EQ, Itv::of(0, 0)};
            return Val{Rel::shifted(true, true), Itv::of(0, kMaxRanks - 1)};
          case NameKind::slot: return st_.ints[size_t(e.slot)];
          case NameKind::fn_param: return frame_at(e.slot);
          case NameKind::unresolved: break;
        }
        return Val{TOP, Itv::all()};
      case ExprKind::unary: {
        const Val a = value(*e.kids[0]);
        const Itv x = known(a.range);
        Itv range = Itv::all();
        bool fits = true;
        if (e.op == Tok::minus) range = exact(-i128(x.hi), -i128(x.lo), &fits);
        else if (e.op == Tok::tilde) range = Itv::of(~x.hi, ~x.lo);
        else if (e.op == Tok::bang) range = Itv::boolean();
        if (a.rel.is_eq()) return Val{EQ, range};
        if (e.op == Tok::minus && a.rel.kind == Rel::modp) {
          need_no_wrap(a, a, a.rel, fits, e);
          return Val{a.rel, range};
        }
        return Val{TOP, range};  // total: no domain error
      }
      case ExprKind::binary: return binary(e);
      case ExprKind::ternary: {
        need_eq(*e.kids[0], "a condition");
        return vjoin(value(*e.kids[1]), value(*e.kids[2]));
      }
      case ExprKind::call: return call(e);
      default: return Val{TOP, Itv::all()};
    }
  }
  Val binary(const Expr& e) {
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
    if (e.kids[0]->type == Type::set) {
      const SRel x = set_rel(*e.kids[0]), y = set_rel(*e.kids[1]);
      // Equality of sets survives a common rotation (a bijection).
      const bool same = (x == SRel::inv || x == SRel::same) && (y == SRel::inv || y == SRel::same);
      const bool rot = (x == SRel::inv || x == SRel::rot) && (y == SRel::inv || y == SRel::rot);
      return Val{same || rot ? EQ : TOP, Itv::boolean()};
    }
    const Val a = value(*e.kids[0]);
    if (e.op == Tok::ampamp || e.op == Tok::pipepipe) {
      // The right side runs only for some values of the left: it must not fail differently.
      if (!a.rel.is_eq()) throw NotProved{"a condition that depends on the root", e.kids[0]->span};
      const Val b = value(*e.kids[1]);
      return Val{b.rel.is_eq() ? EQ : TOP, Itv::boolean()};
    }
    const Val b = value(*e.kids[1]);
    bool fits = true;
    const Itv range = binary_range(e.op, known(a.range), known(b.range), &fits);
    const Rel rel = binary_rel(e, a.rel, b.rel);
    if (e.op == Tok::plus || e.op == Tok::minus || e.op == Tok::star) need_no_wrap(a, b, rel, fits, e);
    return Val{rel, range};
  }
  /// The relation of `a op b`'s value (binary(), without the ranges).
  Rel binary_rel(const Expr& e, const Rel& a, const Rel& b) {
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
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
        // (a + R) - (b + R) == a - b, also where the difference wraps (the same in both runs).
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
  /// The range of `a op b` for operands in x and y (language.md: `+ - *` wrap, `/` and `%`
  /// as in C, `>>` arithmetic); *fits: `+ - *` stay in 64 bits, so the range is exact.
  static Itv binary_range(Tok op, Itv x, Itv y, bool* fits) {
    *fits = true;
    switch (op) {
      case Tok::plus: return exact(i128(x.lo) + y.lo, i128(x.hi) + y.hi, fits);
      case Tok::minus: return exact(i128(x.lo) - y.hi, i128(x.hi) - y.lo, fits);
      case Tok::star: {
        const i128 c[4] = {i128(x.lo) * y.lo, i128(x.lo) * y.hi, i128(x.hi) * y.lo, i128(x.hi) * y.hi};
        return exact(*std::min_element(c, c + 4), *std::max_element(c, c + 4), fits);
      }
      case Tok::slash: {
        // Truncation toward zero: monotone in each operand for a divisor of one sign.
        if (y.lo >= 1 || (y.hi <= -1 && x.lo > INT64_MIN)) {
          const i128 c[4] = {i128(x.lo) / y.lo, i128(x.lo) / y.hi, i128(x.hi) / y.lo, i128(x.hi) / y.hi};
          return exact(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
        }
        const i128 m = std::max(mag(x.lo), mag(x.hi));  // |a / b| <= |a| (b = -1 wraps INT64_MIN)
        return x.lo == INT64_MIN ? Itv::all() : exact(-m, m);
      }
      case Tok::percent: {
        // The sign of the dividend, |a % b| < |b| and <= |a|.
        const i128 mb = std::max(mag(y.lo), mag(y.hi)) - 1;
        const i128 up = std::min(i128(std::max<int64_t>(x.hi, 0)), mb);
        const i128 down = std::min(x.lo < 0 ? mag(x.lo) : i128(0), mb);
        return exact(-std::max(down, i128(0)), std::max(up, i128(0)));
      }
      case Tok::shl: {
        // Amounts outside 0..63 are domain errors: no value.
        const int64_t s0 = std::max<int64_t>(y.lo, 0), s1 = std::min<int64_t>(y.hi, 63);
        if (s0 > s1 || x.lo < 0) return Itv::all();
        const i128 top = i128(x.hi) << s1;
        return top <= i128(INT64_MAX) ? Itv::of(int64_t(i128(x.lo) << s0), int64_t(top)) : Itv::all();
      }
      case Tok::shr: {
        const int64_t s0 = std::max<int64_t>(y.lo, 0), s1 = std::min<int64_t>(y.hi, 63);
        if (s0 > s1) return Itv::all();
        return Itv::of(std::min(x.lo >> s0, x.lo >> s1), std::max(x.hi >> s0, x.hi >> s1));
      }
      case Tok::amp:
        if (x.lo >= 0 && y.lo >= 0) return Itv::of(0, std::min(x.hi, y.hi));
        if (x.lo >= 0) return Itv::of(0, x.hi);
        if (y.lo >= 0) return Itv::of(0, y.hi);
        return Itv::all();
      case Tok::pipe:
        if (x.lo >= 0 && y.lo >= 0) return Itv::of(std::max(x.lo, y.lo), fill_bits(std::max(x.hi, y.hi)));
        return Itv::all();
      case Tok::caret:
        if (x.lo >= 0 && y.lo >= 0) return Itv::of(0, fill_bits(std::max(x.hi, y.hi)));
        return Itv::all();
      default: return Itv::boolean();  // == != < <= > >=
    }
  }
  Val call(const Expr& e) {
    const Rel EQ = Rel::of(Rel::eq), TOP = Rel::of(Rel::top);
    if (e.builtin < 0) return fn_call(e);
    const BuiltinId id = BuiltinId(e.builtin);
    if (id == BuiltinId::size) {
      const SRel s = set_rel(*e.kids[0]);
      return Val{s == SRel::inv || s == SRel::same || s == SRel::rot ? EQ : TOP, Itv::of(0, kMaxBlocks)};
    }
    if (id == BuiltinId::contains) {
      const SRel s = set_rel(*e.kids[0]);
      const Rel x = value(*e.kids[1]).rel;
      if ((s == SRel::inv || s == SRel::same) && x.is_eq()) return Val{EQ, Itv::boolean()};
      // A rotated set (B = p) holds (x + R) mod p in B iff x in A.
      if (blocked_ && (s == SRel::inv || s == SRel::rot) && x.kind == Rel::shift && x.canon) return Val{EQ, Itv::boolean()};
      return Val{TOP, Itv::boolean()};
    }
    std::vector<Val> args;
    for (const ExprPtr& k : e.kids) args.push_back(value(*k));
    const Itv range = builtin_range(id, args);
    bool all_eq = true;
    for (const Val& a : args) all_eq &= a.rel.is_eq();
    if (all_eq) return Val{EQ, range};
    switch (id) {
      case BuiltinId::mod: {
        // mod(a, b) fails only for b == 0; mod(a, p) of a value congruent (shifted) modulo
        // p is equal (shifted, in [0, p)).
        if (!args[1].rel.is_eq()) throw NotProved{"a modulus that depends on the root", e.kids[1]->span};
        const bool by_p = e.kids[1]->kind == ExprKind::name && e.kids[1]->ref == NameKind::p;
        if (by_p && args[0].rel.kind == Rel::modp) return Val{EQ, range};
        if (by_p && args[0].rel.kind == Rel::shift) return Val{Rel::shifted(false, true), range};
        return Val{TOP, range};
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
      case BuiltinId::from_nb: return Val{TOP, range};  // total
      default:
        throw NotProved{std::string("built-in '") + e.name + "' on a value that depends on the root", e.span};
    }
  }
  /// The range of a built-in's value (runtime/include/bine/builtins.hpp) for arguments in
  /// the given ranges; arguments outside a built-in's domain are errors, so give no value.
  static Itv builtin_range(BuiltinId id, const std::vector<Val>& args) {
    auto arg = [&](size_t i) { return i < args.size() ? known(args[i].range) : Itv::all(); };
    const Itv x = arg(0), y = arg(1);
    // An exponent or width k clipped to 0..62: [2^k0, 2^k1] (lowmask: minus 1).
    auto pow_range = [&](int64_t minus) {
      const int64_t k0 = std::max<int64_t>(x.lo, 0), k1 = std::min<int64_t>(x.hi, 62);
      if (k0 > k1) return Itv::all();
      return Itv::of((int64_t(1) << k0) - minus, (int64_t(1) << k1) - minus);
    };
    switch (id) {
      case BuiltinId::log2: return Itv::of(floor_log2(std::max<int64_t>(x.lo, 1)), floor_log2(std::max<int64_t>(x.hi, 1)));
      case BuiltinId::ceil_log2:
        return Itv::of(ceil_log2_of(std::max<int64_t>(x.lo, 1)), ceil_log2_of(std::max<int64_t>(x.hi, 1)));
      case BuiltinId::pow2: return pow_range(0);
      case BuiltinId::lowmask: return pow_range(1);
      case BuiltinId::popcount:
      case BuiltinId::ctz:
      case BuiltinId::clz: return Itv::of(0, 64);
      case BuiltinId::bitrev: {
        const int64_t b1 = std::min<int64_t>(y.hi, 62);
        return b1 < 0 ? Itv::all() : Itv::of(0, (int64_t(1) << b1) - 1);
      }
      case BuiltinId::is_pow2:
      case BuiltinId::even:
      case BuiltinId::odd:
      case BuiltinId::equal_regions: return Itv::boolean();
      case BuiltinId::min: return Itv::of(std::min(x.lo, y.lo), std::min(x.hi, y.hi));
      case BuiltinId::max: return Itv::of(std::max(x.lo, y.lo), std::max(x.hi, y.hi));
      case BuiltinId::mod: {
        // In [0, |b|), and at most a where a >= 0.
        i128 hi = std::max(mag(y.lo), mag(y.hi)) - 1;
        if (x.lo >= 0) hi = std::min(hi, i128(x.hi));
        return exact(0, std::max(hi, i128(0)));
      }
      case BuiltinId::nb: return Itv::of(0, (int64_t(1) << 32) - 1);  // 32 bits
      case BuiltinId::from_nb:
      case BuiltinId::rho: return Itv::of(-(int64_t(1) << 31), (int64_t(1) << 31) - 1);  // signed 32 bits
      case BuiltinId::nu:
      case BuiltinId::nu_inv: return Itv::of(0, (int64_t(1) << 30) - 1);  // ranks of p <= 2^30
      case BuiltinId::regions:
      case BuiltinId::region:
      case BuiltinId::local_rank:
      case BuiltinId::region_size:
      case BuiltinId::region_rank: return Itv::of(0, kMaxRanks);
      default: return Itv::all();
    }
  }
  Val fn_call(const Expr& e) {
    const FnDecl& f = e.fn >= 0 ? rp_.fns[size_t(e.fn)] : rp_.program->fns[size_t(-2 - e.fn)];
    if (frame_base_.size() > 256) throw NotProved{"fn calls nested too deeply for the symmetry analysis", e.span};
    const size_t base = st_.frame.size();
    for (const ExprPtr& k : e.kids) {
      const Val v = value(*k);
      st_.frame.push_back(v);
    }
    st_.frame.resize(base + size_t(std::max<int64_t>(f.frame_size, int64_t(e.kids.size()))), Val{});
    frame_base_.push_back(base);
    exec_block(f.stmts);
    const Val v = value(*f.body);
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
        const Rel i = value(*e.kids[0]).rel;
        if (i.is_eq()) return SRel::same;
        return blocked_ && i.kind == Rel::shift ? SRel::rot : SRel::top;
      }
      case ExprKind::set_range: {
        // [a, b) fails unless 0 <= a <= b <= B: both ends must be equal.
        const Rel a = value(*e.kids[0]).rel, b = value(*e.kids[1]).rel;
        if (a.is_eq() && b.is_eq()) return SRel::same;
        throw NotProved{"a block range whose ends depend on the root (use wrap)", e.span};
      }
      case ExprKind::set_wrap: {
        // wrap [a, b) fails unless 0 <= b - a <= B, and is blocks a mod B .. (b - 1) mod B:
        // with both ends shifted by exactly R it is the same length, rotated.
        const Rel a = value(*e.kids[0]).rel, b = value(*e.kids[1]).rel;
        if (a.is_eq() && b.is_eq()) return SRel::same;
        if (a.kind == Rel::shift && b.kind == Rel::shift && a.exact && b.exact) return blocked_ ? SRel::rot : SRel::top;
        throw NotProved{"a wrapping block range whose length may depend on the root", e.span};
      }
      case ExprKind::set_stride: {
        for (const ExprPtr& k : e.kids)
          if (!value(*k).rel.is_eq()) throw NotProved{"a stride set that depends on the root", e.span};
        return SRel::same;
      }
      case ExprKind::set_filter: {
        // { i in D if c }: c must be equal in both runs for the i that correspond: the same
        // i (vector blocks, or a domain that does not rotate), or i + R (a rotated domain).
        // i is a block index, below B * (scratch + 1).
        const SRel dom = set_rel(*e.kids[0]);
        const Itv index = Itv::of(0, kMaxBlocks - 1);
        SRel out;
        if (blocked_ && (dom == SRel::rot || dom == SRel::inv)) {
          st_.ints[size_t(e.slot)] = Val{Rel::shifted(false, true), index};
          out = dom == SRel::inv ? SRel::rot : dom;
        } else if (dom == SRel::same || dom == SRel::inv) {
          st_.ints[size_t(e.slot)] = Val{Rel::of(Rel::eq), index};
          out = SRel::same;
        } else {
          throw NotProved{"a filter over blocks that depend on the root", e.kids[0]->span};
        }
        if (!value(*e.kids[1]).rel.is_eq()) throw NotProved{"a block filter that depends on the root", e.kids[1]->span};
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
          if (!value(*e.kids[k]).rel.is_eq()) throw NotProved{"a buffer index that depends on the root", e.kids[k]->span};
        const SRel s = set_rel(*e.kids.back());
        if (blocked_ || !(s == SRel::inv || s == SRel::same))
          throw NotProved{"scratch-buffer blocks that depend on the root", e.span};
        return SRel::same;
      }
      default: return SRel::top;
    }
  }

  static constexpr size_t kMaxWork = size_t(1) << 22;
  static constexpr int kWidenAfter = 2;  ///< loop passes with exact ranges before widening
  const RankProgram& rp_;
  bool blocked_;
  Shift shift_;
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
    Analysis(rp, Shift::root, out.rank_blocks).run();
    out.proved = true;
  } catch (const NotProved& n) {
    out.reason = n.why;
    out.at = n.at;
  }
  return out;
}

namespace {

/// The root analysis' reason in the words of a rank shift.
std::string rank_words(std::string why) {
  static const std::pair<const char*, const char*> kWords[] = {
      {"the root-0 peer shifted by the root", "rank 0's peer shifted by the rank"},
      {"root-dependent", "rank-dependent"},
      {"on the root", "on the rank"},
      {"with the root", "with the rank"},
  };
  for (const auto& [from, to] : kWords)
    for (size_t at = why.find(from); at != std::string::npos; at = why.find(from, at + std::string(to).size()))
      why.replace(at, std::string(from).size(), to);
  return why;
}

}  // namespace

TranslationSymmetry translation_symmetry(const RankProgram& rp) {
  TranslationSymmetry out;
  if (collective_is_rooted(rp.collective)) {
    out.reason = "a rooted collective (the root is a fixed rank)";
    return out;
  }
  if (rp.fold != FoldKind::none) {
    out.reason = "a fold (it sets fixed ranks aside)";
    out.at = rp.fold_span;
    return out;
  }
  // Rank-indexed blocks rotate with the ranks; vector blocks rotate where B is p and the
  // program proves so (ring allreduce: rank r's part is block r), else stay.
  const bool rank_blocks = collective_has_rank_blocks(rp.collective);
  const bool b_is_p = rp.blocks && rp.blocks->kind == ExprKind::name && rp.blocks->ref == NameKind::p && !rp.scratch;
  NotProved first{"", Span{}};
  for (const bool rotate : {true, false}) {
    if (rotate != rank_blocks && (rank_blocks || !b_is_p)) continue;
    try {
      Analysis(rp, Shift::rank, rotate).run();
      out.proved = true;
      out.rotate_blocks = rotate;
      return out;
    } catch (const NotProved& n) {
      if (first.why.empty()) first = n;
    }
  }
  out.reason = rank_words(first.why);
  out.at = first.at;
  return out;
}

}  // namespace bine
