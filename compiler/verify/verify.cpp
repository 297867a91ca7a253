#include "verify.h"

#include "resource.h"

#include <algorithm>
#include <exception>
#include <map>
#include <thread>

namespace bine {
namespace {

constexpr int32_t kNone = -1;

/// A contribution term: a leaf (rank's original block) or op(left, right). Leaves are
/// interned (one id per rank and block); a reduction is created once per pair of operand
/// ids where both reductions of a pair follow each other on the left operand (the two
/// ranks of a butterfly exchange): equal ids are equal bracketings, equal bracketings may
/// have different ids (Verifier::same_tree()).
struct Term {
  int32_t left = kNone, right = kNone;
  /// The last two reductions with this term as their left operand: right operand and
  /// result (kNone: none). A memo in place of a table of every pair: the partner's
  /// identical reduction finds it in the operand it reads anyway, where a probe into a
  /// table of millions of pairs misses the cache. Two: in a Bine butterfly the two ranks
  /// that share a term pair with different partners, so a term is an operand of two
  /// different reductions per round, each computed twice.
  int32_t memo_right[2] = {kNone, kNone}, memo[2] = {kNone, kNone};
  int32_t block = 0;      ///< block index of all leaves, or -2 when mixed
  int32_t lo = 0, hi = 0; ///< min / max leaf rank
  int32_t count = 1;      ///< number of leaves (each rank at most once: RankSets::unite)
  /// The exact set of leaf ranks: a RankSets id (>= 0), or, at most -2, the circular
  /// interval of `count` ranks from rank -2 - set on (mod p; Verifier::circ()).
  int32_t set = kNone;
  bool ordered = true;    ///< leaves in increasing rank order, no gaps
};

/// Open-addressing hash map from a 64-bit key (never ~0) to an int32 value: linear
/// probing, power-of-two capacity, load at most 3/4. The verifier's hot lookups (term
/// hash-consing, memoized unions) without a heap node per entry. A key and its value share
/// one 12-byte slot: a probe is one cache miss, not one per array.
class FlatMap {
 public:
  /// Whether key k is present; its value in *v if so.
  bool find(uint64_t k, int32_t* v) const {
    if (slots_.empty()) return false;
    for (size_t i = slot(k);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == k) {
        *v = slots_[i].val;
        return true;
      }
      if (slots_[i].key == kEmpty) return false;
    }
  }
  /// The instance's account (resource.h): the table's growth is added to it.
  MemoryAccount* acct = nullptr;
  /// Inserts k -> v (k must be absent).
  void insert(uint64_t k, int32_t v) {
    if (4 * (n_ + 1) > 3 * slots_.size()) grow();
    size_t i = slot(k);
    while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i].key = k;
    slots_[i].val = v;
    ++n_;
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  struct __attribute__((packed)) Slot {
    uint64_t key = kEmpty;
    int32_t val = 0;
  };
  static_assert(sizeof(Slot) == 12);
  size_t slot(uint64_t k) const {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    return size_t(k) & (slots_.size() - 1);
  }
  void grow() {
    const size_t cap = std::max<size_t>(16, 2 * slots_.size());
    if (acct && cap >= 4096) acct->add(cap * sizeof(Slot), "a hash table of the verifier (" + std::to_string(cap) + " slots)");
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    n_ = 0;
    for (const Slot& e : old)
      if (e.key != kEmpty) insert(e.key, e.val);
  }
  std::vector<Slot> slots_;
  size_t n_ = 0;
};

/// Exact sets of ranks, interned: a set is a canonical list of disjoint, sorted,
/// non-adjacent half-open intervals [lo, hi), and equal sets have equal ids. The sets
/// schedules build (a rank's subtree, a butterfly group, a stride class) have few
/// intervals or recur across ranks, and unions are memoized per pair of ids, so one
/// instance costs about the sum of the distinct sets' sizes. Replaces the 64-bit masks
/// (p <= 64) and fingerprints (p > 64) of earlier versions: the same exact check at every p.
/// The intervals of all sets live in one array (set i is [start_[i], start_[i + 1])).
class RankSets {
 public:
  using Interval = std::pair<int32_t, int32_t>;
  /// [lo, hi).
  int32_t interval(int64_t lo, int64_t hi) {
    cand_.assign(1, {int32_t(lo), int32_t(hi)});
    return intern();
  }
  /// [lo1, hi1) u [lo2, hi2), the first below the second and not adjacent to it.
  int32_t two_intervals(int64_t lo1, int64_t hi1, int64_t lo2, int64_t hi2) {
    cand_.assign({{int32_t(lo1), int32_t(hi1)}, {int32_t(lo2), int32_t(hi2)}});
    return intern();
  }
  /// a u b when a and b are disjoint, else kNone (a contribution counted twice).
  int32_t unite(int32_t a, int32_t b) {
    if (a > b) std::swap(a, b);
    // Short sets (the butterflies' and trees' are one or two intervals) are merged
    // directly: a memo entry would cost more memory than the merge costs time.
    const bool memo = end(a) - begin(a) + (end(b) - begin(b)) > 4;
    const uint64_t key = (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
    if (memo)
      if (int32_t hit; unions_.find(key, &hit)) return hit;
    cand_.clear();
    const Interval *x = begin(a), *xe = end(a), *y = begin(b), *ye = end(b);
    int32_t res = kNone;
    bool overlap = false;
    while (x != xe || y != ye) {
      const Interval next = (y == ye || (x != xe && x->first < y->first)) ? *x++ : *y++;
      if (!cand_.empty() && next.first < cand_.back().second) {
        overlap = true;
        break;
      }
      if (!cand_.empty() && next.first == cand_.back().second) cand_.back().second = next.second;
      else cand_.push_back(next);
    }
    if (!overlap) res = intern();
    if (memo) unions_.insert(key, res);
    return res;
  }
  /// The ranks in both a and b, in increasing order.
  std::vector<int64_t> intersection(int32_t a, int32_t b) const {
    std::vector<int64_t> v;
    for (const Interval *x = begin(a), *y = begin(b); x != end(a) && y != end(b);) {
      const int32_t lo = std::max(x->first, y->first), hi = std::min(x->second, y->second);
      for (int32_t r = lo; r < hi; ++r) v.push_back(r);
      if (x->second < y->second) ++x;
      else ++y;
    }
    return v;
  }
  /// The ranks of [0, p) not in a, in increasing order.
  std::vector<int64_t> complement(int32_t a, int64_t p) const {
    std::vector<int64_t> v;
    int64_t next = 0;
    for (const Interval* x = begin(a); x != end(a); ++x) {
      for (int64_t r = next; r < x->first && r < p; ++r) v.push_back(r);
      next = x->second;
    }
    for (int64_t r = next; r < p; ++r) v.push_back(r);
    return v;
  }
  /// The ranks of a at or above n, in increasing order.
  std::vector<int64_t> from(int32_t a, int64_t n) const {
    std::vector<int64_t> v;
    for (const Interval* x = begin(a); x != end(a); ++x)
      for (int64_t r = std::max<int64_t>(x->first, n); r < x->second; ++r) v.push_back(r);
    return v;
  }
  /// The intervals [lo, hi) of set a, in order.
  std::vector<Interval> intervals(int32_t a) const { return std::vector<Interval>(begin(a), end(a)); }
  /// a == [0, p).
  bool is_all(int32_t a, int64_t p) const {
    return end(a) - begin(a) == 1 && begin(a)->first == 0 && begin(a)->second == p;
  }

 private:
  const Interval* begin(int32_t id) const { return pool_.data() + start_[size_t(id)]; }
  const Interval* end(int32_t id) const { return pool_.data() + start_[size_t(id) + 1]; }
  static uint64_t hash(const Interval* v, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (size_t i = 0; i < n; ++i) {
      h = (h ^ ((uint64_t(uint32_t(v[i].first)) << 32) | uint32_t(v[i].second))) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 29;
    }
    return h;
  }
  /// The id of the set in cand_, added when new (open addressing over ids, compared by
  /// content).
  int32_t intern() {
    const uint64_t h = hash(cand_.data(), cand_.size());
    if (2 * (start_.size() + 1) > table_.size()) rehash();
    size_t i = size_t(h) & (table_.size() - 1);
    for (; table_[i] != kNone; i = (i + 1) & (table_.size() - 1)) {
      const int32_t id = table_[i];
      if (size_t(end(id) - begin(id)) == cand_.size() && std::equal(cand_.begin(), cand_.end(), begin(id))) return id;
    }
    const int32_t id = int32_t(start_.size() - 1);
    if (acct && (pool_.size() + cand_.size()) * sizeof(Interval) + start_.size() * sizeof(size_t) > accounted_ + (size_t(1) << 20)) {
      const size_t now = (pool_.size() + cand_.size()) * sizeof(Interval) + start_.size() * (sizeof(size_t) + 2 * sizeof(int32_t));
      acct->add(now - accounted_, "the verifier's sets of ranks (" + std::to_string(start_.size()) + " sets)");
      accounted_ = now;
    }
    pool_.insert(pool_.end(), cand_.begin(), cand_.end());
    start_.push_back(pool_.size());
    table_[i] = id;
    return id;
  }
  void rehash() {
    table_.assign(std::max<size_t>(16, 2 * table_.size()), kNone);
    for (int32_t id = 0; id + 1 < int32_t(start_.size()); ++id) {
      size_t i = size_t(hash(begin(id), size_t(end(id) - begin(id)))) & (table_.size() - 1);
      while (table_[i] != kNone) i = (i + 1) & (table_.size() - 1);
      table_[i] = id;
    }
  }
  std::vector<Interval> pool_;           ///< the intervals of every set, set after set
  std::vector<size_t> start_{0};         ///< set i: pool_[start_[i], start_[i + 1])
  std::vector<int32_t> table_;           ///< open-addressing index of the sets by content
  std::vector<Interval> cand_;           ///< the set being built
  FlatMap unions_;                       ///< (min id, max id) -> union or kNone
  size_t accounted_ = 0;                 ///< bytes of pool_ and the index added to acct

 public:
  /// The instance's account (resource.h).
  void set_account(MemoryAccount* a) {
    acct = a;
    unions_.acct = a;
  }

 private:
  MemoryAccount* acct = nullptr;
};

/// A rows x cols matrix in one array (the verifier's per-rank, per-slot state: one
/// allocation instead of one per rank); m[r] is row r's first element.
template <class T>
class Matrix {
 public:
  void assign(size_t rows, size_t cols, const T& v) {
    cols_ = cols;
    a_.assign(rows * cols, v);
  }
  T* operator[](size_t r) { return a_.data() + r * cols_; }
  const T* operator[](size_t r) const { return a_.data() + r * cols_; }
  size_t cols() const { return cols_; }

 private:
  std::vector<T> a_;
  size_t cols_ = 0;
};

/// A vector in chunks of 2^16 elements: growing it copies at most one chunk, so its peak
/// is its size plus a chunk (a std::vector's doubling holds old and new arrays at once: at
/// p = 2^20 the terms of a Bine allreduce are 336 MB). A chunk grows like a vector, so a
/// small instance allocates little.
template <class T>
class ChunkedVector {
 public:
  size_t size() const { return n_; }
  void push_back(const T& v) {
    if ((n_ & kMask) == 0) chunks_.emplace_back().reserve(kMask + 1);  // no copy as a chunk fills
    chunks_.back().push_back(v);
    ++n_;
  }
  T& operator[](size_t i) { return chunks_[i >> kShift][i & kMask]; }
  const T& operator[](size_t i) const { return chunks_[i >> kShift][i & kMask]; }

 private:
  static constexpr size_t kShift = 16, kMask = (size_t(1) << kShift) - 1;
  std::vector<std::vector<T>> chunks_;
  size_t n_ = 0;
};

struct WriteSite {
  int64_t round = -1;
  const Origin* origin = nullptr;
};

class Verifier {
 public:
  Verifier(const Schedule& s, DiagnosticSink& d, const VerifyOptions& o, MemoryAccount& acct)
      : s_(s), diags_(d), opt_(o), acct_(acct) {
    sets_.set_account(&acct);
    same_.acct = &acct;
  }

  /// The checks in their order on one thread: the structure, then the data flow and
  /// the postcondition, then the counts of messages and blocks.
  VerifyResult run() {
    VerifyResult res;
    if (!structure()) {
      res.counterexample = cex_;
      return res;
    }
    if (flow(res) == Flow::stopped) return res;
    stats(res);
    return res;
  }
  /// The same result and diagnostics as run(), with the structural checks on a second
  /// thread beside the data flow (set_instance_threads()). The data flow then runs on a
  /// structure not yet proved, as a speculation that stops without a diagnostic where that
  /// structure breaks what it relies on (an unmatched receive, a message larger than its
  /// send); each side reports into a sink of its own, and the structure's failure, when
  /// there is one, is the one reported (run() finds it first). A speculation that stopped
  /// on a structure proved sound would be a verifier bug; the instance is then checked
  /// again on one thread rather than trusted.
  VerifyResult run_side_by_side() {
    DiagnosticSink structure_diags, flow_diags;
    Verifier st(s_, structure_diags, opt_, acct_);
    Verifier fl(s_, flow_diags, opt_, acct_);
    fl.speculative_ = true;
    bool structure_ok = false;
    VerifyResult counts, res;
    std::exception_ptr failure;
    Flow outcome = Flow::stopped;
    {
      std::thread side([&] {
        try {
          structure_ok = st.structure();
          if (structure_ok) st.stats(counts);
        } catch (...) {
          failure = std::current_exception();
        }
      });
      struct Join {  // also when the data flow throws
        std::thread& t;
        ~Join() { t.join(); }
      } join{side};
      outcome = fl.flow(res);
    }
    if (failure) std::rethrow_exception(failure);
    diags_.append(structure_diags);  // what one thread reports first
    if (!structure_ok) {
      VerifyResult r;
      r.counterexample = st.cex_;
      return r;
    }
    if (fl.speculation_failed_) {  // on the proved structure, as run() goes on after it
      VerifyResult again;
      if (flow(again) == Flow::done) stats(again);
      return again;
    }
    diags_.append(flow_diags);
    if (outcome == Flow::stopped) return res;
    res.keeps_blocks = res.keeps_blocks && counts.keeps_blocks;
    res.messages = counts.messages;
    res.blocks_moved = counts.blocks_moved;
    return res;
  }

 private:
  enum class Flow { stopped, done };
  /// Peers, the topology, matching and message sizes, races (the first failure reported).
  bool structure() { return check_peers() && check_topology() && check_matching() && check_races(); }
  /// The data flow round after round and the postcondition: res.ok and the properties; a
  /// failure's counterexample. Stopped: a round failed (no postcondition, no counts).
  Flow flow(VerifyResult& res) {
    if (s_.collective == Collective::barrier && s_.p > kMaxBarrierP) {
      record(diags_.error(s_.decl_span, inst() + "barrier proofs are limited to p <= " + std::to_string(kMaxBarrierP) +
                                            " (p^2 bits of who-has-heard-from-whom)"),
             K::other, -1, -1, -1);
      res.counterexample = cex_;
      return Flow::stopped;
    }
    init_state();
    for (int64_t t = 0; t < s_.num_rounds; ++t) {
      if (!step(t)) {
        res.counterexample = cex_;
        return Flow::stopped;
      }
      if (s_.collective == Collective::barrier) step_heard(t);
    }
    res.ok = check_post(res);
    res.keeps_blocks = keeps_blocks_;
    res.direct = s_.collective == Collective::alltoall && direct_;
    if (!res.ok) res.counterexample = cex_;
    return Flow::done;
  }
  /// Messages and blocks moved; keeps_blocks false when a rank copies, reduces or permutes
  /// blocks locally.
  void stats(VerifyResult& res) const {
    any_op_round([&](int64_t, int64_t, const Round& rd) {
      for (const Op& op : rd) {
        if (std::holds_alternative<LocalOp>(op) || std::holds_alternative<PermuteOp>(op)) res.keeps_blocks = false;
        if (std::holds_alternative<SendOp>(op)) {
          ++res.messages;
          res.blocks_moved += blocks_of(op).size();
        }
      }
      return false;
    });
  }

  std::string inst() const {
    return "p=" + std::to_string(s_.p) + (collective_is_rooted(s_.collective) ? " root=" + std::to_string(s_.root) : "") + ": ";
  }
  static std::string at(int64_t rank, int64_t round, int64_t block = -1) {
    std::string m = "rank " + std::to_string(rank) + (round < 0 ? std::string(", before any round") : ", round " + std::to_string(round));
    if (block >= 0) m += ", block " + std::to_string(block);
    return m + ": ";
  }
  Diagnostic& report(const Origin& o, const std::string& msg) {
    Diagnostic& d = diags_.error(o.span, inst() + msg);
    if (!o.via.empty()) add_note(d, o.via_span, "this operation comes from " + o.via);
    return d;
  }
  static int64_t first_block(const BlockSet& b) { return b.empty() ? -1 : b.ranges().front().first; }
  /// Records the counterexample that diagnostic `d` reports (rank, round, block as in its
  /// message); returns `d` for notes.
  Diagnostic& record(Diagnostic& d, Counterexample::Kind kind, int64_t rank, int64_t round, int64_t block,
                     int64_t peer = -1, bool peer_is_sender = false) {
    cex_.kind = kind;
    cex_.rank = rank;
    cex_.round = round;
    cex_.block = block;
    cex_.blocks = BlockSet();
    if (block >= 0) cex_.blocks.push_back_block(block);
    cex_.peer = peer;
    cex_.peer_is_sender = peer_is_sender;
    cex_.message = d.message;
    return d;
  }
  using K = Counterexample::Kind;

  // ---- structure ----
  /// Whether f(x, t, round) holds for some rank x and round t, visited round after round
  /// (the order of the round-major op storage, schedule.h RoundStore): the structural checks
  /// scan in this order and, only when something is wrong, again rank by rank to report the
  /// first failure in (rank, round) order.
  template <class F>
  bool any_op_round(F f) const {
    for (int64_t t = 0; t < s_.num_rounds; ++t)
      for (int64_t x = 0; x < s_.p; ++x)
        if (f(x, t, s_.ranks[size_t(x)][size_t(t)])) return true;
    return false;
  }
  bool check_peers() {
    const bool self = any_op_round([](int64_t x, int64_t, const Round& rd) {
      for (const Op& op : rd)
        if (peer_of(op) == x) return true;
      return false;
    });
    if (!self) return true;
    for (int64_t x = 0; x < s_.p; ++x)
      for (int64_t t = 0; t < s_.num_rounds; ++t)
        for (const Op& op : s_.ranks[size_t(x)][size_t(t)])
          if (peer_of(op) == x) {
            record(report(origin_of(op), at(x, t, first_block(blocks_of(op))) + "rank " + std::to_string(x) +
                                              (std::holds_alternative<SendOp>(op) ? " sends to itself" : " receives from itself")),
                   K::self_transfer, x, t, first_block(blocks_of(op)), x, !std::holds_alternative<SendOp>(op));
            return false;
          }
    return true;
  }
  /// A frames schedule's model (Schedule::one_port, links): at most one transfer per rank
  /// and round, each along a link of the topology.
  bool check_topology() {
    if (!s_.one_port && s_.links.empty()) return true;
    for (int64_t x = 0; x < s_.p; ++x)
      for (int64_t t = 0; t < s_.num_rounds; ++t) {
        const Op* first = nullptr;
        for (const Op& op : s_.ranks[size_t(x)][size_t(t)]) {
          if (!is_transfer(op)) continue;
          const int64_t y = peer_of(op);
          const bool sends = std::holds_alternative<SendOp>(op);
          if (!s_.links.empty() &&
              !std::binary_search(s_.links.begin(), s_.links.end(), std::pair<int64_t, int64_t>(std::min(x, y), std::max(x, y)))) {
            record(report(origin_of(op), at(x, t, first_block(blocks_of(op))) + "rank " + std::to_string(x) +
                                              (sends ? " sends to " : " receives from ") + "rank " + std::to_string(y) +
                                              ", which is not a neighbour in the topology (no link between them)"),
                   K::topology, x, t, first_block(blocks_of(op)), y, !sends);
            return false;
          }
          if (s_.one_port && first) {
            Diagnostic& d = report(origin_of(op), at(x, t, first_block(blocks_of(op))) + "rank " + std::to_string(x) +
                                                      " takes part in two transfers of one step (with ranks " +
                                                      std::to_string(peer_of(*first)) + " and " + std::to_string(y) +
                                                      "); the frames model allows one transfer per rank and step");
            add_note(d, origin_of(*first).span, "its other transfer of the step");
            record(d, K::topology, x, t, first_block(blocks_of(op)), y, !sends);
            return false;
          }
          first = &op;
        }
      }
    return true;
  }
  /// Whether every transfer between x and y in round t has its counterpart (match_round's
  /// rule, schedule.h).
  bool pair_matches(int64_t x, int64_t t, int64_t y) const {
    const RoundMatching& m = matching(t);
    for (const auto& [r, q] : {std::pair{x, y}, std::pair{y, x}}) {
      const Round& rd = s_.ranks[size_t(r)][size_t(t)];
      for (size_t i = 0; i < rd.size(); ++i)
        if (is_transfer(rd[i]) && peer_of(rd[i]) == q && m.mate_of(r, i) < 0) return false;
    }
    return true;
  }
  /// The op that op i of rank x in round t meets (a complete round's).
  const Op& mate(int64_t x, int64_t t, size_t i) const {
    const Op& op = s_.ranks[size_t(x)][size_t(t)][i];
    return s_.ranks[size_t(peer_of(op))][size_t(t)][size_t(matching(t).mate_of(x, i))];
  }
  /// The send that receive j of rank y in round t meets (a complete round's): the k-th send
  /// of x to y for y's k-th receive from x (match_round's rule), found by scanning both
  /// ranks' round when they are short (the butterflies and trees: one to four ops), so the
  /// data-flow pass does not match every round a second time; else from the matching.
  /// Null when there is none (only a speculative data flow, run_side_by_side(), asks
  /// before the matching is proved complete).
  const Op* sender_of(int64_t y, int64_t t, size_t j) const {
    const Round mine = s_.ranks[size_t(y)][size_t(t)];
    const int64_t x = peer_of(mine[j]);
    const Round theirs = s_.ranks[size_t(x)][size_t(t)];
    if (mine.size() <= kShortRound && theirs.size() <= kShortRound) {
      size_t k = 0;
      for (size_t i = 0; i < j; ++i)
        if (const auto* r = std::get_if<RecvOp>(&mine[i]); r && r->peer == x) ++k;
      for (const Op& op : theirs)
        if (const auto* snd = std::get_if<SendOp>(&op); snd && snd->peer == y && k-- == 0) return &op;
    }
    if (matching(t).mate_of(y, j) < 0) return nullptr;
    return &mate(y, t, j);
  }
  /// Round t's matching. When every round pairs up only one round's is kept (the passes
  /// go in round order; at p = 2^20 all rounds' would take 250 MB), recomputed when
  /// another round is asked for; after a failure, every round's (the deadlock search
  /// visits any round).
  const RoundMatching& matching(int64_t t) const {
    if (all_rounds_) return match_[size_t(t)];
    if (cur_t_ != t) {
      match_round(s_, t, cur_);
      cur_t_ = t;
    }
    return cur_;
  }
  /// Zero-buffering execution: a rank finishes round t when every transfer of its round t
  /// is matched by the peer's round t (match_round(), schedule.h: the k-th send of x to y
  /// meets the k-th receive of y from x). Ranks that can never finish a round are
  /// deadlocked; the report follows the wait-for chain. Linear-time sufficient condition
  /// (O(n log n) per round): every round's matching is complete. Then all ranks proceed in
  /// lockstep and nothing can block; the simulation below only runs to explain a failure.
  /// Also checks message sizes round by round while the round's matching is at hand
  /// (size_failure_: the first round with a mismatch, reported once every round pairs up,
  /// since a deadlock is reported first).
  bool rounds_pair_up() {
    size_failure_ = -1;
    for (int64_t t = 0; t < s_.num_rounds; ++t) {
      cur_t_ = -1;
      if (!match_round(s_, t, cur_)) {
        match_.resize(size_t(s_.num_rounds));
        for (int64_t u = 0; u < s_.num_rounds; ++u) {
          match_round(s_, u, match_[size_t(u)]);
          acct_.add((match_[size_t(u)].at.capacity() + match_[size_t(u)].mate.capacity()) * sizeof(uint32_t),
                    "the matching of every round (to explain the deadlock)");
        }
        all_rounds_ = true;
        return false;
      }
      cur_t_ = t;
      if (size_failure_ < 0 && !check_sizes(t, false)) size_failure_ = t;
    }
    return true;
  }
  bool check_matching() {
    if (rounds_pair_up()) return size_failure_ < 0 || check_sizes(size_failure_, true);
    const int64_t T = s_.num_rounds;
    std::vector<int64_t> cur(size_t(s_.p), 0);
    auto blocker = [&](int64_t x, const Op** op_out) -> int64_t {  // peer x waits for, or -1
      const int64_t t = cur[size_t(x)];
      for (const Op& op : s_.ranks[size_t(x)][size_t(t)]) {
        if (!is_transfer(op)) continue;
        const int64_t y = peer_of(op);
        if (cur[size_t(y)] < t || !pair_matches(x, t, y)) {
          *op_out = &op;
          return y;
        }
      }
      return -1;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (int64_t x = 0; x < s_.p; ++x) {
        const Op* op = nullptr;
        while (cur[size_t(x)] < T && blocker(x, &op) < 0) {
          ++cur[size_t(x)];
          changed = true;
        }
      }
    }
    int64_t x = -1;
    for (int64_t y = 0; y < s_.p; ++y)
      if (cur[size_t(y)] < T && (x < 0 || cur[size_t(y)] < cur[size_t(x)])) x = y;
    if (x < 0) {
      for (int64_t t = 0; t < T; ++t)
        if (!check_sizes(t, true)) return false;
      return true;
    }
    // Deadlock: describe the first stuck rank and the chain of ranks it waits for.
    const Op* op = nullptr;
    const int64_t t = cur[size_t(x)];
    const int64_t y = blocker(x, &op);
    const bool is_send = std::holds_alternative<SendOp>(*op);
    std::string msg = at(x, t, first_block(blocks_of(*op))) + "deadlock: " + (is_send ? "send to rank " : "receive from rank ") +
                      std::to_string(y) + " is never matched: rank " + std::to_string(y);
    if (cur[size_t(y)] < t)
      msg += " is blocked in round " + std::to_string(cur[size_t(y)]) + " and never reaches round " + std::to_string(t);
    else
      msg += " posts no " + std::string(is_send ? "receive from" : "send to") + " rank " + std::to_string(x) + " in round " + std::to_string(t);
    Diagnostic& d = record(report(origin_of(*op), msg), K::deadlock, x, t, first_block(blocks_of(*op)), y, !is_send);
    cex_.wait_for = {x, y};
    cex_.wait_rounds = {t};
    if (cur[size_t(y)] >= t) wrong_peer_note(d, x, y, t, is_send);
    // Where does y talk to x instead? The nearest other round, the later one on a tie (a
    // transfer moved to a later round).
    std::vector<int64_t> order;
    for (int64_t dist = 1; dist < T; ++dist)
      for (int64_t u : {t + dist, t - dist})
        if (u >= 0 && u < T) order.push_back(u);
    // Only an operation unmatched in its own round can be this one's counterpart (a
    // matched one belongs to another message): the first in that order, named by its blocks.
    for (int64_t u : order) {
      const Round& rd = s_.ranks[size_t(y)][size_t(u)];
      const Op* other = nullptr;
      for (size_t i = 0; i < rd.size() && !other; ++i)
        if (is_transfer(rd[i]) && peer_of(rd[i]) == x && std::holds_alternative<SendOp>(rd[i]) == !is_send &&
            matching(u).mate_of(y, i) < 0)
          other = &rd[i];
      if (!other) continue;
      add_note(d, origin_of(*other).span, "rank " + std::to_string(y) + " posts the matching " + (is_send ? "receive" : "send") +
                                              " in round " + std::to_string(u) + " (its " + (is_send ? "receive" : "send") +
                                              (blocks_of(*other).empty() ? std::string() : " of blocks " + format_blocks(blocks_of(*other))) +
                                              (is_send ? " from" : " to") + " rank " + std::to_string(x) + ", unmatched there)");
      cex_.match_round = u;
      break;
    }
    // Wait-for chain.
    std::vector<int64_t> seen{x};
    int64_t z = y;
    for (int guard = 0; guard < 16 && cur[size_t(z)] < T; ++guard) {
      const Op* zop = nullptr;
      const int64_t w = blocker(z, &zop);
      if (w < 0 || !zop) break;
      add_note(d, origin_of(*zop).span, "rank " + std::to_string(z) + " waits in round " + std::to_string(cur[size_t(z)]) +
                                            " for rank " + std::to_string(w));
      cex_.wait_rounds.push_back(cur[size_t(z)]);
      cex_.wait_for.push_back(w);
      if (std::find(seen.begin(), seen.end(), w) != seen.end()) {
        cex_.cycle = true;
        add_note(d, Span{}, "wait-for cycle closes at rank " + std::to_string(w));
        break;
      }
      seen.push_back(z);
      z = w;
    }
    return false;
  }
  /// Which rank's peer breaks the match of x's op with y in round t (y reached round t):
  /// y's round-t op of the same direction whose own peer w posts nothing towards y (y
  /// names the wrong peer), else a rank z that expects x's op in round t but is not y (x
  /// names the wrong peer). Adds a note and sets cex_.wrong_peer_rank; nothing if neither.
  void wrong_peer_note(Diagnostic& d, int64_t x, int64_t y, int64_t t, bool x_sends) {
    for (const Op& op : s_.ranks[size_t(y)][size_t(t)]) {
      if (!is_transfer(op) || std::holds_alternative<SendOp>(op) == x_sends) continue;  // y's op of the direction x needs
      const int64_t w = peer_of(op);
      if (w == x || pair_matches(y, t, w)) continue;
      add_note(d, origin_of(op).span, "wrong peer: rank " + std::to_string(y) + (x_sends ? " receives from rank " : " sends to rank ") +
                                          std::to_string(w) + " in round " + std::to_string(t) + ", which posts no matching " +
                                          (x_sends ? "send" : "receive"));
      cex_.wrong_peer_rank = y;
      return;
    }
    for (int64_t z = 0; z < s_.p; ++z) {
      if (z == y || z == x) continue;
      for (const Op& op : s_.ranks[size_t(z)][size_t(t)])
        if (is_transfer(op) && peer_of(op) == x && std::holds_alternative<SendOp>(op) == !x_sends && !pair_matches(z, t, x)) {
          add_note(d, origin_of(op).span, "wrong peer: rank " + std::to_string(z) + (x_sends ? " expects the send" : " expects the receive") +
                                              " of rank " + std::to_string(x) + " in round " + std::to_string(t) + ", which goes to rank " +
                                              std::to_string(y));
          cex_.wrong_peer_rank = x;
          return;
        }
    }
  }
  /// "block 3", or "block 3 of buffer 2" for a scratch block: the first slot of class c
  /// (init_classes()).
  std::string blk(int64_t c) const {
    const int64_t i = lo_of(c);
    if (i < s_.blocks) return "block " + std::to_string(i);
    return "block " + std::to_string(i % s_.blocks) + " of buffer " + std::to_string(i / s_.blocks);
  }
  /// Whether matched sends and receives of round t agree on sizes; with `say`, the first
  /// mismatch (in rank order) is reported as the error.
  bool check_sizes(int64_t t, bool say) {
    for (int64_t x = 0; x < s_.p; ++x) {
      const Round& rd = s_.ranks[size_t(x)][size_t(t)];
      for (size_t j = 0; j < rd.size(); ++j) {
        if (!std::holds_alternative<SendOp>(rd[j])) continue;
        const int64_t y = peer_of(rd[j]);
        const Op* rcv = &mate(x, t, j);
        if (block_ref_of(rd[j]) == block_ref_of(*rcv)) continue;  // interned: the same set
        const BlockSet& a = blocks_of(rd[j]);
        const BlockSet& b = blocks_of(*rcv);
        if (!message_sizes_agree(s_, a, b)) {
          if (!say) return false;
          Diagnostic& d = record(report(origin_of(rd[j]),
                                        at(x, t, first_block((a - b) | (b - a))) + "message size mismatch: rank " + std::to_string(x) +
                                            " sends blocks " + format_blocks(a) + " to rank " + std::to_string(y) +
                                            ", which receives blocks " + format_blocks(b) + " (" + message_size_rule(s_) + ")"),
                                 K::size_mismatch, x, t, first_block((a - b) | (b - a)), y);
          add_note(d, origin_of(*rcv).span, "the receive of rank " + std::to_string(y) + " is here");
          return false;
        }
      }
    }
    return true;
  }
  /// No block written by two receives of one round (unless both reduce).
  /// Reduce receives land in scratch memory and are combined after the round's wait, in
  /// posting order (runtime end_round), so two reduce receives of one block do not race:
  /// step() combines them one after the other.
  /// Receives i < j of one rank's round that write a common block (and do not both
  /// reduce); the blocks they share, empty if none.
  static BlockSet racing(const Round& rd, size_t i, size_t j) {
    // A send reads the state at the start of the round and receives land at its end (the
    // runtime receives into scratch what overlaps a send), so only two writes of one block
    // conflict; two reduce receives are combined in posting order.
    const auto* ri = std::get_if<RecvOp>(&rd[i]);
    const auto* rj = std::get_if<RecvOp>(&rd[j]);
    if (!ri || !rj || (ri->reduce && rj->reduce)) return BlockSet();
    return ri->blocks.get() & rj->blocks.get();
  }
  /// Whether some two receives of `rd` race (racing() nonempty for a pair): pairwise for a
  /// few ops, else one sweep over the receives' block ranges in order of their start,
  /// O(k log k) for k ranges (the pairs of a round of p - 1 receives, as in a one-round
  /// alltoall, were p^3 / 2 tests per instance: 85% of its check at p = 700).
  bool round_races(const Round& rd) {
    if (rd.size() <= kShortRound) {
      for (size_t i = 0; i < rd.size(); ++i)
        for (size_t j = i + 1; j < rd.size(); ++j)
          if (!racing(rd, i, j).empty()) return true;
      return false;
    }
    std::vector<RaceRange>& rs = race_ranges_;
    rs.clear();
    for (size_t i = 0; i < rd.size(); ++i)
      if (const auto* r = std::get_if<RecvOp>(&rd[i]))
        for (const auto& [lo, hi] : r->blocks.get().ranges()) rs.push_back({lo, hi, r->reduce});
    std::sort(rs.begin(), rs.end(), [](const RaceRange& a, const RaceRange& b) { return a.lo < b.lo; });
    // A range overlaps an earlier one (in this order) iff that one ends after its start;
    // the ranges of one receive are disjoint, so an overlap is between two receives, and
    // it races unless both reduce.
    int64_t end_any = INT64_MIN, end_copy = INT64_MIN;
    for (const RaceRange& r : rs) {
      if (r.lo < (r.reduce ? end_copy : end_any)) return true;
      end_any = std::max(end_any, r.hi);
      if (!r.reduce) end_copy = std::max(end_copy, r.hi);
    }
    return false;
  }
  struct RaceRange {
    int64_t lo, hi;
    bool reduce;
  };
  std::vector<RaceRange> race_ranges_;  ///< round_races() scratch
  bool check_races() {
    const bool race = any_op_round([this](int64_t, int64_t, const Round& rd) { return round_races(rd); });
    if (!race) return true;
    for (int64_t x = 0; x < s_.p; ++x)
      for (int64_t t = 0; t < s_.num_rounds; ++t) {
        const Round& rd = s_.ranks[size_t(x)][size_t(t)];
        if (!round_races(rd)) continue;  // the pairs, to name the first, only where there is one
        for (size_t i = 0; i < rd.size(); ++i) {
          const auto* ri = std::get_if<RecvOp>(&rd[i]);
          if (!ri) continue;
          for (size_t j = i + 1; j < rd.size(); ++j) {
            const BlockSet both = racing(rd, i, j);
            if (both.empty()) continue;
            Diagnostic& d = record(report(ri->origin, at(x, t, first_block(both)) + "race: blocks " + format_blocks(both) +
                                                          " are written by two receives in the same round"),
                                   K::race, x, t, first_block(both));
            cex_.blocks = both;
            cex_.race_peers[0] = ri->peer;
            cex_.race_peers[1] = peer_of(rd[j]);
            add_note(d, origin_of(rd[j]).span, "the other receive is here (rank " + std::to_string(x) + " receives these blocks from rank " +
                                                   std::to_string(ri->peer) + " and from rank " + std::to_string(peer_of(rd[j])) + ")");
            return false;
          }
        }
      }
    return true;
  }

  // ---- block classes ----
  /// The data flow runs on classes of slots rather than on single blocks: for a vector
  /// collective (bcast, reduce, allreduce, scan, exscan; and barrier, whose messages carry
  /// none), the cut points of every block set an operation of the instance names, taken
  /// modulo B, split [0, B) into runs of blocks that every operation treats alike (it names
  /// all of a run or none of it), and each buffer's slots into the same runs. Messages and
  /// local statements of these collectives map the k-th block onto the k-th block of equal
  /// sets (the same vector blocks, in order, with scratch buffers: message_sizes_agree()),
  /// so every block of a run goes through the same receives, reductions and copies as the
  /// run's first block, with its own index: one state per run is exact, and the run's first
  /// block, which fails first if any does, names it. `blocks 2^24` whose messages are whole
  /// vectors then costs what `blocks 1` costs. Rank-indexed collectives (messages pair
  /// blocks by count, `permute`) and instances with a `permute` keep one class per block,
  /// as do instances whose sets cut every block (then the classes are the blocks);
  /// VerifyOptions::block_classes = false forces that (the reference, tests/unit).
  void init_classes() {
    const int64_t B = s_.blocks, S = B * (s_.scratch + 1);
    identity_ = true;
    classes_ = S;
    vclasses_ = B;
    cls_lo_.clear();
    if (!opt_.block_classes || collective_has_rank_blocks(s_.collective) || B <= 1) return;
    std::vector<int64_t> cut{0};
    std::vector<bool> seen;  // interned block sets already cut (BlockSetRef ids)
    bool permutes = false;
    auto add = [&](BlockSetRef r) {
      const size_t id = r.id();
      if (id < seen.size() && seen[id]) return;
      if (id >= seen.size()) seen.resize(std::max<size_t>(id + 1, 2 * seen.size()), false);
      seen[id] = true;
      for (const auto& [lo, hi] : r.ranges()) {
        cut.push_back(lo % B);
        cut.push_back(hi % B);
      }
    };
    any_op_round([&](int64_t, int64_t, const Round& rd) {
      for (const Op& op : rd) {
        if (std::holds_alternative<PermuteOp>(op)) permutes = true;
        else if (const auto* lo = std::get_if<LocalOp>(&op)) add(lo->src), add(lo->blocks);
        else add(block_ref_of(op));
      }
      return permutes;
    });
    if (permutes) return;
    std::sort(cut.begin(), cut.end());
    cut.erase(std::unique(cut.begin(), cut.end()), cut.end());
    const int64_t V = int64_t(cut.size());  // runs of [0, B): [cut[v], cut[v + 1]), the last up to B
    if (V == B) return;                      // every block cut: the classes are the blocks
    identity_ = false;
    vclasses_ = V;
    classes_ = V * (s_.scratch + 1);
    cls_lo_.reserve(size_t(classes_ + 1));
    for (int64_t j = 0; j <= s_.scratch; ++j)
      for (int64_t v = 0; v < V; ++v) cls_lo_.push_back(j * B + cut[size_t(v)]);
    cls_lo_.push_back(S);
  }
  /// The first slot of class c.
  int64_t lo_of(int64_t c) const { return identity_ ? c : cls_lo_[size_t(c)]; }
  /// Appends the classes of set `b`, in order (its ranges are unions of classes).
  void classes_of(const BlockSet& b, std::vector<int64_t>& out) const {
    for (const auto& [lo, hi] : b.ranges()) {
      if (identity_) {
        for (int64_t i = lo; i < hi; ++i) out.push_back(i);
        continue;
      }
      int64_t c = int64_t(std::upper_bound(cls_lo_.begin(), cls_lo_.end(), lo) - cls_lo_.begin()) - 1;
      for (; c < classes_ && cls_lo_[size_t(c)] < hi; ++c) out.push_back(c);
    }
  }

  // ---- data flow ----
  /// Rank `rank`'s original data of vector class c (its first block stands for all).
  int32_t leaf(int64_t rank, int64_t c) {
    int32_t& id = leaves_[size_t(rank * vclasses_ + c)];
    if (id == kNone) {
      Term t;
      t.block = int32_t(lo_of(c));
      t.lo = t.hi = int32_t(rank);
      t.set = circ(rank);
      id = new_term(t);
    }
    return id;
  }
  /// Appends term t; the terms' memory is added to the account a chunk at a time.
  int32_t new_term(const Term& t) {
    if ((terms_.size() & 4095) == 0)
      acct_.add(4096 * sizeof(Term), "the verifier's reduction terms (" + std::to_string(terms_.size()) + " so far)");
    const int32_t id = int32_t(terms_.size());
    terms_.push_back(t);
    return id;
  }
  /// Terms a and b hold data of different blocks: reducing them mixes blocks (every
  /// reduction's result is one block's contributions; a term already mixed was reported).
  bool mixes(int32_t a, int32_t b) const {
    const int32_t x = terms_[size_t(a)].block, y = terms_[size_t(b)].block;
    return x != y && x != -2 && y != -2;
  }
  /// Leaf sets that are circular intervals of ranks (mod p) are kept in the term itself,
  /// not interned (Term::set <= -2: the start; the length is the term's count): the sets
  /// butterflies and trees build are such intervals, a new one for nearly every rank and
  /// round (about p log2 p at p = 2^20), and two adjacent ones unite in O(1) without
  /// touching the interning table. Others are RankSets ids.
  static int32_t circ(int64_t start) { return int32_t(-2 - start); }
  static bool is_circ(int32_t set) { return set <= -2; }
  static int64_t circ_start(int32_t set) { return -2 - int64_t(set); }
  /// Term a's leaf set as a RankSets id (interns a circular interval).
  int32_t set_id(int32_t a) {
    const Term& t = terms_[size_t(a)];
    if (!is_circ(t.set)) return t.set;
    const int64_t lo = circ_start(t.set), n = t.count;
    if (n == s_.p) return sets_.interval(0, s_.p);
    if (lo + n <= s_.p) return sets_.interval(lo, lo + n);
    return sets_.two_intervals(0, lo + n - s_.p, lo, s_.p);
  }
  /// Whether term a's leaves are exactly ranks [0, n).
  bool leaves_are_prefix(int32_t a, int64_t n) const {
    const Term& t = terms_[size_t(a)];
    if (is_circ(t.set)) return t.count == n && (circ_start(t.set) == 0 || t.count == s_.p);
    return t.count == n && sets_.is_all(t.set, n);
  }
  /// The union of the leaf sets of terms a and b (a Term::set code), or kNone when they
  /// share a leaf rank (reducing them would count a contribution twice); combine() takes
  /// it, so each reduction unites its operands once.
  int32_t leaf_union(int32_t a, int32_t b) {
    const Term& x = terms_[size_t(a)];
    const Term& y = terms_[size_t(b)];
    if (is_circ(x.set) && is_circ(y.set) && int64_t(x.count) + y.count <= s_.p) {
      // Two circular intervals whose lengths sum to at most p: when one ends where the
      // other starts they are disjoint and their union is the interval from the first.
      const int64_t xs = circ_start(x.set), ys = circ_start(y.set);
      if ((xs + x.count) % s_.p == ys) return x.set;
      if ((ys + y.count) % s_.p == xs) return y.set;
    }
    return sets_.unite(set_id(a), set_id(b));
  }
  /// op(a, b) with leaf set `leaves`: the one in a's memo when b is one of a's last two
  /// right operands, else a new term.
  int32_t combine(int32_t a, int32_t b, int32_t leaves) {
    if (const Term& x = terms_[size_t(a)]; x.memo_right[0] == b || x.memo_right[1] == b)
      return x.memo[x.memo_right[0] == b ? 0 : 1];
    const Term& x = terms_[size_t(a)];
    const Term& y = terms_[size_t(b)];
    Term t;
    t.left = a;
    t.right = b;
    t.block = x.block == y.block ? x.block : -2;
    t.lo = std::min(x.lo, y.lo);
    t.hi = std::max(x.hi, y.hi);
    t.count = x.count + y.count;
    t.set = leaves;  // leaf_union(a, b): disjoint, the caller checked
    t.ordered = x.ordered && y.ordered && x.hi + 1 == y.lo;
    const int32_t id = new_term(t);
    Term& l = terms_[size_t(a)];  // the newest pair second, the oldest forgotten
    l.memo_right[0] = l.memo_right[1];
    l.memo[0] = l.memo[1];
    l.memo_right[1] = b;
    l.memo[1] = id;
    return id;
  }
  /// Whether terms a and b are the same bracketing of the same leaves (equal ids are; a
  /// reduction built twice from the same operands may have two ids). Compared top down,
  /// pair after pair of subterms, without recursion (a ring's terms are chains p deep),
  /// stopping at the first difference; the pairs found equal are remembered (same_), so
  /// the ranks' terms compared with the first rank's cost the pairs they add, not their
  /// trees' sizes each. Leaves are interned: a leaf equals only itself.
  bool same_tree(int32_t a, int32_t b) {
    std::vector<std::pair<int32_t, int32_t>>& stack = same_stack_;
    stack.assign(1, {a, b});
    while (!stack.empty()) {
      const auto [x, y] = stack.back();
      stack.pop_back();
      if (x == y) continue;
      const uint64_t key = (uint64_t(uint32_t(x)) << 32) | uint32_t(y);
      if (int32_t seen; same_.find(key, &seen)) continue;
      const Term& u = terms_[size_t(x)];
      const Term& v = terms_[size_t(y)];
      if (u.left == kNone || v.left == kNone || u.count != v.count || u.lo != v.lo || u.hi != v.hi) return false;
      same_.insert(key, 1);  // a difference below ends every comparison (same_bracketing is false)
      stack.push_back({u.left, v.left});
      stack.push_back({u.right, v.right});
    }
    return true;
  }
  void init_state() {
    init_classes();
    // The vector's classes, then the scratch buffers' (empty).
    const size_t slots = size_t(classes_);
    acct_.add(uint64_t(s_.p) * (uint64_t(vclasses_) * sizeof(int32_t) + slots * (sizeof(int32_t) + sizeof(WriteSite))),
              "the data-flow state (" + std::to_string(s_.p) + " ranks x " + std::to_string(slots) + " block" +
                  (identity_ ? "s" : " classes") + ")",
              uint64_t(slots) > uint64_t(s_.p) ? ResourceLimit::Lever::blocks : ResourceLimit::Lever::p);
    leaves_.assign(size_t(s_.p * vclasses_), kNone);
    state_.assign(size_t(s_.p), slots, kNone);
    writer_.assign(size_t(s_.p), slots, WriteSite{});
    for (int64_t x = 0; x < s_.p; ++x)
      for (int64_t b = 0; b < vclasses_; ++b) {
        int32_t v = kNone;
        switch (s_.collective) {
          case Collective::reduce:
          case Collective::allreduce:
          case Collective::reduce_scatter:
          case Collective::scan:
          case Collective::exscan: v = leaf(x, b); break;
          case Collective::barrier: break;  // no data: knowledge (heard_) is what moves
          case Collective::bcast:
          case Collective::scatter: v = x == s_.root ? leaf(x, b) : kNone; break;
          case Collective::allgather:
          case Collective::gather: v = b == x ? leaf(x, b) : kNone; break;  // rank-indexed: a class is a block
          case Collective::alltoall: v = leaf(x, b); break;
        }
        state_[size_t(x)][size_t(b)] = v;
      }
    if (s_.collective == Collective::barrier) init_heard();
  }
  // ---- barrier: who has heard from whom ----
  /// A barrier moves no data; what it must establish is that no rank leaves before every
  /// rank has entered. Rank y has heard from rank x when a chain of messages leads from x
  /// to y, each sent in an earlier or the same round as the next is received: y's
  /// knowledge after round t is its own plus that of every rank it receives from in
  /// round t, as that rank knew it at the start of round t (the round model: sends read
  /// the state at the start of the round). A send alone teaches the sender nothing.
  /// Bit sets of p bits per rank, p^2 / 8 bytes twice (the start-of-round copy), hence
  /// kMaxBarrierP.
  static constexpr int64_t kMaxBarrierP = 16384;
  void init_heard() {
    words_ = size_t((s_.p + 63) / 64);
    acct_.add(2 * uint64_t(s_.p) * words_ * sizeof(uint64_t),
              "the barrier's who-has-heard-from-whom bits (" + std::to_string(s_.p) + " x " + std::to_string(s_.p) + " bits, twice)");
    heard_.assign(size_t(s_.p) * words_, 0);
    for (int64_t x = 0; x < s_.p; ++x) heard_[size_t(x) * words_ + size_t(x / 64)] |= uint64_t(1) << (x % 64);
  }
  void step_heard(int64_t t) {
    heard_prev_ = heard_;
    for (int64_t y = 0; y < s_.p; ++y)
      for (const Op& op : s_.ranks[size_t(y)][size_t(t)])
        if (const auto* rv = std::get_if<RecvOp>(&op)) {
          const uint64_t* from = heard_prev_.data() + size_t(rv->peer) * words_;
          uint64_t* to = heard_.data() + size_t(y) * words_;
          for (size_t w = 0; w < words_; ++w) to[w] |= from[w];
        }
  }
  /// The barrier's postcondition: every rank has heard from every rank.
  bool check_heard() {
    for (int64_t y = 0; y < s_.p; ++y)
      for (int64_t x = 0; x < s_.p; ++x)
        if (!(heard_[size_t(y) * words_ + size_t(x / 64)] >> (x % 64) & 1)) {
          record(diags_.error(s_.decl_span, inst() + at(y, s_.num_rounds - 1) + "postcondition of barrier fails: rank " +
                                                std::to_string(y) + " can leave before rank " + std::to_string(x) +
                                                " enters (no chain of messages leads from rank " + std::to_string(x) +
                                                " to rank " + std::to_string(y) + ")"),
                 K::missing, y, s_.num_rounds - 1, -1, x, true);
          cex_.missing_ranks = {x};
          return false;
        }
    return true;
  }
  struct Update {
    int64_t rank, block;
    int32_t term;
    const Origin* origin;
  };
  bool step(int64_t t) {
    std::vector<Update>& ups = ups_;
    ups.clear();
    // Block -> index in ups of rank y's reduce of it in this round (-1: none), reset after
    // each rank: updates of rank y are pushed while y is processed.
    reduced_.resize(state_.cols(), -1);
    for (int64_t y = 0; y < s_.p; ++y) {
      for (int64_t b : touched_) reduced_[size_t(b)] = -1;
      touched_.clear();
      const Round& mine = s_.ranks[size_t(y)][size_t(t)];
      for (size_t j = 0; j < mine.size(); ++j) {
        const auto* rv = std::get_if<RecvOp>(&mine[j]);
        if (!rv) continue;
        const int64_t x = rv->peer;
        const Op* sndp = sender_of(y, t, j);
        if (!sndp) return speculation_failed();
        const Op& snd = *sndp;
        if (keeps_blocks_ && block_ref_of(snd) != rv->blocks) keeps_blocks_ = false;
        if (direct_ && rv->blocks.size() != 1) direct_ = false;
        // The k-th sent block lands in the k-th received block (identical sets for vector
        // collectives, equal counts for rank-indexed blocks; check_sizes() proved it).
        // In classes of blocks (init_classes()): the k-th sent class onto the k-th received.
        std::vector<int64_t>& from = from_;
        from.clear();
        classes_of(blocks_of(snd), from);
        std::vector<int64_t>& into = into_;
        into.clear();
        classes_of(rv->blocks, into);
        size_t next = 0;
        for (const int64_t b : into) {
          if (next == from.size()) return speculation_failed();
          const int64_t sb = from[next++];
          const int32_t v = state_[size_t(x)][size_t(sb)];
          if (v == kNone) {
            Diagnostic& d = record(report(origin_of(snd), at(x, t, lo_of(sb)) + "rank " + std::to_string(x) + " sends " + blk(sb) +
                                                              " to rank " + std::to_string(y) + " but holds no data for it"),
                                   K::no_data, x, t, lo_of(sb), y);
            add_write_note(d, x, sb);
            return false;
          }
          if (direct_) {  // the item from x to y, moved by x itself
            const Term& it = terms_[size_t(v)];
            if (!(it.count == 1 && it.lo == x && it.hi == x && it.block == y)) direct_ = false;
          }
          int32_t nv = v;
          if (rv->reduce) {
            // A block reduced twice in this round: the second reduction combines into the
            // result of the first (runtime order), so a repeated contribution shows.
            const int64_t prev = reduced_[size_t(b)];
            const int32_t o = prev >= 0 ? ups[size_t(prev)].term : state_[size_t(y)][size_t(b)];
            if (o == kNone) {
              record(report(rv->origin, at(y, t, lo_of(b)) + "rank " + std::to_string(y) + " reduces into " + blk(b) +
                                            " but holds no data for it"),
                     K::no_data, y, t, lo_of(b), x, true);
              return false;
            }
            const int32_t leaves = leaf_union(o, v);
            if (leaves == kNone) {
              const std::vector<int64_t> dup = sets_.intersection(set_id(o), set_id(v));
              Diagnostic& d = record(report(rv->origin, at(y, t, lo_of(b)) + "double-counted contribution: the contribution of rank" +
                                                            (dup.size() > 1 ? "s " : " ") + list_ranks(dup) + " to block " +
                                                            std::to_string(lo_of(b)) + " reaches rank " + std::to_string(y) + " twice"),
                                     K::double_count, y, t, lo_of(b), x, true);
              cex_.doubled_ranks = dup;
              add_note(d, origin_of(snd).span, "rank " + std::to_string(x) + " sends it here");
              return false;
            }
            if (mixes(o, v)) {
              // Reported where it happens, not at the postcondition (issue 18).
              Diagnostic& d = record(report(rv->origin, at(y, t, lo_of(b)) + "block " + std::to_string(lo_of(b)) +
                                                            " is combined with data of another block (block " +
                                                            std::to_string(terms_[size_t(v)].block) + ", sent by rank " +
                                                            std::to_string(x) + " from its block " + std::to_string(lo_of(sb)) + ")"),
                                     K::wrong_data, y, t, lo_of(b), x, true);
              add_note(d, origin_of(snd).span, "rank " + std::to_string(x) + " sends it here");
              return false;
            }
            nv = received_is_left_operand(x, y) ? combine(v, o, leaves) : combine(o, v, leaves);
            if (prev >= 0) {
              ups[size_t(prev)].term = nv;
              ups[size_t(prev)].origin = &rv->origin.get();
              continue;
            }
            reduced_[size_t(b)] = int64_t(ups.size());
            touched_.push_back(b);
          }
          ups.push_back({y, b, nv, &rv->origin.get()});
        }
      }
    }
    for (const Update& u : ups) {
      state_[size_t(u.rank)][size_t(u.block)] = u.term;
      writer_[size_t(u.rank)][size_t(u.block)] = {t, u.origin};
    }
    // Local reductions and copies, after the round's receives, in program order.
    for (int64_t y = 0; y < s_.p; ++y)
      for (const Op& op : s_.ranks[size_t(y)][size_t(t)])
        if (const auto* lo = std::get_if<LocalOp>(&op))
          if (!apply_local(y, t, *lo)) return false;
    // Local permutations, after the round's receives: block j moves to block to[j].
    for (int64_t y = 0; y < s_.p; ++y)
      for (const Op& op : s_.ranks[size_t(y)][size_t(t)])
        if (const auto* pm = std::get_if<PermuteOp>(&op)) {
          std::vector<int32_t> moved(state_.cols(), kNone);
          std::vector<WriteSite> wmoved(moved.size());
          for (size_t j = 0; j < pm->to.size(); ++j) {
            moved[size_t(pm->to[j])] = state_[size_t(y)][j];
            wmoved[size_t(pm->to[j])] = {t, &pm->origin.get()};
          }
          std::copy(moved.begin(), moved.end(), state_[size_t(y)]);
          std::copy(wmoved.begin(), wmoved.end(), writer_[size_t(y)]);
        }
    return true;
  }
  /// `reduce S into D` / `copy S into D` on rank y: the k-th block of S onto the k-th of D.
  bool apply_local(int64_t y, int64_t t, const LocalOp& lo) {
    const char* what = lo.reduce ? "local reduce" : "local copy";
    const BlockSet both = lo.src.get() & lo.blocks.get();
    if (!both.empty()) {
      record(report(lo.origin, at(y, t, first_block(both)) + what + ": source and destination share blocks " + format_blocks(both)),
             K::local, y, t, first_block(both));
      cex_.blocks = both;
      return false;
    }
    if (!message_sizes_agree(s_, lo.src, lo.blocks)) {
      record(report(lo.origin, at(y, t, first_block(lo.blocks)) + what + " size mismatch: blocks " + format_blocks(lo.src) +
                                   " onto blocks " + format_blocks(lo.blocks) + " (" + message_size_rule(s_) + ")"),
             K::local, y, t, first_block(lo.blocks));
      return false;
    }
    std::vector<int64_t> from, into;  // classes (init_classes())
    classes_of(lo.src, from);
    classes_of(lo.blocks, into);
    size_t next = 0;
    int32_t* st = state_[size_t(y)];
    for (const int64_t d : into) {
      const int64_t sb = from[next++];
      const int32_t v = st[size_t(sb)];
      if (v == kNone) {
        Diagnostic& dg = record(report(lo.origin, at(y, t, lo_of(sb)) + what + ": rank " + std::to_string(y) + " reads " + blk(sb) +
                                           " but holds no data for it"),
                                K::no_data, y, t, lo_of(sb));
        add_write_note(dg, y, sb);
        return false;
      }
      int32_t nv = v;
      if (lo.reduce) {
        const int32_t o = st[size_t(d)];
        if (o == kNone) {
          record(report(lo.origin, at(y, t, lo_of(d)) + "local reduce: rank " + std::to_string(y) + " reduces into " + blk(d) +
                                   " but holds no data for it"),
                 K::no_data, y, t, lo_of(d));
          return false;
        }
        const int32_t leaves = leaf_union(o, v);
        if (leaves == kNone) {
          const std::vector<int64_t> dup = sets_.intersection(set_id(o), set_id(v));
          record(report(lo.origin, at(y, t, lo_of(d)) + "double-counted contribution: local reduce of " + blk(sb) + " into " + blk(d) +
                                   " counts rank" + (dup.size() > 1 ? "s " : " ") + list_ranks(dup) + " twice"),
                 K::double_count, y, t, lo_of(d));
          cex_.doubled_ranks = dup;
          return false;
        }
        if (mixes(o, v)) {
          record(report(lo.origin, at(y, t, lo_of(d)) + "local reduce: block " + std::to_string(lo_of(d)) +
                                   " is combined with data of another block (block " +
                                   std::to_string(terms_[size_t(v)].block) + ", from " + blk(sb) + ")"),
                 K::wrong_data, y, t, lo_of(d));
          return false;
        }
        nv = combine(v, o, leaves);
      }
      st[size_t(d)] = nv;
      writer_[size_t(y)][size_t(d)] = {t, &lo.origin.get()};
    }
    return true;
  }
  /// Ranks in increasing order as ranges, "{0-3, 5, 128-255}": at most 16 ranges, then
  /// "... (N ranks)".
  static std::string list_ranks(const std::vector<int64_t>& v) {
    std::vector<std::pair<int64_t, int64_t>> runs;  // [lo, hi]
    for (int64_t r : v) {
      if (!runs.empty() && runs.back().second + 1 == r) runs.back().second = r;
      else runs.push_back({r, r});
    }
    return ranges_text(runs, int64_t(v.size()));
  }
  /// "{0-3, 5}" of inclusive runs [lo, hi]; `count` ranks in all.
  static std::string ranges_text(const std::vector<std::pair<int64_t, int64_t>>& runs, int64_t count) {
    std::string s = "{";
    for (size_t i = 0; i < runs.size(); ++i) {
      if (i == 16) {
        s += ", ... (" + std::to_string(count) + " ranks)";
        break;
      }
      s += (i ? ", " : "") + std::to_string(runs[i].first);
      if (runs[i].second > runs[i].first) s += "-" + std::to_string(runs[i].second);
    }
    return s + "}";
  }
  /// Term a's leaf ranks as ranges.
  std::string leaf_set_text(int32_t a) {
    std::vector<std::pair<int64_t, int64_t>> runs;
    int64_t count = 0;
    for (const auto& [lo, hi] : sets_.intervals(set_id(a))) {
      runs.push_back({lo, hi - 1});
      count += hi - lo;
    }
    return ranges_text(runs, count);
  }
  /// Term a as a bracketing (ReductionWitness): leaves x<rank>, reductions (l + r); a
  /// subterm in rank order as x{lo-hi} when `ordered_as_range`; past about `budget`
  /// characters, subterms as x{their ranks}. The budget bounds the recursion too (each
  /// level costs characters).
  std::string render(int32_t a, bool ordered_as_range, int64_t& budget) {
    const Term& t = terms_[size_t(a)];
    if (t.left == kNone) {
      budget -= 3;
      return "x" + std::to_string(t.lo);
    }
    if ((ordered_as_range && t.ordered) || budget < 12) {
      budget -= 8;
      return "x" + leaf_set_text(a);
    }
    budget -= 5;
    const int32_t l = t.left, r = t.right;  // terms_ may not move while rendering: read first
    std::string left = render(l, ordered_as_range, budget);
    std::string right = render(r, ordered_as_range, budget);
    return "(" + left + " + " + right + ")";
  }
  std::string render(int32_t a, bool ordered_as_range) {
    int64_t budget = 160;
    return render(a, ordered_as_range, budget);
  }
  /// The order witness of final term id of rank x, class b: the reduction, found from the
  /// top through its unordered operands, whose operands are each in rank order but not one
  /// after the other.
  void order_witness(VerifyResult& res, int64_t x, int64_t b, int32_t id) {
    ReductionWitness& w = res.order_witness;
    w.rank = x;
    w.block = lo_of(b);
    w.bracketing = render(id, true);
    int32_t n = id;
    for (;;) {
      const Term& t = terms_[size_t(n)];
      if (!terms_[size_t(t.left)].ordered) n = t.left;
      else if (!terms_[size_t(t.right)].ordered) n = t.right;
      else break;
    }
    const Term& t = terms_[size_t(n)];
    const Term &l = terms_[size_t(t.left)], &r = terms_[size_t(t.right)];
    const auto ranks = [](int64_t lo, int64_t hi) {
      return hi > lo ? "ranks {" + std::to_string(lo) + "-" + std::to_string(hi) + "}" : "rank " + std::to_string(lo);
    };
    w.reason = "its reduction " + render(n, true) + " combines " + ranks(l.lo, l.hi) + " with " + ranks(r.lo, r.hi);
    if (l.lo > r.hi) w.reason += ", which come before them in rank order";
    else w.reason += ", leaving out " + ranks(l.hi + 1, r.lo - 1) + " between them";
  }
  /// The bracketing witness: ranks `first` and x hold block b as terms a and id, which
  /// differ; the first pair of subterms (top down, left first) that differs in shape.
  void bracketing_witness(VerifyResult& res, int64_t first, int32_t a, int64_t x, int64_t b, int32_t id) {
    ReductionWitness& w = res.bracketing_witness;
    w.rank = first;
    w.other_rank = x;
    w.block = lo_of(b);
    w.bracketing = render(a, false);
    w.other_bracketing = render(id, false);
    std::vector<std::pair<int32_t, int32_t>> stack{{a, id}};
    for (int guard = 0; !stack.empty() && guard < (1 << 20); ++guard) {
      const auto [u, v] = stack.back();
      stack.pop_back();
      if (u == v) continue;
      const Term &tu = terms_[size_t(u)], &tv = terms_[size_t(v)];
      if (tu.left == kNone || tv.left == kNone || tu.count != tv.count || tu.lo != tv.lo || tu.hi != tv.hi ||
          terms_[size_t(tu.left)].count != terms_[size_t(tv.left)].count) {
        if (u != a || v != id)
          w.reason = "the first subterms that differ: rank " + std::to_string(first) + " reduces " + render(u, false) +
                     " where rank " + std::to_string(x) + " reduces " + render(v, false);
        return;
      }
      stack.push_back({tu.right, tv.right});
      stack.push_back({tu.left, tv.left});
    }
  }
  /// A note at the statement that last wrote class b of rank x (its first block named).
  void add_write_note(Diagnostic& d, int64_t x, int64_t b) {
    const WriteSite& w = writer_[size_t(x)][size_t(b)];
    if (!w.origin) return;
    add_note(d, w.origin->span, "block " + std::to_string(lo_of(b)) + " of rank " + std::to_string(x) + " was last written in round " + std::to_string(w.round) + " here");
    // A receive made by a mirror or the fold points at a statement of another kind.
    if (!w.origin->via.empty()) add_note(d, w.origin->via_span, "that receive comes from " + w.origin->via);
  }
  // ---- postcondition ----
  /// Checks that rank x holds in block b exactly the reduction of block b over ranks
  /// [0, n): all ranks (n = p) for reduce, allreduce and reduce_scatter, the prefix
  /// 0..x for scan (n = x + 1) and 0..x-1 for exscan (n = x). Here and below `b` is a
  /// class of blocks (init_classes()), named by its first block `blk`.
  bool expect_reduction(int64_t x, int64_t b, VerifyResult& res, int64_t n) {
    const int32_t id = state_[size_t(x)][size_t(b)];
    const int64_t blk = lo_of(b);
    if (id == kNone) return missing(x, b, "the reduction of block " + std::to_string(blk));
    const Term& t = terms_[size_t(id)];
    // Every reduction checked its operands disjoint (leaf_union()), so the leaves are
    // distinct ranks and the set says exactly which.
    const bool exact_ok = leaves_are_prefix(id, n);
    if (t.block != blk) {
      Diagnostic& d = post(diags_.error(site(x, b), inst() + at(x, post_round(x, b), blk) + "block " + std::to_string(blk) +
                                                        " ends up combined with data of another block"),
                           K::wrong_data, x, b);
      add_write_note(d, x, b);
      return false;
    }
    if (!exact_ok) {
      // Leaves are distinct ranks (leaf_union() refused every repeat), so a wrong set either
      // lacks ranks of [0, n) or has ranks beyond the prefix (scan, exscan).
      const std::vector<int64_t> lost = sets_.complement(set_id(id), n), extra = sets_.from(set_id(id), n);
      std::string msg = inst() + at(x, post_round(x, b), blk) + "postcondition of " + collective_name(s_.collective) + " fails:";
      if (!lost.empty()) msg += " missing the contribution" + std::string(lost.size() > 1 ? "s" : "") + " of rank" + (lost.size() > 1 ? "s " : " ") + list_ranks(lost);
      if (!extra.empty())
        msg += std::string(lost.empty() ? "" : ";") + " includes the contribution" + (extra.size() > 1 ? "s" : "") + " of rank" +
               (extra.size() > 1 ? "s " : " ") + list_ranks(extra) + ", outside the prefix 0.." + std::to_string(n - 1);
      Diagnostic& d = post(diags_.error(site(x, b), msg), lost.empty() ? K::wrong_data : K::missing, x, b);
      cex_.missing_ranks = lost;
      if (writer_[size_t(x)][size_t(b)].origin)
        add_write_note(d, x, b);
      else
        add_note(d, Span{}, "no receive ever writes block " + std::to_string(blk) + " of rank " + std::to_string(x) +
                                ": it still holds the rank's own input");
      return false;
    }
    if (!t.ordered) {
      if (res.order_preserving) order_witness(res, x, b, id);
      res.order_preserving = false;
    }
    if (n != s_.p) return true;  // a prefix: each rank's is its own
    auto [it, fresh] = final_term_.emplace(b, std::pair<int32_t, int64_t>{id, x});
    if (!fresh && res.same_bracketing && !same_tree(it->second.first, id)) {
      res.same_bracketing = false;
      bracketing_witness(res, it->second.second, it->second.first, x, b, id);
    }
    return true;
  }
  bool expect_leaf(int64_t x, int64_t b, int64_t owner) {
    const int32_t id = state_[size_t(x)][size_t(b)];
    const int64_t blk = lo_of(b);
    if (id == kNone) return missing(x, b, "block " + std::to_string(blk) + " of rank " + std::to_string(owner));
    const Term& t = terms_[size_t(id)];
    if (t.left != kNone || t.lo != owner || t.block != blk) {
      Diagnostic& d = post(diags_.error(site(x, b), inst() + at(x, post_round(x, b), blk) + "postcondition of " +
                                                        collective_name(s_.collective) + " fails: holds " + describe(id) +
                                                        " instead of block " + std::to_string(blk) + " of rank " + std::to_string(owner)),
                           K::wrong_data, x, b);
      add_write_note(d, x, b);
      return false;
    }
    return true;
  }
  /// Alltoall: rank x's block b holds the original block `dst` of rank `src`.
  bool expect_item(int64_t x, int64_t b, int64_t src, int64_t dst) {
    const int32_t id = state_[size_t(x)][size_t(b)];
    if (id == kNone) return missing(x, b, "the block from rank " + std::to_string(src));
    const Term& t = terms_[size_t(id)];
    if (t.left != kNone || t.lo != src || t.block != dst) {
      Diagnostic& d = post(diags_.error(site(x, b), inst() + at(x, post_round(x, b), b) + "postcondition of alltoall fails: holds " +
                                                        describe(id) + " instead of block " + std::to_string(dst) + " of rank " +
                                                        std::to_string(src)),
                           K::wrong_data, x, b);
      add_write_note(d, x, b);
      return false;
    }
    return true;
  }
  std::string describe(int32_t id) const {
    const Term& t = terms_[size_t(id)];
    if (t.left == kNone) return "block " + std::to_string(t.block) + " of rank " + std::to_string(t.lo);
    return "a reduction of " + std::to_string(t.count) + " contributions";
  }
  bool missing(int64_t x, int64_t b, const std::string& what) {
    post(diags_.error(site(x, b), inst() + at(x, post_round(x, b), lo_of(b)) + "postcondition of " + collective_name(s_.collective) +
                                      " fails: rank " + std::to_string(x) + " never receives " + what),
         K::missing, x, b);
    return false;
  }
  /// The round a postcondition failure of rank x's class b is reported at: the round of
  /// the statement the diagnostic points at (the last write of the block), else, when no
  /// statement wrote it (the diagnostic points at the schedule), the last round.
  int64_t post_round(int64_t x, int64_t b) const {
    const WriteSite& w = writer_[size_t(x)][size_t(b)];
    return w.origin ? w.round : s_.num_rounds - 1;
  }
  /// Records a postcondition failure on rank x, class b (at post_round()).
  Diagnostic& post(Diagnostic& d, Counterexample::Kind kind, int64_t x, int64_t b) {
    record(d, kind, x, post_round(x, b), lo_of(b));
    cex_.write_round = writer_[size_t(x)][size_t(b)].origin ? writer_[size_t(x)][size_t(b)].round : -1;
    return d;
  }
  Span site(int64_t x, int64_t b) const {
    const WriteSite& w = writer_[size_t(x)][size_t(b)];
    return w.origin ? w.origin->span : s_.decl_span;
  }
  bool need_blocks_p() {
    if (s_.blocks == s_.p) return true;
    record(diags_.error(Span{}, inst() + std::string(collective_name(s_.collective)) +
                                    " schedules need 'blocks p' (one block per rank), got " + std::to_string(s_.blocks) + " blocks"),
           K::other, -1, -1, -1);
    return false;
  }
  bool check_post(VerifyResult& res) {
    const int64_t B = s_.blocks;  // rank-indexed collectives: every block its own class
    const int64_t V = vclasses_;  // vector collectives: the classes of the vector's blocks
    switch (s_.collective) {
      case Collective::allreduce:
        for (int64_t x = 0; x < s_.p; ++x)
          for (int64_t b = 0; b < V; ++b)
            if (!expect_reduction(x, b, res, s_.p)) return false;
        return true;
      case Collective::reduce:
        for (int64_t b = 0; b < V; ++b)
          if (!expect_reduction(s_.root, b, res, s_.p)) return false;
        return true;
      case Collective::reduce_scatter:
        if (!need_blocks_p()) return false;
        for (int64_t x = 0; x < s_.p; ++x)
          if (!expect_reduction(x, x, res, s_.p)) return false;
        return true;
      case Collective::scan:  // rank x: x_0 op x_1 op ... op x_x, in rank order (MPI 3.1 Sec. 5.11)
      case Collective::exscan:  // rank x > 0: x_0 op ... op x_{x-1}; rank 0 undefined
        for (int64_t x = s_.collective == Collective::exscan ? 1 : 0; x < s_.p; ++x)
          for (int64_t b = 0; b < V; ++b)
            if (!expect_reduction(x, b, res, s_.collective == Collective::scan ? x + 1 : x)) return false;
        return true;
      case Collective::barrier:
        return check_heard();
      case Collective::bcast:
        for (int64_t x = 0; x < s_.p; ++x)
          for (int64_t b = 0; b < V; ++b)
            if (!expect_leaf(x, b, s_.root)) return false;
        return true;
      case Collective::allgather:
        if (!need_blocks_p()) return false;
        for (int64_t x = 0; x < s_.p; ++x)
          for (int64_t b = 0; b < B; ++b)
            if (!expect_leaf(x, b, b)) return false;
        return true;
      case Collective::gather:
        if (!need_blocks_p()) return false;
        for (int64_t b = 0; b < B; ++b)
          if (!expect_leaf(s_.root, b, b)) return false;
        return true;
      case Collective::scatter:
        if (!need_blocks_p()) return false;
        for (int64_t x = 0; x < s_.p; ++x)
          if (!expect_leaf(x, x, s_.root)) return false;
        return true;
      case Collective::alltoall:
        // Rank x's block j starts as the item from x to j; finally rank x's block i must
        // hold the item from i to x.
        if (!need_blocks_p()) return false;
        for (int64_t x = 0; x < s_.p; ++x)
          for (int64_t i = 0; i < B; ++i)
            if (!expect_item(x, i, i, x)) return false;
        return true;
    }
    return false;
  }

  const Schedule& s_;
  DiagnosticSink& diags_;
  const VerifyOptions& opt_;
  MemoryAccount& acct_;  ///< the instance's memory (resource.h), shared by both sides of run_side_by_side()
  /// init_classes(): one class per slot (identity_), else classes_ classes whose first
  /// slots are cls_lo_ (and cls_lo_[classes_] = every slot), vclasses_ of them in the vector.
  bool identity_ = true;
  int64_t classes_ = 0, vclasses_ = 0;
  std::vector<int64_t> cls_lo_;
  /// run_side_by_side()'s data flow: the structure is not proved yet.
  bool speculative_ = false;
  bool speculation_failed_ = false;  ///< the speculation stopped (no diagnostic)
  /// Stops a speculative data flow where the structure breaks its assumptions; on a
  /// proved structure this cannot happen (check_matching(), check_sizes()).
  bool speculation_failed() {
    BINE_ASSERT(speculative_, "the data flow met an unmatched receive or a short message after the structure was proved");
    speculation_failed_ = true;
    return false;
  }
  RankSets sets_;
  ChunkedVector<Term> terms_;
  std::vector<int32_t> leaves_;
  FlatMap same_;  ///< same_tree(): pairs of term ids found (or being found) equal
  std::vector<std::pair<int32_t, int32_t>> same_stack_;
  std::vector<Update> ups_;        ///< step(): the round's updates (reused)
  std::vector<RoundMatching> match_;  ///< [round] every round's matching, after a failure (all_rounds_)
  bool all_rounds_ = false;
  mutable RoundMatching cur_;  ///< round cur_t_'s matching (-1: none)
  mutable int64_t cur_t_ = -1;
  int64_t size_failure_ = -1;  ///< the first round whose sizes disagree
  std::vector<int64_t> reduced_;   ///< step(): block -> index in ups_ of its reduce, or -1
  std::vector<int64_t> touched_;   ///< step(): blocks set in reduced_
  std::vector<int64_t> from_, into_;  ///< step(): the sent and the received classes in order (reused)
  Matrix<int32_t> state_;   ///< [rank][slot] the term a slot holds, kNone: no data
  Matrix<WriteSite> writer_;  ///< [rank][slot] the round and statement that last wrote it
  std::map<int64_t, std::pair<int32_t, int64_t>> final_term_;  ///< class -> (final term, the first rank holding it)
  bool keeps_blocks_ = true;               ///< every message so far lands in the blocks it left
  bool direct_ = true;                     ///< every message so far is one item, sender to receiver
  size_t words_ = 0;                       ///< barrier: 64-bit words per rank in heard_
  std::vector<uint64_t> heard_, heard_prev_;  ///< barrier: [rank * words_ + x / 64] bit x: heard from x
  Counterexample cex_;
};

}  // namespace

const char* counterexample_kind_name(Counterexample::Kind k) {
  switch (k) {
    case Counterexample::Kind::none: return "";
    case Counterexample::Kind::self_transfer: return "self-transfer";
    case Counterexample::Kind::deadlock: return "deadlock";
    case Counterexample::Kind::size_mismatch: return "size-mismatch";
    case Counterexample::Kind::race: return "race";
    case Counterexample::Kind::no_data: return "no-data";
    case Counterexample::Kind::double_count: return "double-count";
    case Counterexample::Kind::missing: return "missing";
    case Counterexample::Kind::wrong_data: return "wrong-data";
    case Counterexample::Kind::local: return "local";
    case Counterexample::Kind::topology: return "topology";
    case Counterexample::Kind::other: return "other";
  }
  return "";
}

VerifyResult verify(const Schedule& s, DiagnosticSink& diags, const VerifyOptions& opt) {
  const ActivityScope activity("verifying " + s.name + " at p=" + std::to_string(s.p) +
                               (collective_is_rooted(s.collective) ? " root=" + std::to_string(s.root) : ""));
  MemoryAccount acct(s.name + " at p=" + std::to_string(s.p));
  acct.add(s.accounted_bytes, "the instance");
  Verifier v(s, diags, opt, acct);
  VerifyResult res = s.p >= instance_parallel_min_p() && instance_threads() > 1 ? v.run_side_by_side() : v.run();
  res.instance_bytes = s.accounted_bytes;
  res.accounted_bytes = acct.total();
  return res;
}

}  // namespace bine
