// The Schedule: a program instantiated for concrete p, root and block count. Plain data:
// for every rank, an ordered list of rounds, each a list of transfers over block sets.
// Every analysis (verify, cost, translation validation) runs on this level.
#pragma once
#include <atomic>
#include <iosfwd>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ast.h"
#include "bine/blockset.hpp"
#include "resource.h"

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
/// programs instantiated; interning locks, reading does not); an interned
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
/// payloads (a permutation) stay out of the variant, which is as wide as its widest member
/// and would otherwise make every send and receive wider. One pointer wide (an intrusive
/// reference count, not a std::shared_ptr's two pointers): every op kind then fits in 16
/// bytes and an Op in 24. Reads like a `const T&` (implicit conversion, `->`, `[]`,
/// `size()`).
template <class T>
class Boxed {
 public:
  Boxed() = default;  ///< a default-constructed T
  Boxed(T v) : n_(new Node{1, std::move(v)}) {}  // NOLINT(google-explicit-constructor)
  Boxed(const Boxed& o) : n_(o.n_) { retain(); }
  Boxed(Boxed&& o) noexcept : n_(o.n_) { o.n_ = nullptr; }
  Boxed& operator=(Boxed o) noexcept {
    std::swap(n_, o.n_);
    return *this;
  }
  ~Boxed() { release(); }
  const T& get() const { return n_ ? n_->value : empty(); }
  operator const T&() const { return get(); }  // NOLINT(google-explicit-constructor)
  const T* operator->() const { return &get(); }
  template <class I>
  decltype(auto) operator[](I i) const { return get()[i]; }
  auto size() const { return get().size(); }

 private:
  struct Node {
    std::atomic<int64_t> refs;
    T value;
  };
  static const T& empty() {
    static const T e{};
    return e;
  }
  void retain() {
    if (n_) n_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (n_ && n_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete n_;
    n_ = nullptr;
  }
  Node* n_ = nullptr;
};

/// An op's block set, interned: 4 bytes in the op instead of a 64-byte BlockSet (an
/// instance at p = 2^20 has tens of millions of ops, and the sets they name recur: the
/// whole vector, a butterfly's windows). Equal sets have equal refs, so comparing two refs
/// compares ids. Interned sets live in one process-wide table that only grows (by the
/// distinct sets of the instances built; `interned_block_sets()` counts them; interning
/// takes a lock unless the set is the one the thread interned last, reading takes none:
/// large instances are instantiated on several threads); an interned set's address never
/// changes.
/// Interning is explicit (a BlockSet does not silently become a ref); reading converts.
class BlockSetRef {
 public:
  BlockSetRef() = default;  ///< the empty set
  explicit BlockSetRef(const BlockSet& b);
  const BlockSet& get() const;
  operator const BlockSet&() const { return get(); }  // NOLINT(google-explicit-constructor)
  const BlockSet* operator->() const { return &get(); }
  int64_t size() const { return get().size(); }
  bool empty() const { return get().empty(); }
  const RangeList& ranges() const { return get().ranges(); }
  bool contains(int64_t i) const { return get().contains(i); }
  /// The interned set's id: dense, 0 for the empty set, below interned_block_sets() + 1.
  uint32_t id() const { return id_; }
  friend bool operator==(BlockSetRef a, BlockSetRef b) { return a.id_ == b.id_; }
  friend bool operator!=(BlockSetRef a, BlockSetRef b) { return a.id_ != b.id_; }

 private:
  uint32_t id_ = 0;
};
/// How many distinct block sets have been interned in this process.
size_t interned_block_sets();

/// Send `blocks` of the rank's buffer to `peer` (a real rank; ranks are MPI's `int`).
struct SendOp {
  int32_t peer = -1;
  BlockSetRef blocks;
  OriginRef origin;
  SendOp() = default;
  SendOp(int64_t to, const BlockSet& b, OriginRef o = {}) : peer(int32_t(to)), blocks(b), origin(o) {}
};
/// Receive `blocks` from `peer`; reduce: combine into the buffer (lower rank's data is
/// the left operand), else overwrite.
struct RecvOp {
  int32_t peer = -1;
  BlockSetRef blocks;
  OriginRef origin;
  bool reduce = false;
  RecvOp() = default;
  RecvOp(int64_t from, const BlockSet& b, bool red, OriginRef o = {}) : peer(int32_t(from)), blocks(b), origin(o), reduce(red) {}
};
/// Local permutation of the rank's blocks, applied at the end of its round (after the
/// receives): the block in slot j moves to slot to[j]. `to` is a bijection on [0, B).
struct PermuteOp {
  Boxed<std::vector<int64_t>> to;
  BlockSetRef blocks;  ///< every block
  OriginRef origin;
};
/// Local reduction or copy between the rank's own blocks (`reduce S into D`, `copy S into
/// D`), applied after the round's receives, in program order: the k-th block of `src`
/// goes to the k-th block of `blocks`; reduce: dst = src op dst (src is the left operand,
/// as in MPI_Reduce_local(src, dst)). Blocks index the rank's buffers: block b of buffer j
/// is j * B + b (buffer 0 is the vector, 1..scratch the `scratch` buffers).
struct LocalOp {
  BlockSetRef src;
  BlockSetRef blocks;  ///< the destination
  OriginRef origin;
  bool reduce = false;
  LocalOp() = default;
  LocalOp(const BlockSet& s, const BlockSet& d, bool red, OriginRef o = {}) : src(s), blocks(d), origin(o), reduce(red) {}
};
/// One operation of a rank's round: 24 bytes (docs/verifier.md, "Scale").
using Op = std::variant<SendOp, RecvOp, PermuteOp, LocalOp>;

/// True for SendOp and RecvOp.
inline bool is_transfer(const Op& op) { return std::holds_alternative<SendOp>(op) || std::holds_alternative<RecvOp>(op); }

/// A round being built: a rank's ops of one round, in posting order.
using RoundOps = std::vector<Op>;

/// One rank's ops of one round, in posting order: a read-only view into its RankRounds
/// (valid while that is alive and unchanged).
class Round {
 public:
  Round() = default;
  Round(const Op* b, const Op* e) : b_(b), e_(e) {}
  Round(const RoundOps& v) : b_(v.data()), e_(v.data() + v.size()) {}  // NOLINT(google-explicit-constructor)
  const Op* begin() const { return b_; }
  const Op* end() const { return e_; }
  size_t size() const { return size_t(e_ - b_); }
  bool empty() const { return b_ == e_; }
  const Op& operator[](size_t i) const { return b_[i]; }
  const Op& front() const { return *b_; }
  const Op& back() const { return e_[-1]; }

 private:
  const Op* b_ = nullptr;
  const Op* e_ = nullptr;
};

/// Every rank's ops of an instance, round-major: round t's ops of all ranks adjacent, rank
/// after rank (the order the verifier and the cost model read them: a round touches every
/// rank and its peers, which in rank-major storage are a page apart each). Built once by
/// instantiation, then read-only and shared by the RankRounds views of its schedule.
///
/// A round is a list of chunks (up to kMaxChunk ops each; one rank's ops of a round lie in
/// one chunk, a chunk of its own when they are more), filled as the ranks run: the store
/// is the instantiation's own buffers, never copied into one array per round (at p = 2^20
/// that copy touched a gigabyte of fresh pages). at[t * (p + 1) + r] is where rank r's
/// ops of round t start, as chunk << kIndexBits | index; they end where rank r + 1's start
/// when that is in the same chunk, else at the end of the chunk.
struct RoundStore {
  static constexpr unsigned kIndexBits = 17;
  static constexpr uint32_t kIndexMask = (uint32_t(1) << kIndexBits) - 1;
  static constexpr size_t kMaxChunk = size_t(1) << 16;                   ///< ops a shared chunk holds
  static constexpr size_t kMaxChunks = size_t(1) << (32 - kIndexBits);  ///< chunks a round may have
  int64_t p = 0;                                 ///< ranks
  std::vector<std::vector<std::vector<Op>>> ops;  ///< [round][chunk] the round's ops, rank after rank
  /// Instantiation's memory account (resource.h): each chunk's capacity is added to it
  /// before it is reserved (a round that would not fit stops with a ResourceLimit).
  MemoryAccount* account = nullptr;
  std::vector<uint32_t> at;                      ///< T * (p + 1) starts (see above)
  size_t rounds() const { return ops.size(); }
  Round round(size_t t, size_t r) const {
    const uint32_t* a = at.data() + t * size_t(p + 1) + r;
    const uint32_t s = a[0], e = a[1];
    if (s == e) return Round();
    const std::vector<Op>& c = ops[t][s >> kIndexBits];
    const Op* o = c.data();
    return Round(o + (s & kIndexMask), (e >> kIndexBits) == (s >> kIndexBits) ? o + (e & kIndexMask) : o + c.size());
  }
  /// Makes the store empty for p ranks and T rounds.
  void start(int64_t ranks, size_t T) {
    p = ranks;
    ops.assign(T, {});
    at.assign(T * size_t(p + 1), 0);
  }
  /// Moves ops [first, last) in as rank x's round t; for each t the ranks come in order
  /// 0, 1, ..., p - 1 (every rank, also those without ops). False when round t would need
  /// kMaxChunks - 1 chunks (about 2^31 ops).
  bool place(size_t t, size_t x, Op* first, Op* last) {
    std::vector<std::vector<Op>>& chunks = ops[t];
    const size_t n = size_t(last - first);
    if (n > 0 && (chunks.empty() || chunks.back().size() + n > std::min(chunks.back().capacity(), kMaxChunk))) {
      if (chunks.size() + 1 >= kMaxChunks) return false;
      const size_t used = chunks.empty() ? 0 : chunks.back().capacity();
      const size_t cap = std::max(n, std::min<size_t>(kMaxChunk, 2 * used + 16));
      if (account) account->add(cap * sizeof(Op) + sizeof(std::vector<Op>), "its operations (" + std::to_string(sizeof(Op)) + " bytes each)");
      chunks.emplace_back().reserve(cap);
    }
    at[t * size_t(p + 1) + x] = here(t);
    if (n > 0) std::move(first, last, std::back_inserter(chunks.back()));
    if (x + 1 == size_t(p)) at[t * size_t(p + 1) + x + 1] = here(t);
    return true;
  }
  /// Moves `part` in as ranks first .. first + part.p - 1 (filled by place() as ranks
  /// 0 .. part.p - 1 of its own, the same rounds), after every rank placed so far: its
  /// chunks follow this store's in each round and its starts shift by their count. Parts
  /// are absorbed in rank order; the last one ends at rank p - 1. False when a round would
  /// need more than kMaxChunks - 1 chunks (about 2^31 ops).
  bool absorb(RoundStore&& part, size_t first) {
    if (part.rounds() != rounds() || first + size_t(part.p) > size_t(p)) return false;
    for (size_t t = 0; t < rounds(); ++t) {
      std::vector<std::vector<Op>>& chunks = ops[t];
      const size_t shift = chunks.size();
      if (shift + part.ops[t].size() > kMaxChunks - 1) return false;
      for (std::vector<Op>& c : part.ops[t]) chunks.push_back(std::move(c));
      const uint32_t* from = part.at.data() + t * size_t(part.p + 1);
      uint32_t* to = at.data() + t * size_t(p + 1) + first;
      for (size_t i = 0; i <= size_t(part.p); ++i) to[i] = from[i] + uint32_t(shift << kIndexBits);
    }
    part = RoundStore{};
    return true;
  }

 private:
  /// The position after round t's last op: in the last chunk, or the start of the next one
  /// after a chunk of its own (too large for an index; nothing is appended to it).
  uint32_t here(size_t t) const {
    const std::vector<std::vector<Op>>& chunks = ops[t];
    if (chunks.empty()) return 0;
    if (chunks.back().size() > kMaxChunk) return uint32_t(chunks.size() << kIndexBits);
    return uint32_t((chunks.size() - 1) << kIndexBits) | uint32_t(chunks.back().size());
  }
};

/// Every round of one rank. Either its own ops in one array, round after round (schedules
/// built by hand, the reference oracle; round t is ops [start[t], start[t + 1])), or a view
/// of rank r in a RoundStore (instantiated schedules; no vector per round: at p = 2^20 a
/// Bine allreduce has 21 million rounds of two ops). Both read the same; add() turns a
/// view into its own copy first.
class RankRounds {
 public:
  RankRounds() = default;
  /// Rounds given one vector each (tests, the reference oracle).
  RankRounds(const std::vector<RoundOps>& rounds);  // NOLINT(google-explicit-constructor)
  /// Takes `ops` (round after round) and the first op of each round (rounds + 1 entries,
  /// the last ops.size()).
  RankRounds(std::vector<Op> ops, std::vector<uint32_t> start) : ops_(std::move(ops)), start_(std::move(start)) {}
  /// Rank r of `store`.
  RankRounds(std::shared_ptr<const RoundStore> store, int64_t r) : store_(std::move(store)), rank_(uint32_t(r)) {}
  size_t size() const {  ///< rounds
    if (store_) return store_->rounds();
    return start_.empty() ? 0 : start_.size() - 1;
  }
  bool empty() const { return size() == 0; }
  Round operator[](size_t t) const {
    if (store_) return store_->round(t, rank_);
    return Round(ops_.data() + start_[t], ops_.data() + start_[t + 1]);
  }
  /// `n` empty rounds.
  void assign(size_t n) {
    store_.reset();
    ops_.clear();
    start_.assign(n + 1, 0);
  }
  /// Appends `op` to round t (shifts the later rounds: for building small schedules).
  void add(size_t t, Op op);

  class iterator {
   public:
    iterator(const RankRounds* r, size_t t) : r_(r), t_(t) {}
    Round operator*() const { return (*r_)[t_]; }
    iterator& operator++() {
      ++t_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return t_ != o.t_; }
    bool operator==(const iterator& o) const { return t_ == o.t_; }

   private:
    const RankRounds* r_;
    size_t t_;
  };
  iterator begin() const { return iterator(this, 0); }
  iterator end() const { return iterator(this, size()); }

 private:
  std::vector<Op> ops_;
  std::vector<uint32_t> start_;
  std::shared_ptr<const RoundStore> store_;  ///< set for a view
  uint32_t rank_ = 0;
};

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
  /// How instantiate() built the ranks after rank 0 (InstanceRequest::translation): each
  /// ran the program (no), or got rank 0's rounds shifted (yes), or a proved translation
  /// symmetry's spot rank differed from its shifted rounds, so each ran (refuted).
  enum class Shifted : uint8_t { no, yes, refuted };
  Shifted shifted = Shifted::no;
  int64_t num_rounds = 0;
  std::vector<std::string> round_labels;      ///< [round] e.g. "phase rs, s = 1"
  /// [round] the `segment` size in force (bytes; 0: messages are not segmented). Messages
  /// of the round travel in pieces of at most this many bytes (whole elements, at least
  /// one); it changes only how data is packetized, not what the verifier checks.
  std::vector<int64_t> round_segments;
  std::vector<RankRounds> ranks;      ///< [rank][round]
  /// A `frames` schedule's model (BBS, Lu et al. Sec. 2.1), which the verifier checks: each
  /// rank in at most one transfer per round (one_port), every transfer along one of
  /// `links` (undirected rank pairs (a, b), a < b, sorted; the topology's links with the
  /// rank renumbering of the instance's root). Empty / false for other schedules.
  bool one_port = false;
  std::vector<std::pair<int64_t, int64_t>> links;
  /// The bytes instantiation accounted for (resource.h, docs/verifier.md "Memory"): the
  /// round store's index, the ops, the rank views and labels. 0 for schedules built by hand.
  uint64_t accounted_bytes = 0;
};

/// Threads that build and check one instance of at least `min_p` ranks: instantiation runs
/// contiguous rank ranges side by side (each into its own part of the round store, merged
/// in rank order; not under a two-one fold, whose helper ranks run last), and the
/// verifier runs its structural checks (peers, matching, message sizes, races) beside the
/// data flow. Results, diagnostics and their order are those of one thread: a failure is
/// reported as one thread finds it first (the lowest failing rank; the structure before
/// the data flow). Defaults: the machine's hardware threads, at most 8, and min_p = 256
/// (below it a thread costs more than it saves; the environment variable
/// BINE_PARALLEL_MIN_P sets another, for tests); 1 is one thread. `bine-cc check
/// --threads N`. Not thread-safe against instances being built at the time of the call.
void set_instance_threads(int threads, int64_t min_p = 0);  ///< min_p 0: unchanged
int instance_threads();
int64_t instance_parallel_min_p();

inline const Origin& origin_of(const Op& op) {
  return std::visit([](const auto& o) -> const Origin& { return o.origin.get(); }, op);
}
/// The peer of a send or receive; -1 for a local op.
inline int64_t peer_of(const Op& op) {
  if (const auto* s = std::get_if<SendOp>(&op)) return s->peer;
  if (const auto* r = std::get_if<RecvOp>(&op)) return r->peer;
  return -1;
}
inline const BlockSet& blocks_of(const Op& op) {
  return std::visit([](const auto& o) -> const BlockSet& { return o.blocks.get(); }, op);
}
/// The interned block set of an op (compare two with ==: ids).
inline BlockSetRef block_ref_of(const Op& op) {
  return std::visit([](const auto& o) { return o.blocks; }, op);
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
/// Rounds in which a rank posts at most this many ops are handled by scanning its few ops
/// directly (match_round(), and in the verifier a receive's send and the race check);
/// longer rounds by sorting. The butterflies and trees post one to four.
constexpr size_t kShortRound = 8;
/// Matches round t of `s` (every rank's ops at t; peers must be ranks in [0, p)) into `m`,
/// reusing its storage. O(n) when no rank posts more than kShortRound ops in the round (a direct
/// search of both ranks' ops), else O(n log n) (sorting the round's transfers). Returns m.complete: whether
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
/// The same texts written to `out` as they are made (one rank's JSON document at a time),
/// for instances whose text is larger than the instance.
void write_schedule_text(const Schedule& s, std::ostream& out);
void write_schedule_json(const Schedule& s, std::ostream& out);
/// The JSON of write_schedule_json on one line (no indentation, no newline inside), then
/// '\n': one line of `schedule --instance`'s JSON lines (docs/cli.md#schedule).
void write_schedule_json_line(const Schedule& s, std::ostream& out);

}  // namespace bine
