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

/// The irregular (`v`) form of a collective in the MPI target's C ABI: its parameters (the
/// MPI v collective's, with size_t counts and displacements), the names in them, the
/// Context call that starts it, the MPI collective it mirrors, what the header says about
/// where the counts come from, and whether only the root knows them (they are broadcast
/// first).
struct IrregularForm {
  const char* params;
  const char* names;
  const char* begin;
  const char* mpi;
  const char* counts;
  bool rooted;
};

/// Everything the compiler, the runtimes, the PMPI library and the dispatchers need to know
/// about one collective, in one place (docs/architecture.md, "Adding a collective"): its name
/// in the language, its selection key (the PMPI table's and `tune`'s name, the MPI call's
/// without `MPI_`), the MPI function, whether it has a root, reduces, indexes blocks by rank
/// (block i is rank i's: gather, scatter, allgather, reduce_scatter, alltoall's grid), may
/// carry a `fold` and what the fold's rounds move, the MPI target's C parameter list (the
/// MPI collective's with size_t counts) with the names in it, its irregular form, and each
/// rank's buffer sizes in units of the API count.
/// The size of one rank's send or receive buffer: none, `count` elements, or `p count`.
enum class Extent { none, count, p_count };
/// A collective's buffer sizes at the root and at the other ranks (the unrooted ones: the
/// same at both).
struct BufferExtents {
  Extent in_root, in_other, out_root, out_other;
};

struct CollectiveInfo {
  Collective c;
  const char* name;
  const char* key;
  const char* mpi;
  bool rooted, reduces, rank_blocks, folds;
  FoldSteps fold;
  const char* params;
  const char* args;
  IrregularForm v;  ///< params null: none
  BufferExtents buffers;      ///< per rank, in elements of the API count (device_plan.hpp's buffer_elems())
  const char* count_meaning;  ///< what the API `count` counts (the generated headers' comments)
};

namespace detail {
inline constexpr const char* kReduceAllParams =
    "const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm";
inline constexpr const char* kReduceAllArgs = "sendbuf, recvbuf, count, datatype, op, comm";
inline constexpr const char* kBlocksParams =
    "const void* sendbuf, size_t sendcount, MPI_Datatype sendtype, void* recvbuf, size_t recvcount, "
    "MPI_Datatype recvtype, MPI_Comm comm";
inline constexpr const char* kBlocksArgs = "sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm";
inline constexpr const char* kRootedBlocksParams =
    "const void* sendbuf, size_t sendcount, MPI_Datatype sendtype, void* recvbuf, size_t recvcount, "
    "MPI_Datatype recvtype, int root, MPI_Comm comm";
inline constexpr const char* kRootedBlocksArgs = "sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm";
inline constexpr IrregularForm kNoV = {nullptr, nullptr, nullptr, nullptr, nullptr, false};
}  // namespace detail

/// The collectives, in the order of `Collective`.
inline constexpr CollectiveInfo kCollectives[kCollectiveCount] = {
    {Collective::bcast, "bcast", "bcast", "MPI_Bcast", true, false, false, true, {FoldData::none, FoldData::all},
     "void* buffer, size_t count, MPI_Datatype datatype, int root, MPI_Comm comm", "buffer, count, datatype, root, comm",
     detail::kNoV,
     {Extent::count, Extent::none, Extent::count, Extent::count}, "elements of the vector"},
    {Collective::reduce, "reduce", "reduce", "MPI_Reduce", true, true, false, true, {FoldData::all, FoldData::none},
     "const void* sendbuf, void* recvbuf, size_t count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm",
     "sendbuf, recvbuf, count, datatype, op, root, comm", detail::kNoV,
     {Extent::count, Extent::count, Extent::count, Extent::none}, "elements of the vector"},
    {Collective::allreduce, "allreduce", "allreduce", "MPI_Allreduce", false, true, false, true,
     {FoldData::all, FoldData::all}, detail::kReduceAllParams, detail::kReduceAllArgs, detail::kNoV,
     {Extent::count, Extent::count, Extent::count, Extent::count}, "elements of the vector"},
    {Collective::reduce_scatter, "reduce_scatter", "reduce_scatter_block", "MPI_Reduce_scatter_block", false, true, true,
     true, {FoldData::all, FoldData::own_block},
     "const void* sendbuf, void* recvbuf, size_t recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
     "sendbuf, recvbuf, recvcount, datatype, op, comm",
     {"const void* sendbuf, void* recvbuf, const size_t* recvcounts, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
      "sendbuf, recvbuf, recvcounts, datatype, op, comm", "begin_reduce_scatterv", "MPI_Reduce_scatter",
      "every rank passes the same recvcounts;\n/// sendbuf holds the p blocks back to back, block i recvcounts[i] elements",
      false},
     {Extent::p_count, Extent::p_count, Extent::count, Extent::count}, "elements of each rank's result block (sendbuf: p blocks)"},
    {Collective::allgather, "allgather", "allgather", "MPI_Allgather", false, false, true, true,
     {FoldData::own_block, FoldData::all}, detail::kBlocksParams, detail::kBlocksArgs,
     {"const void* sendbuf, size_t sendcount, MPI_Datatype sendtype, void* recvbuf, const size_t* recvcounts, "
      "const size_t* displs, MPI_Datatype recvtype, MPI_Comm comm",
      "sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm", "begin_allgatherv", "MPI_Allgatherv",
      "every rank passes the counts", false},
     {Extent::count, Extent::count, Extent::p_count, Extent::p_count}, "elements of each rank's block (recvbuf: p blocks)"},
    {Collective::gather, "gather", "gather", "MPI_Gather", true, false, true, true, {FoldData::own_block, FoldData::none},
     detail::kRootedBlocksParams, detail::kRootedBlocksArgs,
     {"const void* sendbuf, size_t sendcount, MPI_Datatype sendtype, void* recvbuf, const size_t* recvcounts, "
      "const size_t* displs, MPI_Datatype recvtype, int root, MPI_Comm comm",
      "sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm", "begin_gatherv", "MPI_Gatherv",
      "recvcounts, displs, recvtype, recvbuf read at the root only;\n/// the root first broadcasts the block sizes "
      "(one extra MPI_Ibcast of p + 1 integers)",
      true},
     {Extent::count, Extent::count, Extent::p_count, Extent::none}, "elements of each rank's block (root's recvbuf: p blocks)"},
    {Collective::scatter, "scatter", "scatter", "MPI_Scatter", true, false, true, true, {FoldData::none, FoldData::own_block},
     detail::kRootedBlocksParams, detail::kRootedBlocksArgs,
     {"const void* sendbuf, const size_t* sendcounts, const size_t* displs, MPI_Datatype sendtype, void* recvbuf, "
      "size_t recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
      "sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm", "begin_scatterv", "MPI_Scatterv",
      "sendbuf, sendcounts, displs, sendtype read at the root only;\n/// the root first broadcasts the block sizes "
      "(one extra MPI_Ibcast of p + 1 integers)",
      true},
     {Extent::p_count, Extent::none, Extent::count, Extent::count}, "elements of each rank's block (root's sendbuf: p blocks)"},
    {Collective::alltoall, "alltoall", "alltoall", "MPI_Alltoall", false, false, true, false,
     {FoldData::none, FoldData::none}, detail::kBlocksParams, detail::kBlocksArgs,
     {"const void* sendbuf, const size_t* sendcounts, const size_t* sdispls, MPI_Datatype sendtype, void* recvbuf, "
      "const size_t* recvcounts, const size_t* rdispls, MPI_Datatype recvtype, MPI_Comm comm",
      "sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm", "begin_alltoallv",
      "MPI_Alltoallv",
      "every rank passes its own counts;\n/// each message of the schedule is one item from its sender to its receiver, "
      "posted from and into\n/// the caller's buffers",
      false},
     {Extent::p_count, Extent::p_count, Extent::p_count, Extent::p_count}, "elements per peer (sendbuf and recvbuf: p blocks)"},
    // No fold for the prefix reductions (sema refuses one: a prefix has no two-one
    // elimination that keeps rank order simple) nor for the barrier.
    {Collective::scan, "scan", "scan", "MPI_Scan", false, true, false, false, {FoldData::none, FoldData::none},
     detail::kReduceAllParams, detail::kReduceAllArgs, detail::kNoV,
     {Extent::count, Extent::count, Extent::count, Extent::count}, "elements of the vector"},
    {Collective::exscan, "exscan", "exscan", "MPI_Exscan", false, true, false, false, {FoldData::none, FoldData::none},
     detail::kReduceAllParams, detail::kReduceAllArgs, detail::kNoV,
     {Extent::count, Extent::count, Extent::count, Extent::count}, "elements of the vector"},
    {Collective::barrier, "barrier", "barrier", "MPI_Barrier", false, false, false, false,
     {FoldData::none, FoldData::none}, "MPI_Comm comm", "comm", detail::kNoV,
     {Extent::count, Extent::count, Extent::count, Extent::count}, "elements of the vector"},
};

/// The table's row of `c`.
constexpr const CollectiveInfo& collective_info(Collective c) { return kCollectives[int(c)]; }
/// The language's name ("reduce_scatter"); collective_from_name() is its inverse.
constexpr const char* collective_name(Collective c) { return collective_info(c).name; }
/// The PMPI table's and `tune`'s key: the MPI call without `MPI_` ("reduce_scatter_block").
constexpr const char* collective_key(Collective c) { return collective_info(c).key; }
inline bool collective_from_name(const std::string& s, Collective& c) {
  for (const CollectiveInfo& i : kCollectives)
    if (s == i.name) return c = i.c, true;
  return false;
}
/// bcast, reduce, gather, scatter.
constexpr bool collective_is_rooted(Collective c) { return collective_info(c).rooted; }
/// Collectives that combine data with an operator.
constexpr bool collective_reduces(Collective c) { return collective_info(c).reduces; }
/// Blocks are indexed by rank (block i belongs to rank i): gather, scatter, allgather,
/// reduce_scatter (and alltoall's grid).
constexpr bool collective_has_rank_blocks(Collective c) { return collective_info(c).rank_blocks; }
/// Collectives that may have a `fold` (sema refuses it for the others).
constexpr bool collective_folds(Collective c) { return collective_info(c).folds; }
/// What the fold's prologue and epilogue move.
constexpr FoldSteps fold_steps(Collective c) { return collective_info(c).fold; }
/// Elements of `count` a buffer of extent `e` holds at p ranks.
constexpr uint64_t extent_elems(Extent e, uint64_t count, int64_t p) {
  return e == Extent::none ? 0 : e == Extent::count ? count : count * uint64_t(p);
}
/// The irregular form in the MPI target's C ABI, or null when it has none.
constexpr const IrregularForm* irregular_form(Collective c) {
  return collective_info(c).v.params ? &collective_info(c).v : nullptr;
}

static_assert([] {
  for (int i = 0; i < kCollectiveCount; ++i)
    if (int(kCollectives[i].c) != i) return false;
  return true;
}(), "kCollectives is in the order of Collective");

/// Operand order of a reducing receive (the round model, docs/architecture.md): the
/// contribution of the lower real rank is the left operand, so a receive from a lower rank
/// computes `received op own` and one from a higher rank `own op received`. The verifier
/// infers canonical order with this rule and the runtime applies it (MPI_Reduce_local).
constexpr bool received_is_left_operand(int64_t sender, int64_t receiver) { return sender < receiver; }

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
