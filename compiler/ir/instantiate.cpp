// The interpreter behind instantiation. One RankRun executes the schedule body for one
// rank; rounds are opened by round statements and round loops as sema classified them.
// What the rounds mean beyond the body's arithmetic (the folds, the mapping of body ranks
// and blocks to real ones, the mirror's replay) is the round pipeline of
// bine/rounds.hpp, the same code the generated MPI runtime runs; a Recorder sink turns its
// rounds into the Schedule (docs/architecture.md, "One round pipeline").
#include "instantiate.h"
#include "symmetry.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "bine/builtins.hpp"
#include "bine/rounds.hpp"
#include "builtins_table.h"
#include "frames.h"
#include "resource.h"

namespace bine {

namespace {
/// -1: not set yet (the environment decides), 0: off, 1: on.
std::atomic<int> g_batch_filters{-1};
}  // namespace
void set_batch_filters(bool on) { g_batch_filters.store(on ? 1 : 0); }
bool batch_filters_enabled() {
  int v = g_batch_filters.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("BINE_SCALAR_FILTERS");
    v = e && *e && std::string(e) != "0" ? 0 : 1;
    int expected = -1;
    g_batch_filters.compare_exchange_strong(expected, v);
    v = g_batch_filters.load();
  }
  return v == 1;
}

namespace {

constexpr int64_t kMaxSteps = 50'000'000;  ///< loop iterations and fn calls per rank
constexpr size_t kMaxRounds = size_t(1) << 20;  ///< rounds per rank (each holds ops and a label)
constexpr int64_t kMaxBlocks = int64_t(1) << 24;

struct Value {
  int64_t i = 0;
  BlockSet s;
};

/// "rank x" for messages; under a fold also the rank the body sees as r.
std::string describe(const FoldLayout& fl, int64_t x) {
  std::string d = "rank " + std::to_string(x);
  if (fl.on() && !fl.helper(x) && fl.body_rank(x) != x) d += " (r = " + std::to_string(fl.body_rank(x)) + " after the fold)";
  return d;
}

/// The statements the pipeline's operations come from (RoundOp::site, via_site), numbered
/// for one instantiation.
class SiteTable {
 public:
  int32_t id(const Stmt* s) {
    if (s == last_) return last_id_;
    auto [it, fresh] = ids_.try_emplace(s, int32_t(stmts_.size()));
    if (fresh) stmts_.push_back(s);
    last_ = s;
    return last_id_ = it->second;
  }
  const Stmt* at(int32_t id) const { return id >= 0 ? stmts_[size_t(id)] : nullptr; }
  /// The interned origin of (site, derivation, mirror site), once per instance: every rank
  /// and round reuses it (interning hashes the origin's text).
  template <class Make>
  OriginRef origin(int32_t site, Via via, int32_t via_site, Make&& make) {
    if (size_t(site + 1) >= origins_.size()) origins_.resize(size_t(site + 2));
    std::vector<OriginEntry>& e = origins_[size_t(site + 1)];
    for (const OriginEntry& x : e)
      if (x.via == via && x.via_site == via_site) return x.ref;
    e.push_back({via, via_site, OriginRef(make())});
    return e.back().ref;
  }

 private:
  struct OriginEntry {
    Via via;
    int32_t via_site;
    OriginRef ref;
  };
  std::vector<std::vector<OriginEntry>> origins_;  ///< [site + 1] see origin()
  std::unordered_map<const Stmt*, int32_t> ids_;
  std::vector<const Stmt*> stmts_;
  const Stmt* last_ = nullptr;
  int32_t last_id_ = -1;
};

struct Failure {};

/// "p=P root=R" for rooted collectives, "p=P" otherwise: the instance an error is about.
std::string instance_label(int64_t p, int64_t root, Collective c) {
  return "p=" + std::to_string(p) + (collective_is_rooted(c) ? " root=" + std::to_string(root) : "");
}

class RankRun;

/// The table of a frames statement for N packets, built once per process (it does not
/// depend on p, the root or the rank; the cache holds the FramesData alive, so its
/// address keys it).
const FramesTableData& frames_table(const std::shared_ptr<const FramesData>& f, int64_t packets, std::string& err,
                                    bool& ok) {
  struct Entry {
    std::shared_ptr<const FramesData> data;
    FramesTableData table;
    std::string err;
    bool ok = false;
  };
  static std::mutex mu;
  static std::map<std::pair<const FramesData*, int64_t>, Entry> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = cache.try_emplace({f.get(), packets});
  if (fresh) {
    it->second.data = f;
    it->second.ok = build_frames_table(*f, packets, it->second.table, it->second.err);
  }
  err = it->second.err;
  ok = it->second.ok;
  return it->second.table;
}

/// The sink of one rank's round pipeline: the instance rounds, in order, as Schedule ops
/// with their origins, and what kind each is (instantiate() places them).
struct Recorder {
  RankRun* run = nullptr;
  std::vector<Op> ops;            ///< every round's ops, round after round
  std::vector<uint32_t> start{0};  ///< [k] the first op of round k; one more entry than rounds
  std::vector<RoundKind> kinds;    ///< [k] the kind of round k
  int round(RoundKind kind, std::vector<RoundOp>& ops);
  void replay(int64_t body_round);
  int fold_error(const FoldRoundError& e);
};

/// The instance's rounds filled rank after rank while the ranks run, when every rank runs
/// the body (no fold helpers: rank x's k-th round is instance round k), so that no rank's
/// recording outlives its run: at p = 2^20 the recordings and the round-major store
/// together would double the ops' memory. A round's ops go to chunks that grow
/// geometrically up to 64K ops (no vector doubling over a whole round: its slack would
/// be a third of the ops' memory), each rank's ops of a round contiguous in one chunk
/// (RoundStore::place()); the chunks are the store, never copied again.
class RoundArenas {
 public:
  explicit RoundArenas(int64_t p, RoundStore& store) : p_(size_t(p)), store_(store) {}
  /// Moves rank x's recorded rounds into the store (x is the previous rank + 1) and
  /// empties `rec`'s rounds. False when a round outgrows the store (RoundStore::place()).
  bool append(int64_t x, Recorder& rec) {
    BINE_ASSERT(size_t(x) == next_, "ranks appended out of order");
    const size_t K = rec.kinds.size();
    if (x == 0) store_.start(int64_t(p_), K);
    BINE_ASSERT(K == store_.rounds(), "rank " + std::to_string(x) + " ran " + std::to_string(K) + " rounds, rank 0 " +
                                          std::to_string(store_.rounds()) + " (the round pipeline keeps them uniform)");
    for (size_t k = 0; k < K; ++k)
      if (!store_.place(k, size_t(x), rec.ops.data() + rec.start[k], rec.ops.data() + rec.start[k + 1])) return false;
    std::vector<Op>().swap(rec.ops);  // the rank's run stays as it is (the reference rank's is kept)
    rec.start.assign(1, 0);
    std::vector<RoundKind>().swap(rec.kinds);
    ++next_;
    return true;
  }
  /// Moves in `part`, which a RoundArenas of its own filled with every one of its ranks
  /// (the ranks after those appended here). False when a round outgrows the store.
  bool absorb(RoundArenas& part) {
    BINE_ASSERT(part.next_ == part.p_ && next_ + part.p_ <= p_ && part.store_.rounds() == store_.rounds(),
                "a part absorbed before its ranks ran, or with other rounds");
    if (!store_.absorb(std::move(part.store_), next_)) return false;
    next_ += part.p_;
    return true;
  }
  /// Every rank appended, T rounds.
  void finish(size_t T) const {
    BINE_ASSERT(next_ == p_ && T == store_.rounds(), "the ranks ran " + std::to_string(store_.rounds()) +
                                                         " rounds, the instance has " + std::to_string(T));
  }

 private:
  size_t p_;
  size_t next_ = 0;
  RoundStore& store_;
};

class RankRun {
 public:
  RankRun(const RankProgram& rp, const FoldLayout& fl, SiteTable& sites, int64_t real_rank, bool commutative,
          DiagnosticSink& diags)
      : rp_(rp), sites_(sites), rank_(real_rank), commutative_(commutative), diags_(diags), collective_(rp.collective) {
    pipe_.setup(fl, real_rank);
    pipe_.keep_log(rp_.has_mirror);
    p_ = pipe_.p();
    r_ = pipe_.r();
    root_ = pipe_.root();
    slots_.resize(size_t(rp.num_slots));
  }
  RankRun(const RankRun&) = delete;
  RankRun(RankRun&& o) noexcept = default;
  /// Makes this the fresh run of real rank `real_rank` of the same instance (as the
  /// constructor leaves it), keeping its vectors' capacity and the fns' batchable() memo:
  /// instantiate() recycles the run of a rank it has recorded and compared, so the next
  /// rank allocates nothing once the vectors have grown.
  void recycle(const FoldLayout& fl, int64_t real_rank) {
    rank_ = real_rank;
    pipe_.setup(fl, real_rank);
    pipe_.keep_log(rp_.has_mirror);
    p_ = pipe_.p();
    r_ = pipe_.r();
    root_ = pipe_.root();
    for (Value& v : slots_) v = Value{};
    rec.run = nullptr;
    rec.ops.clear();
    rec.start.assign(1, 0);
    rec.kinds.clear();
    sites.clear();
    labels.clear();
    keep_labels = true;
    segments.clear();
    blocks = 1;
    scratch = 0;
    top_segment = 0;
    unmet.clear();
    unmet_clause = nullptr;
    frame_.clear();
    frame_base_.clear();
    mirror_ = nullptr;
    phase_name_.clear();
    in_round_ = false;
    round_ops_ = 0;
    segment_ = 0;
    steps_ = 0;
  }

  Recorder rec;                     ///< the instance rounds of this rank
  std::vector<const Stmt*> sites;   ///< [body round] the statement that opened it (a mirror for its replays)
  std::vector<std::string> labels;  ///< [body round] (empty unless keep_labels)
  /// Whether to build the round labels: only the reference rank's are used (the first
  /// rank that runs the body); the others' rounds are compared by site and segment.
  bool keep_labels = true;
  /// The instance's memory account (resource.h): a round or a rank whose operations would
  /// not fit stops the instance with a ResourceLimit while it grows.
  MemoryAccount* account = nullptr;
  std::vector<int64_t> segments;    ///< [body round] the `segment` size in force (bytes, 0: none)
  int64_t blocks = 1;
  int64_t scratch = 0;              ///< K of `scratch K` (buffers besides the vector)
  int64_t top_segment = 0;          ///< the top-level schedule's `segment` (fold rounds use it)
  std::string unmet;
  const Expr* unmet_clause = nullptr;  ///< the first false `requires` clause

  /// True when the final mirror's replay of the first round was fused with the `fold 3-2`
  /// epilogue.
  bool fused() const { return pipe_.fused(); }

  /// Runs params, requires, blocks, the hoisted checks of inlined uses, the fold's
  /// prologue, the body and the fold's epilogue. Returns false when `requires` fails (unmet
  /// is set). Throws Failure after reporting a diagnostic.
  bool run() {
    rec.run = this;
    if (const Stmt* fr = find_frames(rp_.body); fr && p_ != fr->frames->nodes) {
      // The frames fix p: the instance exists only at p = nodes (like a false `requires`).
      unmet = frames_condition(*fr->frames);
      return false;
    }
    for (const Binding& b : rp_.params) slots_[size_t(b.slot)].i = eval_int(*b.value, b.span);
    for (const ExprPtr& e : rp_.requires_)
      if (!eval_int(*e, e->span)) {
        unmet = e->span.text();
        unmet_clause = e.get();
        return false;
      }
    const ScheduleDecl& sd = *rp_.decl;
    blocks = rp_.blocks ? eval_int(*rp_.blocks, rp_.blocks->span) : p_;
    if (lay().ring && blocks > kMaxBlocks / (2 * lay().ring))
      fail(rp_.blocks ? rp_.blocks->span : sd.name_span,
           "block count " + std::to_string(blocks) + " times 'fold ring " + std::to_string(lay().ring) +
               "' parts and buffers exceeds " + std::to_string(kMaxBlocks) + " blocks");
    if (blocks < 1 || blocks > kMaxBlocks)
      fail(rp_.blocks ? rp_.blocks->span : sd.name_span,
           "block count " + std::to_string(blocks) + " outside 1.." + std::to_string(kMaxBlocks));
    if (rp_.scratch) {
      scratch = eval_int(*rp_.scratch, rp_.scratch->span);
      if (scratch < 0 || (scratch + 1) > kMaxBlocks / buffer_stride())
        fail(rp_.scratch->span, "scratch buffer count " + std::to_string(scratch) + " outside 0.." +
                                     std::to_string(kMaxBlocks / buffer_stride() - 1) + " (at most " + std::to_string(kMaxBlocks) +
                                     " blocks in all buffers)");
    }
    top_segment = segment_ = eval_segment(rp_.segment.get(), 0);
    check_uses();
    pipe_.set_blocks(blocks);
    check(pipe_.prologue(rec, collective_));
    exec_block(rp_.body);
    check(pipe_.epilogue(rec, collective_));
    pipe_.release();
    return true;
  }
  /// A rank the fold sets aside (two-one): only the fold's rounds, on the instance's
  /// `body_blocks` blocks.
  void run_helper(int64_t body_blocks) {
    rec.run = this;
    pipe_.set_blocks(body_blocks);
    check(pipe_.prologue(rec, collective_));
    check(pipe_.epilogue(rec, collective_));
  }

  // ---- for the Recorder ----
  /// A mirror replays body round i: its label, site and segment.
  void replayed(int64_t i) {
    const Stmt& s = *mirror_;
    if (sites.size() >= kMaxRounds) fail(s.span, "more than " + std::to_string(kMaxRounds) + " rounds");
    sites.push_back(&s);
    if (keep_labels)
      labels.push_back("phase " + s.name + " (mirror of phase '" + s.other + "', its body round " + std::to_string(i) + ")");
    segments.push_back(segment_);
  }
  /// The Schedule op of a pipeline op, with its origin.
  Op op_of(RoundOp&& o) const {
    const OriginRef org = sites_.origin(o.site, o.via, o.via_site, [&] {
      const Stmt* site = sites_.at(o.site);
      Origin g{site ? site->span : Span{}, {}, {}};
      switch (o.via) {
        case Via::direct: break;
        case Via::mirror: {
          const Stmt* m = sites_.at(o.via_site);
          g.via = "mirror of phase '" + m->other + "'";
          g.via_span = m->span;
          break;
        }
        case Via::fold: g = Origin{rp_.fold_span, "fold", rp_.fold_span}; break;
        case Via::fold_pair: g.via = "fold 3-2 (2-1 pair)", g.via_span = rp_.fold_span; break;
        case Via::fold_step: g.via = "fold 3-2 (3-2 step)", g.via_span = rp_.fold_span; break;
      }
      return g;
    });
    switch (o.kind) {
      case RoundOp::Kind::send: return SendOp{o.peer, std::move(o.blocks), org};
      case RoundOp::Kind::recv: return RecvOp{o.peer, std::move(o.blocks), o.reduce, org};
      case RoundOp::Kind::local: return LocalOp{std::move(o.src), std::move(o.blocks), o.reduce, org};
      case RoundOp::Kind::permute: {
        PermuteOp pm;
        pm.to = std::move(o.to);
        pm.origin = org;
        pm.blocks = BlockSetRef(o.blocks);
        return pm;
      }
    }
    return SendOp{};
  }
  /// Reports why the body's first round cannot host `fold 3-2` (RT Sec. 3.1).
  void fold_round_error(const FoldRoundError& e) {
    std::string why;
    switch (e.why) {
      case FoldRoundError::Why::not_transfer: why = "has a local statement or permute in it"; break;
      case FoldRoundError::Why::wrong_peer:
        why = "communicates with " + describe(lay(), e.op->peer) + ", not with " + describe(lay(), e.partner);
        break;
      case FoldRoundError::Why::copies: why = "receives without reducing"; break;
    }
    const Stmt* site = sites_.at(e.op->site);
    diags_.error(site ? site->span : rp_.fold_span,
                 instance_label(lay().p, lay().root, collective_) + ": " + describe(lay(), rank_) +
                     ": 'fold 3-2' fuses the 3-2 and 2-1 elimination steps with the body's first round, which must be a "
                     "reducing exchange between r = 2w and 2w + 1 (RT Sec. 3.1); here r = " +
                     std::to_string(e.w) + " " + why);
  }

 private:
  [[noreturn]] void fail(const Span& at, const std::string& msg) {
    diags_.error(at, instance_label(lay().p, lay().root, collective_) + ": " + describe(lay(), rank_) + ": " + msg);
    throw Failure{};
  }
  /// A pipeline call's result: a Failure when it stopped (its diagnostic is reported).
  void check(int rc) {
    if (rc) throw Failure{};
  }
  /// A `segment` clause's value (bytes), else `inherited`.
  int64_t eval_segment(const Expr* seg, int64_t inherited) {
    if (!seg) return inherited;
    const int64_t v = eval_int(*seg, seg->span);
    if (v < 0) fail(seg->span, "segment size " + std::to_string(v) + " bytes is negative (0: no segmentation)");
    return v;
  }
  /// The inlined uses' params, requirements, block and scratch counts and segment sizes,
  /// in pre-order (each after its parent), before the fold's prologue: a composed
  /// schedule's false requirement is an error of the caller, reported at the use.
  /// A use on a sub-group sees the group's size and index as p and r, and its own block
  /// count; a use inside it sees the same (the scope of its nearest grouped ancestor).
  void check_uses() {
    const size_t n = rp_.uses.size();
    use_segments_.assign(n, 0);
    use_p_.assign(n, p_);
    use_r_.assign(n, r_);
    use_root_.assign(n, root_);
    use_blocks_.assign(n, blocks);
    const int64_t top_p = p_, top_r = r_, top_root = root_;
    for (size_t k = 0; k < n; ++k) {
      const InlinedUse& u = rp_.uses[k];
      const Stmt& s = *u.site;
      const ScheduleDecl& t = *u.schedule;
      const bool top = u.parent < 0;
      const int64_t caller_p = top ? top_p : use_p_[size_t(u.parent)], caller_r = top ? top_r : use_r_[size_t(u.parent)];
      const int64_t caller_root = top ? top_root : use_root_[size_t(u.parent)];
      const int64_t caller_blocks = top ? blocks : use_blocks_[size_t(u.parent)];
      use_p_[k] = caller_p, use_r_[k] = caller_r, use_root_[k] = caller_root;
      if (u.group != GroupKind::none) {
        RoundPipeline::GroupInfo g;
        std::string err;
        if (!RoundPipeline::group_of(u.group, top_r, top_root, collective_is_rooted(t.collective), g, err))
          fail(s.group_span, "phase '" + s.name + "' runs schedule '" + t.name + "' on " + group_kind_name(u.group) + ": " + err);
        use_p_[k] = int64_t(g.members.size()), use_r_[k] = g.index, use_root_[k] = g.root;
      }
      for (const Binding& b : u.params) {  // the caller's values in the caller's scope
        p_ = b.overridden ? caller_p : use_p_[k], r_ = b.overridden ? caller_r : use_r_[k];
        root_ = b.overridden ? caller_root : use_root_[k];
        slots_[size_t(b.slot)].i = eval_int(*b.value, b.value->span);
      }
      p_ = use_p_[k], r_ = use_r_[k], root_ = use_root_[k];
      for (const ExprPtr& e : u.requires_)
        if (!eval_int(*e, e->span))
          fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "', whose requirement '" + e->span.text() +
                              "' is false here");
      if (u.group != GroupKind::none) {
        const int64_t b = u.blocks ? eval_int(*u.blocks, u.blocks->span) : p_;
        if (b < 1 || b > kMaxBlocks)
          fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "' with " + std::to_string(b) +
                              " blocks, outside 1.." + std::to_string(kMaxBlocks));
        use_blocks_[k] = b;
      } else {
        use_blocks_[k] = caller_blocks;
        if (u.blocks) {
          // Fewer blocks than the caller: each is caller_blocks / b consecutive caller blocks
          // (GroupKind::whole; docs/language.md, "Composition").
          const int64_t b = eval_int(*u.blocks, u.blocks->span);
          if (b < 1 || caller_blocks % b != 0)
            fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "' with " + std::to_string(b) +
                                " blocks, but " + (top ? "this schedule has " : "its caller has ") + std::to_string(caller_blocks) +
                                ", not a multiple of " + std::to_string(b));
          use_blocks_[k] = b;
        }
      }
      if (u.scratch) {
        const int64_t n = eval_int(*u.scratch, u.scratch->span);
        if (n > scratch)
          fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "' with " + std::to_string(n) +
                              " scratch buffers, but this schedule declares " + std::to_string(scratch));
      }
      use_segments_[k] = eval_segment(u.segment.get(), u.parent < 0 ? top_segment : use_segments_[size_t(u.parent)]);
      p_ = top_p, r_ = top_r, root_ = top_root;
    }
  }
  void check_domain(const Span& at) {
    if (const char* e = take_domain_error()) fail(at, std::string("out of domain: ") + e);
  }
  /// `v`, after reporting a domain error raised while computing it at `at`.
  template <class T>
  T checked(T v, const Span& at) {
    check_domain(at);
    return v;
  }

  // ---- statements ----
  void exec_block(const Block& b) {
    for (const StmtPtr& s : b) exec(*s);
  }
  /// Opens a round at `site`; `label()` gives its label (built only when keep_labels).
  template <class Label>
  void open_round(const Stmt& site, Label&& label) {
    if (sites.size() >= kMaxRounds) fail(site.span, "more than " + std::to_string(kMaxRounds) + " rounds");
    sites.push_back(&site);
    if (keep_labels) labels.push_back(label());
    segments.push_back(segment_);
    pipe_.begin_round();
    in_round_ = true;
    round_ops_ = 0;
    round_site_ = &site;
  }
  void close_round() {
    in_round_ = false;
    check(pipe_.end_round(rec));
    round_ops_ = 0;
  }
  std::string where_label(const Stmt& s) const {
    std::string l = phase_name_.empty() ? "" : "phase " + phase_name_ + ", ";
    return l + "line " + std::to_string(s.span.line);
  }
  void exec(const Stmt& s) {
    if (s.round && !in_round_) {
      open_round(s, [&] { return where_label(s); });
      exec_inner(s);
      close_round();
      return;
    }
    exec_inner(s);
  }
  void exec_inner(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::let:
      case StmtKind::var:
      case StmtKind::assign:
        if (s.in_fn) frame_[frame_base_.back() + size_t(s.slot)] = eval_int(*s.a, s.span);
        else slots_[size_t(s.slot)] = eval(*s.a, s.span);
        return;
      case StmtKind::for_: {
        const int64_t lo = eval_int(*s.a, s.span), hi = eval_int(*s.b, s.span);
        for (int64_t i = lo; i < hi; ++i) {
          if (++steps_ > kMaxSteps) fail(s.span, "more than " + std::to_string(kMaxSteps) + " loop iterations");
          if (s.in_fn) frame_[frame_base_.back() + size_t(s.slot)] = i;
          else slots_[size_t(s.slot)].i = i;
          if (s.round_loop) {
            open_round(s, [&] { return where_label(s) + ", " + s.name + " = " + std::to_string(i); });
            exec_block(s.body);
            close_round();
          } else {
            exec_block(s.body);
          }
        }
        return;
      }
      case StmtKind::if_:
        if (eval_int(*s.a, s.span)) exec_block(s.body);
        else exec_block(s.else_body);
        return;
      case StmtKind::send: {
        const BlockSet set = eval_set(*s.a, s.span);
        const int64_t peer = eval_int(*s.b, s.span);
        in_round(s);
        pipe_.send(set, peer, sites_.id(&s));
        return;
      }
      case StmtKind::recv: {
        const BlockSet set = eval_set(*s.a, s.span);
        const int64_t peer = eval_int(*s.b, s.span);
        in_round(s);
        pipe_.recv(set, peer, s.reduce, sites_.id(&s));
        return;
      }
      case StmtKind::exchange: {
        const BlockSet out = eval_set(*s.a, s.span);
        const BlockSet in = eval_set(*s.b, s.span);
        const int64_t peer = eval_int(*s.c, s.span);
        in_round(s);
        pipe_.send(out, peer, sites_.id(&s));
        pipe_.recv(in, peer, s.reduce, sites_.id(&s));
        return;
      }
      case StmtKind::phase: {
        pipe_.begin_phase(s.phase_id);
        phase_name_ = s.name;
        exec_block(s.body);
        phase_name_.clear();
        pipe_.end_phase(s.phase_id);
        return;
      }
      case StmtKind::round_block:
        exec_block(s.body);
        return;
      case StmtKind::frames: {
        // One round per step; rank r plays node (r - root + frames root) mod P.
        const FramesData& f = *s.frames;
        std::string err;
        bool ok = false;
        const FramesTableData& tab = frames_table(s.frames, blocks, err, ok);
        if (!ok) {
          // About the frames, not this rank: no rank in the message.
          diags_.error(s.span, instance_label(lay().p, lay().root, collective_) + ": " + err);
          throw Failure{};
        }
        const FramesTable view = tab.view();
        const int64_t node = mod(bine::add(bine::sub(r_, root_), f.root), f.nodes);
        FramesOp op;
        for (int64_t t = 0; t < view.steps; ++t) {
          const int64_t k = t % view.frames;
          const Stmt& site = *s.body[size_t(k)];
          open_round(site, [&] {
            return "frames, step " + std::to_string(t) + " (frame " + std::to_string(k) + ", cycle " +
                   std::to_string(t / view.frames) + ")";
          });
          if (frames_op(view, node, t, op)) {
            const int64_t peer = mod(bine::add(bine::sub(op.peer, f.root), root_), f.nodes);
            const BlockSet one = BlockSet::block(op.packet, blocks);
            if (op.send) pipe_.send(one, peer, sites_.id(&site));
            else pipe_.recv(one, peer, /*reduce=*/false, sites_.id(&site));
          }
          close_round();
        }
        return;
      }
      case StmtKind::local: {
        const BlockSet src = eval_set(*s.a, s.span);
        const BlockSet dst = eval_set(*s.b, s.span);
        in_round(s);
        pipe_.local(src, dst, s.reduce, sites_.id(&s));
        return;
      }
      case StmtKind::permute: {
        // Block j moves to block f(j); f must be a bijection on [0, B).
        if (lay().on() && lay().blocked)
          fail(s.span, "'permute' under 'fold' with rank-indexed blocks is not supported");
        std::vector<int64_t> to(size_t(blocks), 0);
        std::vector<char> hit(size_t(blocks), 0);
        for (int64_t j = 0; j < blocks; ++j) {
          slots_[size_t(s.slot)].i = j;
          const int64_t d = eval_int(*s.a, s.span);
          if (d < 0 || d >= blocks)
            fail(s.a->span, "permute sends block " + std::to_string(j) + " to " + std::to_string(d) + ", outside [0, " +
                                std::to_string(blocks) + ")");
          if (hit[size_t(d)])
            fail(s.a->span, "permute is not a bijection: two blocks go to block " + std::to_string(d) + " (one of them is block " +
                                std::to_string(j) + ")");
          hit[size_t(d)] = 1;
          to[size_t(j)] = d;
        }
        in_round(s);
        pipe_.permute(std::move(to), sites_.id(&s));
        return;
      }
      case StmtKind::use: {
        // Composition, inlined by lower(): the used schedule's body on the same ranks and
        // blocks, as phase NAME; its params and checks were evaluated up front (check_uses).
        const std::string saved_name = phase_name_;
        const int64_t saved_segment = segment_;
        pipe_.begin_phase(s.phase_id);
        phase_name_ = s.name;
        segment_ = use_segments_[size_t(s.use)];
        if (s.group != GroupKind::none) {
          // On a sub-group (docs/language.md, "Composition on sub-groups"): the window in the
          // caller's scope, then the group's p, r and blocks inside.
          const size_t k = size_t(s.use);
          const BlockSet window = s.a ? eval_set(*s.a, s.a->span) : BlockSet::all(blocks);
          std::string err;
          if (!pipe_.begin_group(s.group, window, use_blocks_[k], collective_is_rooted(rp_.uses[k].schedule->collective), err))
            fail(s.a ? s.a->span : s.group_span,
                 "phase '" + s.name + "' on " + group_kind_name(s.group) + ", window " + format_blocks(window) + ": " + err);
          const int64_t saved_p = p_, saved_r = r_, saved_root = root_, saved_blocks = blocks;
          p_ = use_p_[k], r_ = use_r_[k], root_ = use_root_[k], blocks = use_blocks_[k];
          exec_block(s.body);
          p_ = saved_p, r_ = saved_r, root_ = saved_root, blocks = saved_blocks;
          pipe_.end_group();
        } else if (rp_.uses[size_t(s.use)].blocks) {
          // Its own block count (check_uses()): fewer than the caller's are rescaled on the
          // caller's ranks, as generated code does (the same count maps nothing).
          const size_t k = size_t(s.use);
          std::string err;
          if (!pipe_.begin_group(GroupKind::whole, BlockSet::all(blocks), use_blocks_[k], false, err))
            fail(s.c ? s.c->span : s.span, "phase '" + s.name + "' uses schedule '" + rp_.uses[k].schedule->name + "' with " +
                                               std::to_string(use_blocks_[k]) + " blocks: " + err);
          const int64_t saved_blocks = blocks;
          blocks = use_blocks_[k];
          exec_block(s.body);
          blocks = saved_blocks;
          pipe_.end_group();
        } else {
          exec_block(s.body);
        }
        segment_ = saved_segment;
        phase_name_ = saved_name;
        pipe_.end_phase(s.phase_id);
        return;
      }
      case StmtKind::mirror:
        // The pipeline replays the phase's rounds; replayed() labels each (Recorder::replay).
        mirror_ = &s;
        check(pipe_.mirror(rec, s.mirror_of, s.at_end, sites_.id(&s)));
        return;
    }
  }
  void in_round(const Stmt& s) {
    BINE_ASSERT(in_round_, s.span.where() + ": a transfer outside a round (sema classifies rounds)");
    if (account && (++round_ops_ & 4095) == 0) check_memory();
  }
 public:
  /// Whether this rank's operations so far fit in the instance's budget: the round being
  /// built (the pipeline's operations, a vector that doubles) and its recorded rounds.
  void check_memory() const {
    if (!account) return;
    // A vector that doubles holds its old and its new array while it grows: 3x its size.
    const uint64_t bytes = uint64_t(round_ops_) * 3 * sizeof(RoundOp) + uint64_t(rec.ops.capacity()) * sizeof(Op);
    account->check(
        bytes,
        [&] {
          return "rank " + std::to_string(rank_) + "'s operations (" + std::to_string(rec.ops.size() + size_t(round_ops_)) +
                 " so far" +
                 (round_site_ ? ", " + std::to_string(round_ops_) + " of them in the round opened at line " +
                                    std::to_string(round_site_->span.line)
                              : std::string()) +
                 ")";
        },
        ResourceLimit::Lever::ops);
  }
 private:

  // ---- expressions ----
  Value eval(const Expr& e, const Span& at) {
    Value v;
    if (e.type == Type::set) v.s = eval_set(e, at);
    else v.i = eval_int(e, at);
    return v;
  }
  int64_t eval_int(const Expr& e, const Span& at) {
    const int64_t v = kid(e, at);
    check_domain(e.span.valid() ? e.span : at);
    return v;
  }
  /// int_expr() of an operand, with the commonest leaves (slots, literals) read in place
  /// rather than by a call: half of the nodes a tree-walk visits are leaves.
  [[gnu::always_inline]] int64_t kid(const Expr& k, const Span& at) {
    if (k.kind == ExprKind::name) {
      if (k.ref == NameKind::slot) return slots_[size_t(k.slot)].i;
      if (k.ref == NameKind::root) return root_;
      if (k.ref == NameKind::r) return r_;
      if (k.ref == NameKind::p) return p_;
    }
    if (k.kind == ExprKind::integer || k.kind == ExprKind::boolean) return k.value;
    return int_expr(k, at);
  }
  int64_t int_expr(const Expr& e, const Span& at) {
    switch (e.kind) {
      case ExprKind::integer:
      case ExprKind::boolean: return e.value;
      case ExprKind::name:
        switch (e.ref) {
          case NameKind::p: return p_;
          case NameKind::r: return r_;
          case NameKind::root: return root_;
          case NameKind::commutative: return commutative_;
          case NameKind::slot: return slots_[size_t(e.slot)].i;
          case NameKind::fn_param: return frame_[frame_base_.back() + size_t(e.slot)];
          case NameKind::unresolved: break;
        }
        internal_error(__FILE__, __LINE__, e.span.where() + ": unresolved name (sema resolves every name)");
      case ExprKind::unary: return apply_unary(e.op, kid(*e.kids[0], at));
      case ExprKind::binary: {
        if (e.kids[0]->type == Type::set) {
          const BlockSet x = eval_set(*e.kids[0], at), y = eval_set(*e.kids[1], at);
          return e.op == Tok::eq ? x == y : x != y;
        }
        const int64_t a = kid(*e.kids[0], at);
        if (e.op == Tok::ampamp) return a && kid(*e.kids[1], at);
        if (e.op == Tok::pipepipe) return a || kid(*e.kids[1], at);
        const int64_t b = kid(*e.kids[1], at);
        switch (e.op) {  // only these raise domain errors (the common ones skip the check)
          case Tok::slash:
          case Tok::percent:
          case Tok::shl:
          case Tok::shr: return checked(apply_binary(e, a, b), e.span);
          default: return apply_binary(e, a, b);
        }
      }
      case ExprKind::ternary:
        return kid(*e.kids[0], at) ? kid(*e.kids[1], at) : kid(*e.kids[2], at);
      case ExprKind::call: return call(e, at);
      default: internal_error(__FILE__, __LINE__, e.span.where() + ": a set where sema typed an int");
    }
  }
  int64_t call(const Expr& e, const Span& at) {
    if (e.builtin >= 0) return checked(builtin(e, at), e.span);
    const FnDecl& f = e.fn >= 0 ? rp_.fns[size_t(e.fn)] : rp_.program->fns[size_t(-2 - e.fn)];
    // The frame goes on one stack of slots: the arguments, evaluated in order (a nested
    // call in an argument pushes its frame above them and pops it before the next one),
    // then the fn's locals. No allocation per call once the stack has grown.
    const size_t base = frame_.size();
    for (const ExprPtr& k : e.kids) {
      const int64_t v = kid(*k, at);
      frame_.push_back(v);
    }
    if (frame_base_.size() > 256) fail(e.span, "fn calls nested too deeply");
    // Calls count against the rank's step budget like loop iterations: fns that call the
    // previous one twice, level after level, grow exponentially without any loop.
    if (++steps_ > kMaxSteps)
      fail(e.span, "more than " + std::to_string(kMaxSteps) + " loop iterations and fn calls (in a call of fn '" + f.name + "')");
    frame_.resize(base + size_t(std::max<int64_t>(f.frame_size, int64_t(e.kids.size()))), 0);
    frame_base_.push_back(base);
    exec_block(f.stmts);
    const int64_t v = kid(*f.body, at);
    frame_base_.pop_back();
    frame_.resize(base);
    return v;
  }
  int64_t builtin(const Expr& e, const Span& at) {
    const BuiltinId id = BuiltinId(e.builtin);
    if (id == BuiltinId::size) return set_size(eval_set(*e.kids[0], at));
    if (id == BuiltinId::contains) return set_contains(eval_set(*e.kids[0], at), kid(*e.kids[1], at));
    const int64_t a = e.kids.empty() ? 0 : kid(*e.kids[0], at);  // regions() has none
    const int64_t b = e.kids.size() > 1 ? kid(*e.kids[1], at) : 0;
    return apply_builtin(e, a, b);
  }
  /// The value of unary operator `op` on `a` (wrapping, never a domain error).
  static int64_t apply_unary(Tok op, int64_t a) {
    if (op == Tok::minus) return neg(a);
    if (op == Tok::bang) return !a;
    return ~a;
  }
  /// Calls k(f) with f(a, b) = binary int operator e.op (not && or ||): one table of the
  /// operators for the scalar walk (apply_binary) and the batched one (a loop per
  /// operator). / % << >> raise the domain-error flag (bine/builtins.hpp) where they are
  /// undefined.
  template <class K>
  [[gnu::always_inline]] static int64_t binary_op(const Expr& e, K&& k) {
    switch (e.op) {
      case Tok::plus: return k([](int64_t a, int64_t b) { return bine::add(a, b); });
      case Tok::minus: return k([](int64_t a, int64_t b) { return sub(a, b); });
      case Tok::star: return k([](int64_t a, int64_t b) { return mul(a, b); });
      case Tok::slash: return k([](int64_t a, int64_t b) { return div(a, b); });
      case Tok::percent: return k([](int64_t a, int64_t b) { return rem(a, b); });
      case Tok::shl: return k([](int64_t a, int64_t b) { return shl(a, b); });
      case Tok::shr: return k([](int64_t a, int64_t b) { return shr(a, b); });
      case Tok::amp: return k([](int64_t a, int64_t b) { return a & b; });
      case Tok::pipe: return k([](int64_t a, int64_t b) { return a | b; });
      case Tok::caret: return k([](int64_t a, int64_t b) { return a ^ b; });
      case Tok::eq: return k([](int64_t a, int64_t b) -> int64_t { return a == b; });
      case Tok::ne: return k([](int64_t a, int64_t b) -> int64_t { return a != b; });
      case Tok::lt: return k([](int64_t a, int64_t b) -> int64_t { return a < b; });
      case Tok::le: return k([](int64_t a, int64_t b) -> int64_t { return a <= b; });
      case Tok::gt: return k([](int64_t a, int64_t b) -> int64_t { return a > b; });
      case Tok::ge: return k([](int64_t a, int64_t b) -> int64_t { return a >= b; });
      default: internal_error(__FILE__, __LINE__, e.span.where() + ": an operator sema does not type as int");
    }
  }
  [[gnu::always_inline]] static int64_t apply_binary(const Expr& e, int64_t a, int64_t b) {
    return binary_op(e, [&](auto f) { return f(a, b); });
  }
  /// Calls k(f) with f(a, b) = int built-in call `e` (not size or contains) on its
  /// argument values a and b (0 where it has fewer arguments); f raises the domain-error
  /// flag outside the built-in's domain. One table for the scalar and the batched walk.
  template <class K>
  [[gnu::always_inline]] static int64_t builtin_op(const Expr& e, K&& k) {
    using I = int64_t;
    switch (BuiltinId(e.builtin)) {
      case BuiltinId::log2: return k([](I a, I) -> I { return bine::log2(a); });
      case BuiltinId::ceil_log2: return k([](I a, I) -> I { return ceil_log2(a); });
      case BuiltinId::is_pow2: return k([](I a, I) -> I { return is_pow2(a); });
      case BuiltinId::pow2: return k([](I a, I) -> I { return pow2(a); });
      case BuiltinId::lowmask: return k([](I a, I) -> I { return lowmask(a); });
      case BuiltinId::popcount: return k([](I a, I) -> I { return popcount(a); });
      case BuiltinId::ctz: return k([](I a, I) -> I { return ctz(a); });
      case BuiltinId::clz: return k([](I a, I) -> I { return clz(a); });
      case BuiltinId::bitrev: return k([](I a, I b) -> I { return bitrev(a, b); });
      case BuiltinId::even: return k([](I a, I) -> I { return even(a); });
      case BuiltinId::odd: return k([](I a, I) -> I { return odd(a); });
      case BuiltinId::min: return k([](I a, I b) -> I { return bine::min(a, b); });
      case BuiltinId::max: return k([](I a, I b) -> I { return bine::max(a, b); });
      case BuiltinId::mod: return k([](I a, I b) -> I { return mod(a, b); });
      case BuiltinId::nb: return k([](I a, I) -> I { return nb(a); });
      case BuiltinId::from_nb: return k([](I a, I) -> I { return from_nb(a); });
      case BuiltinId::rho: return k([](I a, I) -> I { return rho(a); });
      case BuiltinId::nu: return k([](I a, I b) -> I { return nu(a, b); });
      case BuiltinId::nu_inv: return k([](I a, I b) -> I { return nu_inv(a, b); });
      case BuiltinId::regions: return k([](I, I) -> I { return bine::regions(); });
      case BuiltinId::region: return k([](I a, I) -> I { return bine::region(a); });
      case BuiltinId::local_rank: return k([](I a, I) -> I { return bine::local_rank(a); });
      case BuiltinId::region_size: return k([](I a, I) -> I { return bine::region_size(a); });
      case BuiltinId::region_rank: return k([](I a, I b) -> I { return bine::region_rank(a, b); });
      case BuiltinId::equal_regions: return k([](I, I) -> I { return bine::equal_regions(); });
      case BuiltinId::size:
      case BuiltinId::contains:
      case BuiltinId::buf:
      case BuiltinId::bufs: break;
    }
    internal_error(__FILE__, __LINE__, e.span.where() + ": unknown builtin " + e.name);
  }
  [[gnu::always_inline]] static int64_t apply_builtin(const Expr& e, int64_t a, int64_t b) {
    return builtin_op(e, [&](auto f) { return f(a, b); });
  }
  BlockSet eval_set(const Expr& e, const Span& at) {
    BlockSet s = set_expr(e, at);
    check_domain(e.span.valid() ? e.span : at);
    return s;
  }
  BlockSet set_expr(const Expr& e, const Span& at) {
    switch (e.kind) {
      case ExprKind::set_all: return BlockSet::all(blocks);
      case ExprKind::set_none: return {};
      case ExprKind::set_block: return BlockSet::block(int_expr(*e.kids[0], at), blocks);
      case ExprKind::set_range: {
        const int64_t a = int_expr(*e.kids[0], at), b = int_expr(*e.kids[1], at);
        auto shown = [&] { return "block range [" + std::to_string(a) + ", " + std::to_string(b) + ")"; };
        if (a > b) fail(e.span, shown() + " is reversed (its end is below its start)");
        if (a < 0 || b > blocks)
          fail(e.span, shown() + " is out of bounds [0, " + std::to_string(blocks) + ")");
        return BlockSet::range(a, b, blocks);
      }
      case ExprKind::set_wrap: {
        const int64_t a = int_expr(*e.kids[0], at), b = int_expr(*e.kids[1], at);
        auto shown = [&] { return "wrapping block range wrap[" + std::to_string(a) + ", " + std::to_string(b) + ")"; };
        if (a > b) fail(e.span, shown() + " is reversed (its end is below its start)");
        if (uint64_t(b) - uint64_t(a) > uint64_t(blocks))
          fail(e.span, shown() + " is longer than the " + std::to_string(blocks) + " blocks");
        return checked(BlockSet::wrap(a, b, blocks), e.span);
      }
      case ExprKind::set_stride:
        return stride(int_expr(*e.kids[0], at), int_expr(*e.kids[1], at), int_expr(*e.kids[2], at), e.span);
      case ExprKind::set_filter: {
        const BlockSet dom = set_expr(*e.kids[0], at);
        BlockSet out;
        if (batch_filters_enabled() && batch_filter(e, dom, out)) return out;
        for (const auto& [lo, hi] : dom.ranges())
          for (int64_t i = lo; i < hi; ++i) {
            if (++steps_ > kMaxSteps) fail(e.span, "more than " + std::to_string(kMaxSteps) + " loop iterations");
            slots_[size_t(e.slot)].i = i;
            if (int_expr(*e.kids[1], at)) out.push_back_block(i);
          }
        return out;
      }
      case ExprKind::binary: {
        const BlockSet x = set_expr(*e.kids[0], at), y = set_expr(*e.kids[1], at);
        if (e.op == Tok::pipe) return x | y;
        if (e.op == Tok::amp) return x & y;
        return x - y;
      }
      case ExprKind::ternary:
        return int_expr(*e.kids[0], at) ? set_expr(*e.kids[1], at) : set_expr(*e.kids[2], at);
      case ExprKind::name: return slots_[size_t(e.slot)].s;
      case ExprKind::call:
        if (e.builtin == int(BuiltinId::buf)) {
          // buf(j, S): blocks S of buffer j, i.e. block indices j * B + S.
          const int64_t j = int_expr(*e.kids[0], at);
          const BlockSet in = set_expr(*e.kids[1], at);
          if (j < 0 || j > scratch)
            fail(e.span, "buffer " + std::to_string(j) + " outside 0.." + std::to_string(scratch) +
                             (scratch ? " (0: the vector, 1.." + std::to_string(scratch) + ": the 'scratch' buffers)"
                                      : " (the schedule declares no 'scratch' buffers)"));
          if (!in.empty() && in.ranges().back().second > blocks)
            fail(e.kids[1]->span, "buf() takes blocks of the vector, [0, " + std::to_string(blocks) + ")");
          return in.shifted(j * buffer_stride());
        }
        if (e.builtin == int(BuiltinId::bufs)) {
          // bufs(a, b, S): blocks S of buffers a .. b-1.
          const int64_t a = int_expr(*e.kids[0], at), b = int_expr(*e.kids[1], at);
          const BlockSet in = set_expr(*e.kids[2], at);
          if (a < 0 || a > b || b > scratch + 1)
            fail(e.span, "buffers [" + std::to_string(a) + ", " + std::to_string(b) + ") outside [0, " + std::to_string(scratch + 1) +
                             ") (0: the vector" + (scratch ? ", 1.." + std::to_string(scratch) + ": the 'scratch' buffers)" : "; the schedule declares no 'scratch' buffers)"));
          if (!in.empty() && in.ranges().back().second > blocks)
            fail(e.kids[2]->span, "bufs() takes blocks of the vector, [0, " + std::to_string(blocks) + ")");
          BlockSet out;
          if (in == BlockSet::all(blocks) && buffer_stride() == blocks)
            return BlockSet::range(a * blocks, b * blocks, (scratch + 1) * blocks);
          for (int64_t j = a; j < b; ++j) out = out | in.shifted(j * buffer_stride());
          return out;
        }
        internal_error(__FILE__, __LINE__, e.span.where() + ": an int where sema typed a set");
      default: internal_error(__FILE__, __LINE__, e.span.where() + ": an int where sema typed a set");
    }
  }
  /// Blocks per buffer in the instance: B, or R * B under `fold ring R` (the body's blocks are
  /// one R-th of each buffer; real_blocks() then shifts them to the rank's part).
  /// The instance's fold layout (the pipeline's).
  const FoldLayout& lay() const { return pipe_.layout(); }
  int64_t buffer_stride() const { return lay().ring ? lay().ring * blocks : blocks; }
  /// BlockSet::stride's set (blocks first + j*step mod B, j < count), built in
  /// O(count log count) rather than by count unions, with wrapping arithmetic.
  BlockSet stride(int64_t first, int64_t step, int64_t count, const Span& at) {
    if (count < 0 || count > blocks)
      fail(at, "stride count " + std::to_string(count) + " is outside 0.." + std::to_string(blocks) + " (the block count)");
    std::vector<int64_t> idx;
    idx.reserve(size_t(count));
    for (int64_t j = 0; j < count; ++j) idx.push_back(mod(bine::add(first, mul(j, step)), blocks));
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    BlockSet s;
    for (int64_t i : idx) s.push_back_block(i);
    return s;
  }

  // ---- batched filters ----
  // `{ i in S if c }` evaluates c once per block of S, so a filter over all blocks costs p
  // tree walks per rank and op; for the locality-aware Bruck allgathers that was 85% of
  // the time at p = 1000. batch_filter() evaluates c for up to kLanes blocks at once, node
  // by node: a value that does not depend on i (most of c: r, the loop's variables, nu(r,
  // p)) is computed once, the others lane by lane. Same result as the scalar loop, or
  // none: a domain error, the step limit, calls nested too deeply, 8 MiB of lane arrays for
  // one chunk, or a construct it does not evaluate (set operands, fns with loops) make it
  // give up with nothing changed, and the scalar loop runs and reports exactly what it
  // always did (docs/architecture.md, "Batched filters").
  static constexpr size_t kLanes = 256;
  /// A value per lane (`a`, kLanes entries of which the active ones are meaningful), or one
  /// value for every lane (`a == nullptr`: `u`).
  struct Lanes {
    const int64_t* a = nullptr;
    int64_t u = 0;
    int64_t at(size_t j) const { return a ? a[j] : u; }
  };
  /// Scratch of batch_filter, reused by every rank of the thread: lane arrays (never moved
  /// while a chunk is evaluated) and the frames of fn calls.
  struct BatchScratch {
    std::vector<std::unique_ptr<int64_t[]>> blocks;
    size_t block = 0, used = 0;
    std::vector<Lanes> frame;       ///< fn arguments, innermost call last
    std::vector<size_t> frame_base;  ///< [batched call depth] where its arguments start
    size_t n = 0;                   ///< lanes in this chunk
    int slot = -1;                  ///< the filter's variable
    const int64_t* ids = nullptr;   ///< its value per lane
    /// take() ran out of its budget in this chunk: the batch gives up (bint() stops at the
    /// next call, batch_filter() checks after the chunk). A condition whose fns call
    /// others twice, level after level, would otherwise keep a lane array per call until
    /// the step limit (2 KiB x 12 million calls at p = 4).
    bool overflow = false;
    int64_t spare[kLanes];          ///< what take() hands out once overflowed
    static constexpr size_t kBlock = 64 * kLanes;
    static constexpr size_t kMaxBlocks = 64;  ///< 8 MiB of lane arrays per chunk
    int64_t* take() {
      if (used + kLanes > kBlock) ++block, used = 0;
      if (block == kMaxBlocks) {
        overflow = true;
        block = kMaxBlocks - 1, used = kBlock;
        return spare;
      }
      if (block == blocks.size()) blocks.emplace_back(new int64_t[kBlock]);
      int64_t* a = blocks[block].get() + used;
      used += kLanes;
      return a;
    }
  };
  static BatchScratch& batch_scratch() {
    thread_local BatchScratch b;
    return b;
  }
  /// Whether `c` is made only of what bint() evaluates: int and bool operands, built-ins
  /// other than size/contains, and fns whose body has no loop (let, var, assignments, ifs,
  /// then the result; memoised per fn: a chain of fns calling the previous one twice must
  /// not be walked exponentially).
  bool batchable(const Expr& c) {
    switch (c.kind) {
      case ExprKind::integer:
      case ExprKind::boolean: return true;
      case ExprKind::name: return c.ref != NameKind::unresolved;
      case ExprKind::unary: return batchable(*c.kids[0]);
      case ExprKind::binary: return c.kids[0]->type != Type::set && batchable(*c.kids[0]) && batchable(*c.kids[1]);
      case ExprKind::ternary: return batchable(*c.kids[0]) && batchable(*c.kids[1]) && batchable(*c.kids[2]);
      case ExprKind::call: {
        for (const ExprPtr& k : c.kids)
          if (k->type == Type::set || !batchable(*k)) return false;
        if (c.builtin >= 0) {
          const BuiltinId id = BuiltinId(c.builtin);
          return id != BuiltinId::size && id != BuiltinId::contains && id != BuiltinId::buf && id != BuiltinId::bufs;
        }
        const FnDecl& f = fn_of(c);
        for (const auto& [g, ok] : fn_batchable_)
          if (g == &f) return ok;
        const bool ok = batchable(*f.body) && batchable(f.stmts);
        fn_batchable_.emplace_back(&f, ok);
        return ok;
      }
      default: return false;
    }
  }
  /// A fn body's statements: let, var, assignments and ifs of them (no loops).
  bool batchable(const Block& b) {
    for (const StmtPtr& st : b) {
      switch (st->kind) {
        case StmtKind::let:
        case StmtKind::var:
        case StmtKind::assign:
          if (!batchable(*st->a)) return false;
          break;
        case StmtKind::if_:
          if (!batchable(*st->a) || !batchable(st->body) || !batchable(st->else_body)) return false;
          break;
        default: return false;
      }
    }
    return true;
  }
  /// The lanes of mask m (every lane when null) split by condition c: m1 where c holds,
  /// m2 where it does not, and how many of each.
  struct Split {
    int64_t *m1, *m2;
    int64_t act1, act2;
  };
  static Split split(const int64_t* c, const int64_t* m) {
    BatchScratch& B = batch_scratch();
    Split sp{B.take(), B.take(), 0, 0};
    for (size_t j = 0; j < B.n; ++j) {
      sp.act1 += sp.m1[j] = (!m || m[j]) && c[j] != 0;
      sp.act2 += sp.m2[j] = (!m || m[j]) && c[j] == 0;
    }
    return sp;
  }
  /// Runs a fn body's statements (batchable()) over the lanes of mask m (act of them) in
  /// the frame at `base`: an assignment changes only those lanes, an `if` runs each branch
  /// on the lanes that take it.
  bool bexec(const Block& b, const int64_t* m, int64_t act, size_t base) {
    BatchScratch& B = batch_scratch();
    for (const StmtPtr& st : b) {
      Lanes c;
      if (!bint(*st->a, m, act, c)) return false;
      if (st->kind != StmtKind::if_) {
        Lanes& slot = B.frame[base + size_t(st->slot)];
        if (m && (c.a || slot.a || c.u != slot.u)) {  // lanes outside m keep their value
          int64_t* r = B.take();
          for (size_t j = 0; j < B.n; ++j) r[j] = m[j] ? c.at(j) : slot.at(j);
          c = {r, 0};
        }
        slot = c;
        continue;
      }
      if (!c.a) {
        if (!bexec(c.u ? st->body : st->else_body, m, act, base)) return false;
        continue;
      }
      const auto [m1, m2, act1, act2] = split(c.a, m);
      if (act1 && !bexec(st->body, m1, act1, base)) return false;
      if (act2 && !bexec(st->else_body, m2, act2, base)) return false;
    }
    return true;
  }
  const FnDecl& fn_of(const Expr& call) const {
    return call.fn >= 0 ? rp_.fns[size_t(call.fn)] : rp_.program->fns[size_t(-2 - call.fn)];
  }
  /// Filter `e` over `dom` into `out` (empty on entry); false (out empty, steps_ and the
  /// domain-error flag as on entry) when the scalar loop must do it.
  bool batch_filter(const Expr& e, const BlockSet& dom, BlockSet& out) {
    if (dom.empty() || domain_error_slot() || !batchable(*e.kids[1])) return false;
    BatchScratch& B = batch_scratch();
    const int64_t saved_steps = steps_;
    auto give_up = [&] {
      steps_ = saved_steps;
      take_domain_error();
      B.frame.clear();
      B.frame_base.clear();
      out = BlockSet();
      return false;
    };
    B.slot = e.slot;
    for (const auto& [lo, hi] : dom.ranges())
      for (int64_t c0 = lo; c0 < hi; c0 += int64_t(kLanes)) {
        B.n = size_t(std::min<int64_t>(int64_t(kLanes), hi - c0));
        B.block = B.used = 0;
        B.overflow = false;
        int64_t* ids = B.take();
        for (size_t j = 0; j < B.n; ++j) ids[j] = c0 + int64_t(j);
        B.ids = ids;
        steps_ += int64_t(B.n);  // the scalar loop counts an iteration per block
        Lanes c;
        if (steps_ > kMaxSteps || !bint(*e.kids[1], nullptr, int64_t(B.n), c) || B.overflow) return give_up();
        for (size_t j = 0; j < B.n; ++j)
          if (c.at(j)) out.push_back_block(c0 + int64_t(j));
      }
    slots_[size_t(e.slot)].i = dom.ranges().back().second - 1;  // as the scalar loop leaves it
    return true;
  }
  /// r[j] = f(x_j, y_j) for the lanes of the chunk (only those whose mask entry is set
  /// when m is given: f may raise a domain error on a lane the scalar walk skips), x_j
  /// being lane j of x or x's uniform value.
  template <class F>
  static int64_t map_lanes(const int64_t* m, int64_t* r, const Lanes& x, const Lanes& y, F f) {
    const size_t n = batch_scratch().n;
    auto each = [&](auto xj, auto yj) {
      if (m) {
        for (size_t j = 0; j < n; ++j)
          if (m[j]) r[j] = f(xj(j), yj(j));
      } else {
        for (size_t j = 0; j < n; ++j) r[j] = f(xj(j), yj(j));
      }
    };
    auto lane = [](const int64_t* a) { return [a](size_t j) { return a[j]; }; };
    auto same = [](int64_t u) { return [u](size_t) { return u; }; };
    if (x.a && y.a) each(lane(x.a), lane(y.a));
    else if (x.a) each(lane(x.a), same(y.u));
    else each(same(x.u), lane(y.a));  // not both uniform: bint() computes those once
    return 0;
  }
  /// `e` (an int or bool expression, batchable()) for the lanes of the chunk whose mask `m`
  /// entry is nonzero (every lane when m is null; `act` of them, at least one); the other
  /// lanes' values are undefined. False: give up (see batch_filter).
  bool bint(const Expr& e, const int64_t* m, int64_t act, Lanes& o) {
    BatchScratch& B = batch_scratch();
    const size_t n = B.n;
    auto on = [m](size_t j) { return !m || m[j]; };
    switch (e.kind) {
      case ExprKind::integer:
      case ExprKind::boolean: o = {nullptr, e.value}; return true;
      case ExprKind::name:
        switch (e.ref) {
          case NameKind::p: o = {nullptr, p_}; return true;
          case NameKind::r: o = {nullptr, r_}; return true;
          case NameKind::root: o = {nullptr, root_}; return true;
          case NameKind::commutative: o = {nullptr, commutative_}; return true;
          case NameKind::slot:
            o = e.slot == B.slot ? Lanes{B.ids, 0} : Lanes{nullptr, slots_[size_t(e.slot)].i};
            return true;
          case NameKind::fn_param:
            if (B.frame_base.empty()) return false;  // fns see only their own parameters
            o = B.frame[B.frame_base.back() + size_t(e.slot)];
            return true;
          case NameKind::unresolved: return false;
        }
        return false;
      case ExprKind::unary: {
        Lanes a;
        if (!bint(*e.kids[0], m, act, a)) return false;
        if (!a.a) {
          o = {nullptr, apply_unary(e.op, a.u)};
          return true;
        }
        int64_t* r = B.take();
        for (size_t j = 0; j < n; ++j) r[j] = apply_unary(e.op, a.a[j]);
        o = {r, 0};
        return true;
      }
      case ExprKind::binary: {
        Lanes a;
        if (!bint(*e.kids[0], m, act, a)) return false;
        if (e.op == Tok::ampamp || e.op == Tok::pipepipe) {
          const bool conj = e.op == Tok::ampamp;
          Lanes b;
          if (!a.a) {  // every lane takes the same branch
            if (conj != (a.u != 0)) {
              o = {nullptr, conj ? 0 : 1};
              return true;
            }
            if (!bint(*e.kids[1], m, act, b)) return false;
          } else {  // the right operand only where the left one does not decide
            int64_t* m2 = B.take();
            int64_t act2 = 0;
            for (size_t j = 0; j < n; ++j) act2 += m2[j] = on(j) && conj == (a.a[j] != 0);
            if (act2 && !bint(*e.kids[1], m2, act2, b)) return false;
          }
          int64_t* r = B.take();
          for (size_t j = 0; j < n; ++j) r[j] = a.at(j) ? (conj ? b.at(j) != 0 : 1) : (conj ? 0 : b.at(j) != 0);
          o = {r, 0};
          return true;
        }
        Lanes b;
        if (!bint(*e.kids[1], m, act, b)) return false;
        if (!a.a && !b.a) {
          o = {nullptr, apply_binary(e, a.u, b.u)};
        } else {
          int64_t* r = B.take();
          const bool raises = e.op == Tok::slash || e.op == Tok::percent || e.op == Tok::shl || e.op == Tok::shr;
          binary_op(e, [&](auto f) { return map_lanes(raises ? m : nullptr, r, a, b, f); });
          o = {r, 0};
        }
        return !domain_error_slot();
      }
      case ExprKind::ternary: {
        Lanes c;
        if (!bint(*e.kids[0], m, act, c)) return false;
        if (!c.a) return bint(*e.kids[c.u ? 1 : 2], m, act, o);
        const auto [m1, m2, act1, act2] = split(c.a, m);
        Lanes x, y;
        if (act1 && !bint(*e.kids[1], m1, act1, x)) return false;
        if (act2 && !bint(*e.kids[2], m2, act2, y)) return false;
        int64_t* r = B.take();
        for (size_t j = 0; j < n; ++j) r[j] = c.a[j] ? x.at(j) : y.at(j);
        o = {r, 0};
        return true;
      }
      case ExprKind::call: {
        if (e.builtin >= 0) {
          Lanes a, b;
          if (!e.kids.empty() && !bint(*e.kids[0], m, act, a)) return false;
          if (e.kids.size() > 1 && !bint(*e.kids[1], m, act, b)) return false;
          if (!a.a && !b.a) {
            o = {nullptr, apply_builtin(e, a.u, b.u)};
          } else {
            int64_t* r = B.take();
            builtin_op(e, [&](auto f) { return map_lanes(m, r, a, b, f); });
            o = {r, 0};
          }
          return !domain_error_slot();
        }
        const FnDecl& f = fn_of(e);
        const size_t base = B.frame.size();
        for (const ExprPtr& k : e.kids) {
          Lanes v;
          if (!bint(*k, m, act, v)) return false;
          B.frame.push_back(v);
        }
        // As call(): the depth limit, and a step per call on every lane that makes it.
        if (frame_base_.size() + B.frame_base.size() > 256 || B.overflow) return false;
        steps_ += act;
        if (steps_ > kMaxSteps) return false;
        B.frame.resize(base + size_t(std::max<int64_t>(f.frame_size, int64_t(e.kids.size()))));
        B.frame_base.push_back(base);
        if (!bexec(f.stmts, m, act, base) || !bint(*f.body, m, act, o)) return false;
        B.frame_base.pop_back();
        B.frame.resize(base);
        return true;
      }
      default: return false;
    }
  }
  const RankProgram& rp_;
  SiteTable& sites_;
  int64_t rank_;
  bool commutative_;
  DiagnosticSink& diags_;
  Collective collective_;  ///< of the top-level schedule (error labels)
  int64_t p_ = 1, r_ = 0, root_ = 0;
  std::vector<Value> slots_;
  std::vector<int64_t> frame_;        ///< fn frames (arguments, then locals), innermost last
  std::vector<size_t> frame_base_;    ///< [call depth] where that call's frame starts in frame_
  std::vector<int64_t> use_segments_;  ///< [inlined use] the `segment` size in force inside it (bytes)
  std::vector<int64_t> use_p_, use_r_, use_root_, use_blocks_;  ///< [inlined use] the p, r, root and blocks its body sees
  const Stmt* mirror_ = nullptr;  ///< the mirror statement being replayed
  RoundPipeline pipe_;
  std::string phase_name_;
  bool in_round_ = false;
  int64_t round_ops_ = 0;             ///< transfers posted in the open round
  const Stmt* round_site_ = nullptr;  ///< the statement that opened it
  int64_t segment_ = 0;  ///< the `segment` size in force (bytes, 0: none)
  int64_t steps_ = 0;
  std::vector<std::pair<const FnDecl*, bool>> fn_batchable_;  ///< batchable() of fn bodies met so far
};

int Recorder::round(RoundKind kind, std::vector<RoundOp>& ops) {
  for (RoundOp& o : ops) this->ops.push_back(run->op_of(std::move(o)));
  BINE_ASSERT(this->ops.size() < (uint64_t(1) << 32), "more than 2^32 - 1 ops on one rank");
  run->check_memory();
  start.push_back(uint32_t(this->ops.size()));
  kinds.push_back(kind);
  return 0;
}
void Recorder::replay(int64_t body_round) { run->replayed(body_round); }
int Recorder::fold_error(const FoldRoundError& e) {
  run->fold_round_error(e);
  return 1;
}

}  // namespace

InstStatus instantiate(const Program& program, const ScheduleDecl& decl, const InstanceRequest& req,
                       Schedule& out, DiagnosticSink& diags, std::string* unmet) {
  RankProgram rp;
  if (!lower(program, decl, rp, diags)) {
    out = Schedule{};
    return InstStatus::error;
  }
  return instantiate(rp, req, out, diags, unmet);
}

int64_t translation_spot_rank(int64_t p) {
  BINE_ASSERT(p >= 2, "translation_spot_rank() needs p >= 2");
  return 1 + int64_t((uint64_t(p) * 0x9E3779B97F4A7C15ull >> 17) % uint64_t(p - 1));
}

namespace {

/// Rank 0's recorded rounds `base` as rank x's under a translation symmetry: peers + x mod
/// p, block sets (and permutations) rotated by x mod p where `rotate` (B = p, no scratch).
/// `rot1` (x = 1 only): a memo of each interned set's rotation by one, indexed by its id,
/// so that building rank y + 1 from rank y rotates each distinct set of the instance once
/// (a ring's p singletons) instead of interning every rank's sets anew.
void shift_rounds(const Recorder& base, int64_t x, int64_t p, bool rotate, Recorder& out,
                  std::vector<BlockSet::Range>& scratch, std::vector<BlockSetRef>* rot1 = nullptr) {
  out.start = base.start;
  out.kinds = base.kinds;
  out.ops.clear();
  out.ops.reserve(base.ops.size());
  auto peer = [&](int64_t q) { return int32_t((q + x) % p); };
  auto rotated = [&](BlockSetRef b) {
    return BlockSetRef(BlockSet::wrap_mapped(b.get(), [&](int64_t j) { return j + x; }, p, scratch));
  };
  auto blocks = [&](BlockSetRef b) {
    if (!rotate || b.empty()) return b;
    if (!rot1) return rotated(b);
    if (b.id() >= rot1->size()) rot1->resize(std::max<size_t>(2 * rot1->size(), b.id() + 1));
    BlockSetRef& m = (*rot1)[b.id()];
    if (m.empty()) m = rotated(b);  // the empty set is never a rotation of a non-empty one
    return m;
  };
  for (const Op& op : base.ops) {
    if (const auto* s = std::get_if<SendOp>(&op)) {
      SendOp o = *s;
      o.peer = peer(s->peer);
      o.blocks = blocks(s->blocks);
      out.ops.push_back(o);
    } else if (const auto* r = std::get_if<RecvOp>(&op)) {
      RecvOp o = *r;
      o.peer = peer(r->peer);
      o.blocks = blocks(r->blocks);
      out.ops.push_back(o);
    } else if (const auto* l = std::get_if<LocalOp>(&op)) {
      LocalOp o = *l;
      o.src = blocks(l->src);
      o.blocks = blocks(l->blocks);
      out.ops.push_back(o);
    } else {
      const auto& pm = std::get<PermuteOp>(op);
      if (!rotate) {
        out.ops.push_back(pm);
        continue;
      }
      // Block j + x goes where block j went, plus x.
      std::vector<int64_t> to(pm.to->size());
      for (size_t j = 0; j < to.size(); ++j) to[size_t((int64_t(j) + x) % p)] = (pm.to[j] + x) % p;
      PermuteOp o;
      o.to = std::move(to);
      o.blocks = pm.blocks;
      o.origin = pm.origin;
      out.ops.push_back(std::move(o));
    }
  }
}

/// Whether two recorded rank rounds are the same ops (peers, block sets, kinds, reduce
/// flags, permutations, origins), round for round.
bool same_rounds(const Recorder& a, const Recorder& b) {
  if (a.start != b.start || a.kinds != b.kinds || a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const Op& x = a.ops[i];
    const Op& y = b.ops[i];
    if (x.index() != y.index()) return false;
    if (const auto* s = std::get_if<SendOp>(&x)) {
      const auto& t = std::get<SendOp>(y);
      if (s->peer != t.peer || s->blocks != t.blocks || &s->origin.get() != &t.origin.get()) return false;
    } else if (const auto* r = std::get_if<RecvOp>(&x)) {
      const auto& t = std::get<RecvOp>(y);
      if (r->peer != t.peer || r->blocks != t.blocks || r->reduce != t.reduce || &r->origin.get() != &t.origin.get())
        return false;
    } else if (const auto* l = std::get_if<LocalOp>(&x)) {
      const auto& t = std::get<LocalOp>(y);
      if (l->src != t.src || l->blocks != t.blocks || l->reduce != t.reduce || &l->origin.get() != &t.origin.get())
        return false;
    } else {
      const auto& pm = std::get<PermuteOp>(x);
      const auto& t = std::get<PermuteOp>(y);
      if (pm.to.get() != t.to.get() || pm.blocks != t.blocks || &pm.origin.get() != &t.origin.get()) return false;
    }
  }
  return true;
}

}  // namespace

InstStatus instantiate(const RankProgram& rp, const InstanceRequest& req, Schedule& out, DiagnosticSink& diags,
                       std::string* unmet) {
  (void)take_domain_error();
  bind_regions(req.p);  // the layout of --regions (region_spec()) for the region built-ins
  const ScheduleDecl& decl = *rp.decl;
  out = Schedule{};
  out.name = decl.name;
  out.decl_span = decl.name_span;
  out.collective = decl.collective;
  out.p = req.p;
  out.root = collective_is_rooted(decl.collective) ? req.root : 0;
  out.fold = rp.fold;
  out.fold_ring = rp.fold_ring;
  out.ranks.assign(size_t(req.p), {});
  if (req.p < 1 || out.root < 0 || out.root >= req.p) {
    diags.error(decl.name_span, "invalid instance: " + instance_label(req.p, req.root, decl.collective));
    return InstStatus::error;
  }
  const FoldLayout fl(rp.fold, rp.fold_ring, collective_has_rank_blocks(decl.collective), req.p, out.root);
  if (!fl.applies()) {
    // Like an unmet `requires`: the instance does not exist (check reports the p as excluded).
    if (unmet) *unmet = fold_ring_condition(fl.ring);
    return InstStatus::not_applicable;
  }
  out.fold_helper.assign(size_t(req.p), false);
  for (int64_t x = 0; x < req.p; ++x) out.fold_helper[size_t(x)] = fl.helper(x);
  const std::string inst = instance_label(req.p, out.root, decl.collective);
  const ActivityScope activity("building the instance of " + decl.name + " at " + inst);
  // The instance's memory (resource.h, docs/verifier.md "Memory"): the round store's index
  // once the round count is known, then every rank's operations as it is placed; a rank's
  // round checks itself while it grows (RankRun::check_memory()).
  MemoryAccount account(decl.name + " at " + inst);
  auto account_index = [&](size_t T) {
    account.add(uint64_t(T) * uint64_t(req.p + 1) * sizeof(uint32_t) + uint64_t(T) * (sizeof(std::vector<std::vector<Op>>) + 64),
                "its round store's index (" + std::to_string(T) + " rounds x " + std::to_string(req.p) + " ranks)");
  };

  // Run every rank through the round pipeline: the body where the rank runs it, else
  // (two-one helpers) only the fold's rounds, once the instance's block count is known.
  SiteTable sites;
  // A rank's run lives while it may still be read (the reference rank, the first rank, the
  // two-one helpers, which run last); the others keep only their recorded rounds (a
  // RankRun is about 1 KB: at p = 2^20 they would outweigh the ops).
  std::vector<std::unique_ptr<RankRun>> runs(size_t(req.p));
  std::vector<Recorder> recorded(size_t(req.p));
  bool helpers = false;
  for (int64_t x = 0; x < req.p && !helpers; ++x) helpers = !fl.runs_body(x);
  auto store = std::make_shared<RoundStore>();
  auto too_many = [&] {
    diags.error(decl.name_span, inst + ": a round of the instance has more than about 2^31 operations (" +
                                    std::to_string(RoundStore::kMaxChunks - 1) + " chunks; docs/verifier.md, \"Scale\")");
    return InstStatus::error;
  };
  std::unique_ptr<RoundArenas> arenas = helpers ? nullptr : std::make_unique<RoundArenas>(req.p, *store);
  // The store's chunks add their capacity as they are reserved (RoundStore::account); the
  // recordings kept whole (fold helpers: every rank's until the end) add theirs here.
  auto account_ops = [&](const Recorder& rec) {
    if (!arenas) account.add(uint64_t(rec.ops.capacity()) * sizeof(Op), "its operations (" + std::to_string(sizeof(Op)) + " bytes each)");
  };
  store->account = &account;
  const RankRun* ref = nullptr;
  int64_t ref_rank = 0;  ///< the first rank that runs the body, whose run the others are compared with
  int64_t first_rank = -1;
  bool applies = true;   ///< the `requires` clauses hold (on the first rank that runs the body)
  std::unique_ptr<RankRun> spare;  ///< a compared rank's run, recycled for the next rank
  // The translation symmetry holds for the program (no fold: every rank runs the body).
  const bool shift = req.translation && req.translation->proved && arenas && rp.fold == FoldKind::none;
  // Whether rank x's run agrees with the reference rank's on what must not depend on the
  // rank (block and scratch counts, the round structure, segment sizes); else reports the
  // first disagreement into `d`.
  auto agree = [&](const RankRun& me, int64_t x, DiagnosticSink& d) -> bool {
    if (me.blocks != ref->blocks) {
      d.error(rp.blocks ? rp.blocks->span : decl.name_span,
              inst + ": ranks disagree on the block count (" + describe(fl, ref_rank) + ": " + std::to_string(ref->blocks) +
                  ", " + describe(fl, x) + ": " + std::to_string(me.blocks) + "); the block count must not depend on the rank");
      return false;
    }
    if (me.scratch != ref->scratch) {
      d.error(rp.scratch ? rp.scratch->span : decl.name_span,
              inst + ": ranks disagree on the scratch buffer count (" + describe(fl, ref_rank) + ": " +
                  std::to_string(ref->scratch) + ", " + describe(fl, x) + ": " + std::to_string(me.scratch) +
                  "); it must not depend on the rank");
      return false;
    }
    const size_t n = std::min(me.sites.size(), ref->sites.size());
    size_t i = 0;
    while (i < n && me.sites[i] == ref->sites[i]) ++i;
    if (i < n || me.sites.size() != ref->sites.size()) {
      const Stmt* a = i < ref->sites.size() ? ref->sites[i] : nullptr;
      const Stmt* b = i < me.sites.size() ? me.sites[i] : nullptr;
      Diagnostic& dg = d.error(b ? b->span : (a ? a->span : decl.name_span),
                               inst + ": ranks disagree on the round structure at round " + std::to_string(i) + " (" +
                                   describe(fl, x) + (b ? " opens it here" : " has no such round") +
                                   "); conditions and bounds of round loops must not depend on the rank");
      if (a) add_note(dg, a->span, "the first active rank, " + describe(fl, ref_rank) + ", opens it here");
      return false;
    }
    // Checked after the round structure: ranks that agree on their rounds have one
    // segment size per round each, so the two lists have the same length.
    if (me.segments != ref->segments) {
      size_t k = 0;
      while (me.segments[k] == ref->segments[k]) ++k;
      const Expr* seg = rp.segment.get();
      d.error(seg ? seg->span : decl.name_span,
              inst + ": ranks disagree on the segment size in round " + std::to_string(k) + " (" + describe(fl, ref_rank) +
                  ": " + std::to_string(ref->segments[k]) + " bytes, " + describe(fl, x) + ": " +
                  std::to_string(me.segments[k]) + "); the segment size must not depend on the rank");
      return false;
    }
    return true;
  };
  // Rank `no`'s `requires` is false, rank `yes`'s holds.
  auto requires_differ = [&](const RankRun& no_run, int64_t no, int64_t yes, DiagnosticSink& d) {
    const Expr* clause = no_run.unmet_clause;
    d.error(clause ? clause->span : decl.name_span,
            inst + ": 'requires' clause is false on " + describe(fl, no) + " but holds on " + describe(fl, yes) +
                "; the conditions of 'requires' must not depend on the rank");
  };
  // Ranks first .. p - 1 in contiguous ranges side by side (set_instance_threads()),
  // once the reference rank has run and every rank runs the body: each range into its own
  // part of the store, merged in rank order. The lowest range that fails reports (its
  // diagnostics are the ones one thread reports: it stops at its first failing rank, and
  // the ranges before it succeeded); the ranges after it stop early and are discarded.
  auto run_parts = [&](int64_t first) -> InstStatus {
    const int64_t n = req.p - first;
    const int k_parts = int(std::min<int64_t>(instance_threads(), n));
    struct Part {
      int64_t lo = 0, hi = 0;
      RoundStore store;
      std::unique_ptr<RoundArenas> arenas;
      DiagnosticSink diags;
      bool failed = false, too_many = false;
      std::exception_ptr exc;
    };
    std::vector<Part> parts(static_cast<size_t>(k_parts));
    for (int k = 0; k < k_parts; ++k) {
      Part& part = parts[size_t(k)];
      part.lo = first + n * k / k_parts;
      part.hi = first + n * (k + 1) / k_parts;
      part.store.account = &account;
      part.arenas = std::make_unique<RoundArenas>(part.hi - part.lo, part.store);
    }
    // Each range's own index of its rounds, until it is absorbed (ref->rec: the rounds).
    account.add(uint64_t(ref->rec.kinds.size()) * uint64_t(n + k_parts) * sizeof(uint32_t),
                "the round indexes of its " + std::to_string(k_parts) + " rank ranges built side by side");
    std::atomic<int> lowest_failed{k_parts};
    auto work = [&](int k) {
      Part& part = parts[size_t(k)];
      auto stop = [&] {
        part.failed = true;
        int cur = lowest_failed.load();
        while (k < cur && !lowest_failed.compare_exchange_weak(cur, k)) {
        }
      };
      (void)take_domain_error();
      bind_regions(req.p);
      SiteTable part_sites;
      std::unique_ptr<RankRun> run;
      try {
        for (int64_t x = part.lo; x < part.hi; ++x) {
          if (lowest_failed.load(std::memory_order_relaxed) < k) return;  // an earlier range reports
          if (run) {
            run->recycle(fl, x);
          } else {
            run = std::make_unique<RankRun>(rp, fl, part_sites, x, req.commutative, part.diags);
            run->account = &account;
          }
          run->keep_labels = false;
          if (!run->run()) {
            requires_differ(*run, x, first_rank, part.diags);
            return stop();
          }
          if (!agree(*run, x, part.diags)) return stop();
          account_ops(run->rec);
          if (!part.arenas->append(x - part.lo, run->rec)) {
            part.too_many = true;
            return stop();
          }
        }
      } catch (const Failure&) {
        stop();
      } catch (...) {
        part.exc = std::current_exception();
        stop();
      }
    };
    std::vector<std::thread> pool;
    std::vector<int> here{0};  // the ranges this thread runs (those no thread could be started for)
    for (int k = 1; k < k_parts; ++k) {
      try {
        pool.emplace_back(work, k);
      } catch (const std::system_error&) {
        here.push_back(k);
      }
    }
    for (int k : here) work(k);
    for (std::thread& th : pool) th.join();
    for (Part& part : parts) {
      if (part.exc) std::rethrow_exception(part.exc);
      diags.append(part.diags);  // in rank order, as one thread reports them
      if (part.failed) return part.too_many ? too_many() : InstStatus::error;
      if (!arenas->absorb(*part.arenas)) return too_many();
    }
    return InstStatus::ok;
  };
  try {
    for (int64_t x = 0; x < req.p; ++x) {
      if (spare) {
        spare->recycle(fl, x);
        runs[size_t(x)] = std::move(spare);
      } else {
        runs[size_t(x)] = std::make_unique<RankRun>(rp, fl, sites, x, req.commutative, diags);
        runs[size_t(x)]->account = &account;
      }
      RankRun& cur = *runs[size_t(x)];
      cur.keep_labels = ref == nullptr;
      if (!fl.runs_body(x)) continue;
      const bool met = cur.run();
      if (!arenas) cur.rec.ops.shrink_to_fit();  // kept until the end: no doubling slack (a third of the ops' memory)
      if (first_rank < 0) {
        first_rank = x;
        applies = met;
      } else if (met != applies) {
        // Every rank must agree on whether the schedule applies.
        const int64_t no = met ? first_rank : x, yes = met ? x : first_rank;
        requires_differ(*runs[size_t(no)], no, yes, diags);
        return InstStatus::error;
      }
      if (!met) continue;
      if (!ref) {
        ref = &cur;
        ref_rank = x;
        if (arenas) account_index(cur.rec.kinds.size());
        account_ops(cur.rec);
        // A proved translation symmetry: the other ranks are rank 0's rounds shifted, once
        // the spot rank, run on its own, is its shifted rounds too (else every rank runs).
        if (shift && x == 0 && req.p >= 2) {
          Recorder base;
          base.ops = cur.rec.ops;
          base.start = cur.rec.start;
          base.kinds = cur.rec.kinds;
          std::vector<BlockSet::Range> scratch;
          bool holds = false;
          {
            const int64_t xs = translation_spot_rank(req.p);
            SiteTable spot_sites;
            DiagnosticSink spot_diags;
            RankRun spot(rp, fl, spot_sites, xs, req.commutative, spot_diags);
            spot.account = &account;
            spot.keep_labels = false;
            try {
              Recorder shifted;
              holds = spot.run() && spot.blocks == cur.blocks && spot.scratch == cur.scratch &&
                      spot.segments == cur.segments;
              if (holds) {
                shift_rounds(base, xs, req.p, req.translation->rotate_blocks, shifted, scratch);
                holds = same_rounds(shifted, spot.rec);
              }
            } catch (const Failure&) {
              holds = false;
            }
            (void)take_domain_error();
          }
          if (holds) {
            if (!arenas->append(0, cur.rec)) return too_many();
            // Rank y + 1 is rank y shifted by one.
            Recorder rx;
            std::vector<BlockSetRef> rot1;
            for (int64_t y = 1; y < req.p; ++y) {
              shift_rounds(base, 1, req.p, req.translation->rotate_blocks, rx, scratch, &rot1);
              if (y + 1 < req.p) base.ops = rx.ops;
              account_ops(rx);
              if (!arenas->append(y, rx)) return too_many();
            }
            out.shifted = Schedule::Shifted::yes;
            break;
          }
          out.shifted = Schedule::Shifted::refuted;
        }
        if (arenas && !arenas->append(x, cur.rec)) return too_many();  // every rank, in order: all run the body
        if (arenas && x + 1 < req.p && req.p >= instance_parallel_min_p() && instance_threads() > 1) {
          const InstStatus st = run_parts(x + 1);
          if (st != InstStatus::ok) return st;
          break;
        }
        continue;
      }
      if (!agree(cur, x, diags)) return InstStatus::error;
      account_ops(cur.rec);
      if (arenas && !arenas->append(x, cur.rec)) return too_many();
      if (x != first_rank) {  // compared: keep its rounds only
        if (!arenas) recorded[size_t(x)] = std::move(cur.rec);
        spare = std::move(runs[size_t(x)]);
      }
    }
    if (!applies) {
      if (unmet) *unmet = runs[size_t(first_rank)]->unmet;
      return InstStatus::not_applicable;
    }
    for (int64_t x = 0; x < req.p; ++x)
      if (!fl.runs_body(x)) {
        runs[size_t(x)]->run_helper(ref ? ref->blocks : 1);
        runs[size_t(x)]->rec.ops.shrink_to_fit();
        account_ops(runs[size_t(x)]->rec);
      }
  } catch (const Failure&) {
    return InstStatus::error;
  }
  out.blocks = fl.blocked ? req.p : ref ? ref->blocks : 1;
  out.scratch = ref ? ref->scratch : 0;
  const size_t R = ref ? ref->labels.size() : 0;  // body rounds
  const int64_t top_seg = ref ? ref->top_segment : 0;
  auto label = [&](size_t k) { return ref->labels[k]; };
  if (fl.fold == FoldKind::three_two && fl.extra > 0 && ref) {
    // fold 3-2 (RT Sec. 3.1, 3.3): the body's first round became rounds A and B, its last
    // (the final mirror's replay of the first) E1 and E2, else one epilogue round E follows.
    if (R == 0) {
      diags.error(rp.fold_span, inst + ": 'fold 3-2' needs a body with at least one round (its first round is fused with "
                                         "the 3-2 step)");
      return InstStatus::error;
    }
    const bool fused = R >= 2 && ref->fused();
    out.round_labels.assign(R + 2, "");
    out.round_segments.assign(R + 2, top_seg);
    out.round_labels[0] = fl.tt.t ? "fold 3-2, round A (3-2 step: ranks 1 and 2 reduce what each keeps; the others: " + label(0) + ")"
                                  : "fold 3-2, round A (" + label(0) + ", the 2-1 helpers too)";
    out.round_labels[1] = "fold 3-2, round B (" + label(0) + ", the eliminated ranks' partials in)";
    out.round_segments[0] = out.round_segments[1] = ref->segments[0];
    auto at = [&](size_t k) { return fused && k == R - 1 ? R + 1 : k + 1; };  // body round k >= 1
    for (size_t k = 1; k < R; ++k) {
      out.round_labels[at(k)] = label(k);
      out.round_segments[at(k)] = ref->segments[k];
    }
    if (fused) {
      out.round_labels[R] = "fold 3-2 epilogue E1 (mirror of round B)";
      out.round_labels[R + 1] += " + fold 3-2 epilogue E2 (mirror of round A)";
    } else {
      out.round_labels[R + 1] = "fold 3-2 epilogue (the result to the eliminated ranks)";
    }
  } else if (fl.ring && ref) {
    // fold ring R (RT Sec. 3.4): R - 1 rounds before the body and R - 1 after it.
    const int64_t Rr = fl.ring;
    out.blocks = Rr * ref->blocks;
    out.scratch = std::max(ref->scratch, Rr - 1);  // the body's buffers reuse the ring's
    for (int64_t t = 1; t < Rr; ++t) {
      out.round_labels.push_back("fold ring " + std::to_string(Rr) + ", prologue round " + std::to_string(t) +
                                 " (parts to the member " + std::to_string(t) + " ahead" +
                                 (t == Rr - 1 ? ", then the reduction in ring order)" : ")"));
      out.round_segments.push_back(top_seg);
    }
    out.round_labels.insert(out.round_labels.end(), ref->labels.begin(), ref->labels.end());
    out.round_segments.insert(out.round_segments.end(), ref->segments.begin(), ref->segments.end());
    for (int64_t t = 1; t < Rr; ++t) {
      out.round_labels.push_back("fold ring " + std::to_string(Rr) + ", epilogue round " + std::to_string(t) +
                                 " (its part to the member " + std::to_string(t) + " ahead)");
      out.round_segments.push_back(top_seg);
    }
  } else {
    // No fold, or the two-one elimination: its prologue and epilogue rounds around the body.
    const FoldSteps steps = fold_steps(decl.collective);
    const bool two_one = fl.fold == FoldKind::two_one && fl.extra > 0;
    const bool prologue = two_one && steps.prologue != FoldData::none;
    const bool epilogue = two_one && steps.epilogue != FoldData::none;
    if (prologue) out.round_labels.push_back("fold prologue (two-one elimination)");
    if (ref) out.round_labels.insert(out.round_labels.end(), ref->labels.begin(), ref->labels.end());
    if (epilogue) out.round_labels.push_back("fold epilogue");
    if (prologue) out.round_segments.push_back(top_seg);
    if (ref) out.round_segments.insert(out.round_segments.end(), ref->segments.begin(), ref->segments.end());
    if (epilogue) out.round_segments.push_back(top_seg);
  }
  if (const Stmt* fr = find_frames(rp.body)) {
    // The frames' model, for the verifier: one transfer per rank and step, along links
    // (in ranks: node v is rank (v - frames root + root) mod P).
    const FramesData& f = *fr->frames;
    out.one_port = true;
    for (auto [u, v] : f.links) {
      const int64_t a = mod(bine::add(bine::sub(u, f.root), out.root), f.nodes);
      const int64_t b = mod(bine::add(bine::sub(v, f.root), out.root), f.nodes);
      out.links.emplace_back(std::min(a, b), std::max(a, b));
    }
    std::sort(out.links.begin(), out.links.end());
  }
  // The ranks' rounds, placed: the k-th round a rank ran is instance round k, except a
  // two-one epilogue, which is the last (the helpers run no body rounds before it).
  out.num_rounds = int64_t(out.round_labels.size());
  const size_t T = size_t(out.num_rounds);
  if (arenas) {
    arenas->finish(T);
  } else {
    // Fold helpers: their rounds are placed (a two-one epilogue last) and every rank's
    // recording is moved into the round-major store.
    account_index(T);
    store->start(req.p, T);
    std::vector<uint32_t> start(T + 1);
    for (int64_t x = 0; x < req.p; ++x) {
      Recorder& rec = runs[size_t(x)] ? runs[size_t(x)]->rec : recorded[size_t(x)];
      const size_t K = rec.kinds.size();
      // round k of the rank is instance round k, except a two-one epilogue (the last); the
      // rounds in between are empty.
      size_t k = 0;
      for (size_t t = 0; t < T; ++t) {
        start[t] = rec.start[k];
        const bool here = k < K && (rec.kinds[k] == RoundKind::fold_epilogue ? t == T - 1 : t == k);
        if (here) ++k;
      }
      start[T] = rec.start[k];
      BINE_ASSERT(k == K, inst + ": " + describe(fl, x) + " ran " + std::to_string(K) + " rounds, the instance has " +
                              std::to_string(T) + " (the round pipeline keeps them uniform)");
      for (size_t t = 0; t < T; ++t)
        if (!store->place(t, size_t(x), rec.ops.data() + start[t], rec.ops.data() + start[t + 1])) return too_many();
      std::vector<Op>().swap(rec.ops);
    }
  }
  for (int64_t x = 0; x < req.p; ++x) out.ranks[size_t(x)] = RankRounds(store, x);
  // The labels, the per-rank views (RankRounds) and what the index holds.
  account.add(uint64_t(req.p) * sizeof(RankRounds) + uint64_t(T) * (sizeof(std::string) + 48 + sizeof(int64_t)),
              "its rank views and round labels");
  out.accounted_bytes = account.total();
  return InstStatus::ok;
}

}  // namespace bine
