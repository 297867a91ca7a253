// The Schedule: a program instantiated for concrete p, root and block count. Plain data:
// for every rank, an ordered list of rounds, each a list of transfers over block sets.
// Every analysis (verify, cost, translation validation) runs on this level.
#pragma once
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ast.h"
#include "bine/blockset.hpp"

namespace bine {

/// Where an op came from: the DSL statement, plus how it was derived.
struct Origin {
  Span span;                 ///< the send/recv/exchange statement
  std::string via;           ///< "" (direct), "mirror of phase 'rs'", "fold prologue", ...
  Span via_span;             ///< the mirror / fold declaration
};

/// An op's Origin, interned: 4 bytes in the op instead of 80 (a schedule has millions of
/// ops and a few dozen distinct origins, one per statement and derivation). Interned
/// origins live in one process-wide table that only grows (by the distinct origins of the
/// programs instantiated; not thread-safe, like instantiation itself); an interned
/// Origin's address never changes.
class OriginRef {
 public:
  OriginRef() = default;  ///< the empty origin (no span, direct)
  OriginRef(const Origin& o);  // NOLINT(google-explicit-constructor): ops are built from Origins
  const Origin& get() const;
  operator const Origin&() const { return get(); }  // NOLINT(google-explicit-constructor)
  const Origin* operator->() const { return &get(); }

 private:
  uint32_t id_ = 0;
};

/// A value kept out of line, shared and immutable (copies share it): the rare op kinds'
/// payloads (a permutation, a local op's source set) stay out of the variant, which is as
/// wide as its widest member and would otherwise make every send and receive wider.
/// Reads like a `const T&` (implicit conversion, `->`, `[]`, `size()`).
template <class T>
class Boxed {
 public:
  Boxed() : p_(empty()) {}
  Boxed(T v) : p_(std::make_shared<const T>(std::move(v))) {}  // NOLINT(google-explicit-constructor)
  const T& get() const { return *p_; }
  operator const T&() const { return *p_; }  // NOLINT(google-explicit-constructor)
  const T* operator->() const { return p_.get(); }
  template <class I>
  decltype(auto) operator[](I i) const { return (*p_)[i]; }
  auto size() const { return p_->size(); }

 private:
  static const std::shared_ptr<const T>& empty() {
    static const std::shared_ptr<const T> e = std::make_shared<const T>();
    return e;
  }
  std::shared_ptr<const T> p_;
};

/// Send `blocks` of the rank's buffer to `peer` (a real rank).
struct SendOp {
  int64_t peer = -1;
  BlockSet blocks;
  OriginRef origin;
};
/// Receive `blocks` from `peer`; reduce: combine into the buffer (lower rank's data is
/// the left operand), else overwrite.
struct RecvOp {
  int64_t peer = -1;
  BlockSet blocks;
  bool reduce = false;
  OriginRef origin;
};
/// Local permutation of the rank's blocks, applied at the end of its round (after the
/// receives): the block in slot j moves to slot to[j]. `to` is a bijection on [0, B).
struct PermuteOp {
  Boxed<std::vector<int64_t>> to;
  OriginRef origin;
  int64_t peer = -1;  ///< no peer (lets generic accessors compile; use is_transfer())
  BlockSet blocks;    ///< every block
};
/// Local reduction or copy between the rank's own blocks (`reduce S into D`, `copy S into
/// D`), applied after the round's receives, in program order: the k-th block of `src`
/// goes to the k-th block of `blocks`; reduce: dst = src op dst (src is the left operand,
/// as in MPI_Reduce_local(src, dst)). Blocks index the rank's buffers: block b of buffer j
/// is j * B + b (buffer 0 is the vector, 1..scratch the `scratch` buffers).
struct LocalOp {
  Boxed<BlockSet> src;
  BlockSet blocks;   ///< the destination
  bool reduce = false;
  OriginRef origin;
  int64_t peer = -1;  ///< no peer (generic accessors; use is_transfer())
};
using Op = std::variant<SendOp, RecvOp, PermuteOp, LocalOp>;

/// True for SendOp and RecvOp.
inline bool is_transfer(const Op& op) { return std::holds_alternative<SendOp>(op) || std::holds_alternative<RecvOp>(op); }
using Round = std::vector<Op>;

struct Schedule {
  std::string name;
  Span decl_span;               ///< the schedule's name in the source
  Collective collective = Collective::allreduce;
  int64_t p = 1, root = 0;
  int64_t blocks = 1;          ///< B: the vector is split into this many blocks
  /// K scratch buffers of B blocks per rank (`scratch K`): block indices run over
  /// [0, (K + 1) B), block b of buffer j being j * B + b; only [0, B) is the vector.
  int64_t scratch = 0;
  FoldKind fold = FoldKind::none;  ///< the schedule's elimination (bine/collective.hpp)
  int64_t fold_ring = 0;           ///< `fold ring R`: R, else 0
  /// [rank] true for the ranks a fold sets aside for the body (two-one: the odd virtual
  /// ranks below 2 * extra; `fold 3-2`: the helpers); empty or all false without a fold.
  std::vector<bool> fold_helper;
  int64_t num_rounds = 0;
  std::vector<std::string> round_labels;      ///< [round] e.g. "phase rs, s = 1"
  /// [round] the `segment` size in force (bytes; 0: messages are not segmented). Messages
  /// of the round travel in pieces of at most this many bytes (whole elements, at least
  /// one); it changes only how data is packetized, not what the verifier checks.
  std::vector<int64_t> round_segments;
  std::vector<std::vector<Round>> ranks;      ///< [rank][round]
  /// A `frames` schedule's model (BBS, Lu et al. Sec. 2.1), which the verifier checks: each
  /// rank in at most one transfer per round (one_port), every transfer along one of
  /// `links` (undirected rank pairs (a, b), a < b, sorted; the topology's links with the
  /// rank renumbering of the instance's root). Empty / false for other schedules.
  bool one_port = false;
  std::vector<std::pair<int64_t, int64_t>> links;
};

inline const Origin& origin_of(const Op& op) {
  return std::visit([](const auto& o) -> const Origin& { return o.origin.get(); }, op);
}
inline int64_t peer_of(const Op& op) {
  return std::visit([](const auto& o) { return o.peer; }, op);
}
inline const BlockSet& blocks_of(const Op& op) {
  return std::visit([](const auto& o) -> const BlockSet& { return o.blocks; }, op);
}

/// The message matching rule of one round, the only one in the compiler: the verifier
/// proves deadlock freedom, message sizes and data flow with it, the cost model prices the
/// messages it pairs, and it is the runtime's rule too (each round's transfers are posted
/// together and MPI matches messages of one (source, destination, tag) pair in posting
/// order, MPI 3.1 Sec. 3.5 "Order"; docs/architecture.md, "One round pipeline"): in round
/// t, the k-th send (in posting order) of rank x to rank y meets the k-th receive of rank
/// y from rank x.
struct RoundMatching {
  /// Op i of rank r in the round is entry at[r] + i of `mate` (at has p + 1 entries).
  /// 32-bit entries: the verifier keeps one matching per round (about 6 bytes per op,
  /// against 104 for the op itself).
  std::vector<uint32_t> at;
  /// [at[r] + i] the index, in its peer's round, of the op that op i of rank r meets; -1
  /// for an op that is not a transfer or is unmatched.
  std::vector<int32_t> mate;
  /// The first unmatched transfer in (source, destination) order, when there is one: the
  /// k-th (1-based) send of `src` to `dst` has no receive (unmatched_send), or the k-th
  /// receive of `dst` from `src` has no send.
  bool complete = true;
  bool unmatched_send = false;
  int64_t src = -1, dst = -1;
  size_t k = 0;
  /// The op matching op i of rank r, or -1.
  int64_t mate_of(int64_t r, size_t i) const { return mate[size_t(at[size_t(r)]) + i]; }
};
/// Matches round t of `s` (every rank's ops at t; peers must be ranks in [0, p)) into `m`,
/// reusing its storage. O(n log n) in the round's transfers. Returns m.complete: whether
/// every send and receive of the round has its counterpart.
bool match_round(const Schedule& s, int64_t t, RoundMatching& m);

/// The message size rule, shared by the verifier and the cost model: a send of block set
/// `sent` and the receive it meets (of `received`) have equal sizes for every element
/// count n. Rank-indexed collectives (allgather, alltoall, gather, scatter,
/// reduce-scatter blocks) have equal blocks, so equal block counts suffice (the k-th block
/// sent lands in the k-th block received); vector blocks differ by one element when B
/// does not divide n, so the sets must be equal (with `scratch`, the same vector blocks,
/// in order).
bool message_sizes_agree(const Schedule& s, const BlockSet& sent, const BlockSet& received);
/// The size rule in words, for diagnostics.
std::string message_size_rule(const Schedule& s);

/// "{0-3, 5}" style rendering of a block set.
std::string format_blocks(const BlockSet& s);
/// Readable per-round listing (docs/cli.md, `bine-cc schedule`).
std::string schedule_text(const Schedule& s);
/// JSON serialization; deterministic (rank, round, op order).
std::string schedule_json(const Schedule& s);

}  // namespace bine
