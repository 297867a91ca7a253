// bine/collective.hpp: the collectives and the data the two-one fold moves for each.
// Shared by the compiler (instantiation, verification) and the MPI runtime, so both fold
// the same way (docs/language.md, "fold").
#pragma once
#include <string>
#include <cstdint>
#include <vector>

namespace bine {

/// The collectives the language knows (docs/language.md, "Collective contracts"). scan,
/// exscan (prefix reductions, MPI_Scan / MPI_Exscan) and barrier (no data: zero-byte
/// messages, proved by who-has-heard-from-whom) came after the first eight.
enum class Collective { bcast, reduce, allreduce, reduce_scatter, allgather, gather, scatter, alltoall, scan, exscan, barrier };
/// How many collectives there are (the enum's last value + 1).
inline constexpr int kCollectiveCount = int(Collective::barrier) + 1;

/// What a fold round moves: nothing, the whole vector, or the odd virtual rank's own block.
enum class FoldData { none, all, own_block };

/// The elimination around a schedule's body (docs/language.md, "fold"): none, `fold` /
/// `fold 2-1` (two-one elimination to p' = 2^floor(log2 p)), `fold 3-2` (Rabenseifner-Traeff
/// Sec. 3.1/3.3) or `fold ring R` (RT Sec. 3.4; R is stored next to it). One type for the
/// language, the Schedule IR and the runtime.
enum class FoldKind { none, two_one, three_two, ring };

/// The sub-group a composed phase runs on (`phase NAME = SCHEDULE on region|across`,
/// docs/language.md, "Composition on sub-groups"): none (the caller's ranks), the ranks of
/// the caller's region (a node; its own index is local_rank(r)), or the ranks with the
/// caller's local index, one per region (its own index is region(r)). Groups are built from
/// the region layout (docs/topology.md, "Regions in schedules"). `whole`: the caller's own
/// ranks, only its blocks rescaled: a composed schedule that declares fewer blocks than its
/// caller (`phase b = linear_bcast` with `blocks 1` in a `blocks p` allgather), each of its
/// blocks B / b consecutive caller blocks (docs/language.md, "Composition").
enum class GroupKind { none, region, across, whole };
inline const char* group_kind_name(GroupKind g) {
  return g == GroupKind::region ? "region" : g == GroupKind::across ? "across" : g == GroupKind::whole ? "whole" : "none";
}

/// The condition `fold ring R` puts on p, as `check`, the header's `_requires` and the
/// runtime's error text state it: "p % R == 0 (fold ring R)".
inline std::string fold_ring_condition(int64_t R) {
  return "p % " + std::to_string(R) + " == 0 (fold ring " + std::to_string(R) + ")";
}

/// The fold's extra rounds: before the body (prologue) the odd rank v hands its data to
/// v - 1; after it (epilogue) v - 1 hands v its result.
struct FoldSteps {
  FoldData prologue, epilogue;
};

constexpr FoldSteps fold_steps(Collective c) {
  switch (c) {
    case Collective::allreduce: return {FoldData::all, FoldData::all};
    case Collective::reduce: return {FoldData::all, FoldData::none};
    case Collective::bcast: return {FoldData::none, FoldData::all};
    case Collective::reduce_scatter: return {FoldData::all, FoldData::own_block};
    case Collective::allgather: return {FoldData::own_block, FoldData::all};
    case Collective::gather: return {FoldData::own_block, FoldData::none};
    case Collective::scatter: return {FoldData::none, FoldData::own_block};
    case Collective::alltoall:
    case Collective::scan:     // no fold (sema refuses one): a prefix has no
    case Collective::exscan:   // two-one elimination that keeps rank order simple
    case Collective::barrier: return {FoldData::none, FoldData::none};
  }
  return {FoldData::none, FoldData::none};
}

/// Operand order of a reducing receive (the round model, docs/architecture.md): the
/// contribution of the lower real rank is the left operand, so a receive from a lower rank
/// computes `received op own` and one from a higher rank `own op received`. The verifier
/// infers canonical order with this rule and the runtime applies it (MPI_Reduce_local).
constexpr bool received_is_left_operand(int64_t sender, int64_t receiver) { return sender < receiver; }

/// Collectives that combine data with an operator.
constexpr bool collective_reduces(Collective c) {
  return c == Collective::reduce || c == Collective::allreduce || c == Collective::reduce_scatter ||
         c == Collective::scan || c == Collective::exscan;
}

/// Collectives without a fold (sema refuses `fold` for them).
constexpr bool collective_folds(Collective c) {
  return c != Collective::alltoall && c != Collective::scan && c != Collective::exscan && c != Collective::barrier;
}

/// The rank layout of `fold 3-2` (allreduce; Rabenseifner-Traeff, seed
/// rabenseifner-traff-reduction.txt, Sec. 3.1 and the non-overlapping protocol of Sec. 3.3):
/// p = p' + extra with p' = 2^floor(log2 p). When extra is odd, one 3-2 step on real ranks
/// 0, 1, 2 (t = 1): virtual rank 0 is real 0, virtual rank 1 is real 1 helped by real 2.
/// Then u = (extra - t) / 2 pairs of 2-1 steps on four consecutive ranks g .. g+3 each:
/// virtual 2i + t' (t' = 2t) and 2i + 1 + t' are the survivors g and g + 1, shadowed by
/// g + 2 and g + 3. Every other real rank x is virtual x - extra. Shared by the compiler
/// (instantiation) and the MPI runtime, so both use the same layout.
struct ThreeTwo {
  enum class Role { plain, triple0, triple1, triple_shadow, survivor, shadow };
  int64_t p = 1, pv = 1, extra = 0, t = 0;  ///< (extra - t) / 2 groups of four follow the 3-2 step
  explicit ThreeTwo(int64_t p_ = 1) : p(p_) {
    while (pv * 2 <= p) pv *= 2;
    extra = p - pv;
    t = extra & 1;
  }
  /// True for the ranks that help a virtual rank (they sit the body out between rounds A, B
  /// and the epilogue).
  static bool helps(Role r) { return r == Role::shadow || r == Role::triple_shadow; }
  /// Real ranks [0, region_end()) take part in an elimination step.
  int64_t region_end() const { return 2 * extra + t; }
  /// Virtual ranks [0, vregion_end()) are represented by more than one real rank.
  int64_t vregion_end() const { return extra + t; }
  Role role(int64_t x) const {
    if (t && x < 3) return x == 0 ? Role::triple0 : x == 1 ? Role::triple1 : Role::triple_shadow;
    if (x < region_end()) return (x - 3 * t) % 4 < 2 ? Role::survivor : Role::shadow;
    return Role::plain;
  }
  /// The virtual rank real rank x works for (a shadow: the one it helps).
  int64_t virt(int64_t x) const {
    if (t && x < 3) return x == 0 ? 0 : 1;
    if (x < region_end()) return 2 * t + 2 * ((x - 3 * t) / 4) + ((x - 3 * t) % 4) % 2;
    return x - extra;
  }
  /// The real rank that carries virtual rank w through the body (w in [0, p')).
  int64_t survivor(int64_t w) const {
    if (t && w < 2) return w;
    if (w < vregion_end()) return 3 * t + 4 * ((w - 2 * t) / 2) + (w - 2 * t) % 2;
    return w + extra;
  }
  /// The real rank that helps virtual rank w, or -1 (w outside the region, or w = 0 of a 3-2 step).
  int64_t shadow(int64_t w) const {
    if (w >= vregion_end() || (t && w == 0)) return -1;
    return t && w == 1 ? 2 : survivor(w) + 2;
  }
};

/// One local statement of the `fold ring R` reduction: buffer `src` into buffer `dst`
/// (0: the vector, t: scratch buffer t), reducing (dst = src op dst) or copying.
struct RingLocal {
  int64_t src, dst;
  bool reduce;
};
/// `fold ring R` (allreduce; Rabenseifner-Traeff Sec. 3.4, reductions postponed as its
/// requirements 1-2 demand): in prologue round t = 1 .. R-1, member c of a ring of R
/// consecutive ranks sends part (c + t) mod R of its vector to member (c + t) mod R and
/// receives its own part c from member (c - t) mod R into scratch buffer t, so the piece of
/// member j is in buffer (c - j) mod R (0: its own, in the vector). After the last round it
/// reduces x_0 op (x_1 op (... op x_{R-1})), the same bracketing on every member,
/// accumulating in the buffer of x_{R-1}, then copies into the vector if that is not it.
/// Shared by the compiler and the MPI runtime.
inline std::vector<RingLocal> ring_reductions(int64_t R, int64_t c) {
  auto buffer_of = [&](int64_t j) { return ((c - j) % R + R) % R; };
  std::vector<RingLocal> out;
  const int64_t acc = buffer_of(R - 1);
  for (int64_t j = R - 2; j >= 0; --j) out.push_back({buffer_of(j), acc, true});
  if (acc != 0) out.push_back({acc, 0, false});
  return out;
}

}  // namespace bine
