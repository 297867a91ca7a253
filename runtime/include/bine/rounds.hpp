// bine/rounds.hpp: the round pipeline. Everything a schedule means beyond its body's
// arithmetic lives here once: the folds (two-one elimination, `fold 3-2`, `fold ring R`),
// the mapping of the body's ranks and blocks to real ones, the log of the body's rounds
// and the mirror's replay of it (with the fused final mirror of `fold 3-2`), and the order
// of each round's operations. Header-only C++17, no MPI (docs/architecture.md, "One round
// pipeline").
//
// Two drivers run it, rank by rank, with the same calls:
// - the compiler's interpreter (compiler/ir/instantiate.cpp), whose sink records every
//   round into the Schedule that the verifier proves, the cost model prices and `draw`
//   draws;
// - the code `bine-cc compile` generates (bine/mpi_runtime.hpp), whose sink resolves each
//   round to element ranges and posts it on a transport (MPI point-to-point).
// So what the verifier proves is, by construction, the sequence of rounds the runtime
// posts; PMPI translation validation (tests/mpi) stays as the independent check of the
// transport underneath.
//
// Calls, per rank, in this order:
//   setup(layout, rank)                the fold's virtual p / r / root; no rounds yet
//   set_blocks(B)                      the body's block count (after `requires`)
//   prologue(sink)                     the fold's rounds before the body
//   if (runs_body()) { body }          see below
//   epilogue(sink)                     the fold's rounds after the body
// where the body is any sequence of
//   begin_round(); send/recv/local/permute ...; end_round(sink)     one round of the body
//   begin_phase(id) ... end_phase(id)  a named group of rounds (phases nest)
//   mirror(sink, id, at_end, site)     phase id replayed reversed, sends <-> receives
//                                      (returns kNoLog, replaying nothing, after keep_log(false))
//
// The sink receives the instance's rounds in order:
//   int round(RoundKind kind, std::vector<RoundOp>& ops)  one round (ops may be empty);
//                                      the sink may consume `ops`
//   void replay(int64_t body_round)    a mirror starts replaying that body round
//   int fold_error(const FoldRoundError& e)  the body's first round cannot host `fold 3-2`
// and returns 0 to go on; any other value stops the pipeline and is passed back.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bine/blockset.hpp"
#include "bine/builtins.hpp"
#include "bine/collective.hpp"
#include "bine/frames.hpp"

namespace bine {

/// How an operation derives from the body: directly from a statement, from a mirror's
/// replay, or from a fold (its own rounds, or a body operation it redirects).
enum class Via : uint8_t {
  direct,
  mirror,     ///< replayed by the mirror statement `via_site`
  fold,       ///< an operation of the fold itself (prologue, epilogue, elimination steps)
  fold_pair,  ///< `fold 3-2`: a body operation a shadow does for its survivor (2-1 pair)
  fold_step,  ///< `fold 3-2`: a body operation redirected through the 3-2 step
};

/// One operation of a round, in real terms: real peer rank, block indices of the rank's
/// working buffers (block b of buffer j is j * stride() + b; buffer 0 is the vector).
struct RoundOp {
  enum class Kind : uint8_t { send, recv, local, permute };
  Kind kind = Kind::send;
  bool reduce = false;        ///< recv: combine into the buffer; local: `reduce`, else `copy`
  Via via = Via::direct;
  int64_t peer = -1;          ///< send / recv: the real rank; -1 otherwise
  BlockSet blocks;            ///< send / recv: the blocks moved; local: the destination
  BlockSet src;               ///< local: the source, k-th block onto k-th block of `blocks`
  std::vector<int64_t> to;    ///< permute: block j moves to block to[j] (a bijection)
  int32_t site = -1;          ///< the driver's id of the statement (the compiler's; -1: none)
  int32_t via_site = -1;      ///< Via::mirror: the driver's id of the mirror statement

  bool transfer() const { return kind == Kind::send || kind == Kind::recv; }
  static RoundOp send_op(int64_t peer, BlockSet b, Via v = Via::direct, int32_t site = -1) {
    RoundOp o;
    o.kind = Kind::send;
    o.peer = peer;
    o.blocks = std::move(b);
    o.via = v;
    o.site = site;
    return o;
  }
  static RoundOp recv_op(int64_t peer, BlockSet b, bool reduce, Via v = Via::direct, int32_t site = -1) {
    RoundOp o = send_op(peer, std::move(b), v, site);
    o.kind = Kind::recv;
    o.reduce = reduce;
    return o;
  }
};

/// What a round of the instance is, for the driver's bookkeeping (labels, placement).
enum class RoundKind : uint8_t {
  body,           ///< a body round (from a statement or a mirror's replay)
  fold_prologue,  ///< two-one elimination: odd v hands v - 1 its data
  fold_epilogue,  ///< two-one elimination: v - 1 hands v its result
  tt_a,           ///< fold 3-2 round A (in place of the body's first round)
  tt_b,           ///< fold 3-2 round B
  tt_e1,          ///< fold 3-2 epilogue E1 (fused with the final mirror's last round)
  tt_e2,          ///< fold 3-2 epilogue E2 (that last round itself)
  tt_epilogue,    ///< fold 3-2 epilogue, not fused: the result to the helpers
  ring_prologue,  ///< fold ring R: one of the R - 1 rounds before the body
  ring_epilogue,  ///< fold ring R: one of the R - 1 rounds after it
};

/// Why the body's first round cannot host the `fold 3-2` elimination steps (RT Sec. 3.1:
/// it must be a reducing exchange between virtual ranks 2w and 2w + 1).
struct FoldRoundError {
  enum class Why { not_transfer, wrong_peer, copies };
  const RoundOp* op;
  Why why;
  int64_t w;        ///< the virtual rank
  int64_t partner;  ///< the real rank it had to exchange with
};

/// The fold's rank layout for one instance (p, root, collective): which real rank is which
/// virtual rank, which ranks sit the body out, where body ranks and blocks land
/// (formulas.md, "Non-power-of-two process counts"; Rabenseifner-Traeff Sec. 3.1, 3.3, 3.4).
/// Without a fold, the body sees the real p, r and root.
struct FoldLayout {
  FoldKind fold = FoldKind::none;
  bool blocked = false;     ///< rank-indexed blocks (gather, scatter, allgather, reduce_scatter, alltoall)
  int64_t p = 1, root = 0;  ///< real
  int64_t pv = 1, extra = 0;  ///< body process count; p - pv (two-one, 3-2)
  int64_t ring = 0;           ///< `fold ring R`: R
  ThreeTwo tt{1};

  FoldLayout() = default;
  /// `fold` of the schedule; `ring`: R of `fold ring R` (else ignored); `blocked`:
  /// collective_has_rank_blocks.
  FoldLayout(FoldKind f, int64_t ring_r, bool blocked_, int64_t p_, int64_t root_)
      : fold(f), blocked(blocked_), p(p_), root(root_), pv(p_), tt(p_) {
    if (f == FoldKind::none) return;
    pv = int64_t(1) << log2(p);
    extra = p - pv;
    if (f == FoldKind::ring) {
      ring = ring_r;
      pv = p % ring == 0 ? p / ring : 1;
      extra = 0;
    }
  }
  bool on() const { return fold != FoldKind::none; }
  /// False when the fold cannot apply to p (`fold ring R` with R not dividing p; the
  /// instance does not exist, like an unmet `requires`: fold_ring_condition()).
  bool applies() const { return fold != FoldKind::ring || p % ring == 0; }
  /// The rank relative to the root (the fold's coordinates).
  int64_t v_of(int64_t x) const { return mod(x - root, p); }
  int64_t real_of_v(int64_t v) const { return mod(v + root, p); }
  /// True for the ranks the fold sets aside: two-one, the odd v below 2 * extra (they run no
  /// body); fold 3-2, the helpers (they run the body for the rank they help, but only its
  /// first and last rounds travel).
  bool helper(int64_t x) const {
    if (fold == FoldKind::none || fold == FoldKind::ring) return false;
    const int64_t v = v_of(x);
    if (fold == FoldKind::three_two) return ThreeTwo::helps(tt.role(v));
    return v < 2 * extra && odd(v);
  }
  /// True when rank x runs the schedule body (every rank but the two-one helpers).
  bool runs_body(int64_t x) const { return fold == FoldKind::three_two || !helper(x); }
  /// The rank the body sees as r on real rank x.
  int64_t body_rank(int64_t x) const {
    if (!on()) return x;
    const int64_t v = v_of(x);
    if (fold == FoldKind::three_two) return tt.virt(v);
    if (fold == FoldKind::ring) return v / ring;
    return v < 2 * extra ? v / 2 : v - extra;
  }
  /// First v-space rank (block) of virtual rank w (two-one); w == pv gives p.
  int64_t v_first(int64_t w) const { return w < extra ? 2 * w : w + extra; }
  /// The real rank of body rank w (taken modulo the body's p) seen from ring member
  /// `ring_c` (fold ring; else ignored).
  int64_t real_peer(int64_t w, int64_t ring_c = 0) const {
    if (!on()) return mod(w, p);
    w = mod(w, pv);
    if (fold == FoldKind::three_two) return real_of_v(tt.survivor(w));
    if (fold == FoldKind::ring) return real_of_v(ring * w + ring_c);
    return real_of_v(v_first(w));
  }
};

/// The round pipeline of one rank (see the top of this file).
class RoundPipeline {
 public:
  /// mirror()'s return value when the body rounds were not logged (keep_log(false)): a
  /// driver error, distinct from any sink's code.
  static constexpr int kNoLog = -0x4c4f47;
  /// Starts a call on real rank `rank` of `layout`'s instance. No rounds.
  void setup(const FoldLayout& layout, int64_t rank) {
    lay_ = layout;
    rank_ = rank;
    const int64_t v = lay_.v_of(rank);
    vrank_ = lay_.body_rank(rank);
    ring_c_ = lay_.ring ? mod(v, lay_.ring) : 0;
    role_ = lay_.fold == FoldKind::three_two ? lay_.tt.role(v) : ThreeTwo::Role::plain;
    tt_on_ = lay_.fold == FoldKind::three_two && lay_.extra > 0;
    body_blocks_ = blocks_ = 1;
    log_.clear();
    logged_ = 0;
    keep_log_ = true;
    phases_.clear();
    ops_.clear();
    first_sent_ = first_kept_ = BlockSet();
    fused_ = false;
    group_.on = false;
    group_depth_ = 0;
  }
  const FoldLayout& layout() const { return lay_; }
  /// Process count, rank and root the body sees (virtual under a fold).
  int64_t p() const { return lay_.pv; }
  int64_t r() const { return vrank_; }
  int64_t root() const { return lay_.on() ? 0 : lay_.root; }
  bool runs_body() const { return lay_.runs_body(rank_); }
  /// Sets the body's block count B (rank-indexed collectives: the body's p).
  void set_blocks(int64_t B) {
    body_blocks_ = B;
    blocks_ = lay_.blocked ? lay_.p : lay_.ring ? lay_.ring * B : B;
  }
  /// Blocks per working buffer in real terms: p for rank-indexed blocks, R * B under
  /// `fold ring R` (the body owns one of R parts), else B.
  int64_t stride() const { return blocks_; }

  /// Body block set -> real block set: under `fold ring` the rank's part of each buffer;
  /// with rank-indexed blocks under a two-one fold, virtual block w stands for the blocks of
  /// the one or two real ranks it represents, rotated by the root.
  BlockSet real_blocks(const BlockSet& body) const {
    if (lay_.ring) return body.shifted(ring_c_ * body_blocks_);
    if (!lay_.on() || !lay_.blocked) return body;
    return BlockSet::wrap_mapped(body, [&](int64_t v) { return lay_.v_first(v) + lay_.root; }, lay_.p, ranges_scratch_);
  }
  int64_t real_peer(int64_t w) const { return lay_.real_peer(w, ring_c_); }

  // ---- sub-groups: `phase NAME = SCHEDULE on region|across` ----
  /// A rank's sub-group (group_of()).
  struct GroupInfo {
    std::vector<int64_t> members;  ///< [group index] body rank
    int64_t index = 0;             ///< the rank's index among them
    int64_t root = 0;              ///< the group's root (its index): the member nearest the caller's root
    bool active = true;            ///< false: the group idles (its rounds carry no operation)
  };
  /// The sub-group `kind` of body rank `rank` under the bound region layout (bine/builtins.hpp):
  /// its members in group order (region: the ranks of the rank's region in rank order;
  /// across: the rank with the same local index in every region, in region order) and the
  /// rank's index among them. For a schedule with a root (`rooted`), the group's root is the
  /// member in the caller's root's region (across: region(root)) or with the root's local
  /// index (region: local_rank(root)), and only the across group of the root itself is
  /// active: the others hold no data of the root's (docs/language.md, "Composition on
  /// sub-groups"). False, with `err` set, when no layout is bound or the regions are not
  /// all of one size (the groups would differ in size, so the composed schedule's rounds
  /// would not line up across groups).
  static bool group_of(GroupKind kind, int64_t rank, int64_t root, bool rooted, GroupInfo& g, std::string& err) {
    g = GroupInfo{};
    if (!bound_regions()) {
      const char* e = take_domain_error();
      return err = e ? e : "no region layout is bound", false;
    }
    const int64_t n = regions();
    if (!equal_regions()) {
      err = std::string("the ") + std::to_string(n) + " regions are not of one size (region 0 has " +
            std::to_string(region_size(0)) + " ranks";
      for (int64_t h = 1; h < n; ++h)
        if (region_size(h) != region_size(0)) {
          err += ", region " + std::to_string(h) + " has " + std::to_string(region_size(h));
          break;
        }
      return err += ")", false;
    }
    const int64_t reg = region(rank), l = local_rank(rank);
    if (kind == GroupKind::region) {
      for (int64_t i = 0; i < region_size(reg); ++i) g.members.push_back(region_rank(reg, i));
      g.index = l;
      g.root = local_rank(root);
    } else {
      for (int64_t h = 0; h < n; ++h) g.members.push_back(region_rank(h, l));
      g.index = reg;
      g.root = region(root);
      g.active = !rooted || local_rank(root) == l;
    }
    return true;
  }
  /// Starts a composed phase on sub-group `kind` of this rank (`rooted`: the composed
  /// schedule has a root, the body's root(); group_of()): its body's ranks are the group's
  /// indices and its `inner_blocks` blocks (per buffer) map, in order, onto the caller's
  /// blocks `window` (one contiguous range of the vector's blocks whose length is a
  /// multiple k of inner_blocks: inner block j is the caller's blocks
  /// [lo + j k, lo + (j + 1) k), and block j of scratch buffer i is the same blocks of that
  /// buffer). An idle group's statements add no operation (its rounds stay, empty). False,
  /// with `err` set, for a bad window, nested groups or unequal regions.
  ///
  /// `GroupKind::whole` (a composed schedule declaring `inner_blocks` blocks on the caller's
  /// own ranks; `window` is every block of the caller's scope): each of its blocks is
  /// scope_blocks() / inner_blocks consecutive blocks of the scope, composed with the map in
  /// force (a rescaled schedule inside another, or inside a phase on a sub-group); nothing
  /// changes when `inner_blocks` is the scope's count. A phase on a sub-group cannot open
  /// inside another one or inside a rescaled schedule. end_group() restores the map before.
  bool begin_group(GroupKind kind, const BlockSet& window, int64_t inner_blocks, bool rooted, std::string& err) {
    if (group_depth_ >= kMaxGroupDepth) return err = "composed schedules nest too deep", false;
    const Saved before{group_.on, group_.identity, group_.idle, group_.lo, group_.k, group_.inner};
    if (kind == GroupKind::whole) {
      const int64_t scope = scope_blocks();
      if (inner_blocks < 1 || scope % inner_blocks != 0)
        return err = "the caller's " + std::to_string(scope) + " blocks are not a multiple of the composed schedule's " +
                     std::to_string(inner_blocks) + " blocks", false;
      if (inner_blocks != scope) {
        if (group_.on) {  // the scope's blocks are k group blocks each already
          group_.k *= scope / inner_blocks;
        } else {
          group_.on = group_.identity = true;
          group_.idle = false;
          group_.index = vrank_;
          group_.lo = 0;
          group_.k = scope / inner_blocks;
        }
        group_.inner = inner_blocks;
      }
      saved_[size_t(group_depth_++)] = before;
      return true;
    }
    if (group_.on)
      return err = group_.identity ? "a phase on a sub-group cannot run inside a composed schedule whose blocks are rescaled"
                                   : "a phase on a sub-group cannot run inside another one",
             false;
    GroupInfo g;
    if (!group_of(kind, vrank_, root(), rooted, g, err)) return false;
    const auto& rg = window.ranges();
    if (rg.size() != 1 || rg[0].first < 0 || rg[0].second > body_blocks_)
      return err = "the window must be one non-empty range of the caller's " + std::to_string(body_blocks_) + " blocks", false;
    const int64_t len = rg[0].second - rg[0].first;
    if (inner_blocks < 1 || len % inner_blocks != 0)
      return err = "the window's " + std::to_string(len) + " blocks are not a multiple of the composed schedule's " +
                   std::to_string(inner_blocks) + " blocks", false;
    group_.on = true;
    group_.identity = false;
    group_.idle = !g.active;
    group_.members = std::move(g.members);
    group_.index = g.index;
    group_.lo = rg[0].first;
    group_.k = len / inner_blocks;
    group_.inner = inner_blocks;
    saved_[size_t(group_depth_++)] = before;
    return true;
  }
  /// Closes the innermost begin_group(): the map before it is in force again.
  void end_group() {
    if (group_depth_ == 0) return;
    const Saved& v = saved_[size_t(--group_depth_)];
    group_.on = v.on, group_.identity = v.identity, group_.idle = v.idle;
    group_.lo = v.lo, group_.k = v.k, group_.inner = v.inner;
  }
  bool in_group() const { return group_.on; }
  /// Blocks per buffer that the statements being run index: the group's inside a composed
  /// phase on a sub-group, else the body's.
  int64_t scope_blocks() const { return group_.on ? group_.inner : body_blocks_; }
  /// Group index -> body rank (taken modulo the group's size, like every rank).
  int64_t group_peer(int64_t w) const {
    return group_.on && !group_.identity ? group_.members[size_t(mod(w, int64_t(group_.members.size())))] : w;
  }
  /// Group blocks -> body blocks (see begin_group()).
  BlockSet group_blocks(const BlockSet& in) const {
    if (!group_.on) return in;
    const int64_t Bi = group_.inner, Bo = body_blocks_, lo = group_.lo, k = group_.k;
    std::vector<BlockSet::Range>& rs = ranges_scratch_;  // united once (real_blocks() reuses it after this returns)
    rs.clear();
    for (const auto& [a, c] : in.ranges())
      for (int64_t j = a / Bi; j * Bi < c; ++j) {
        const int64_t x = std::max(a, j * Bi) - j * Bi, y = std::min(c, (j + 1) * Bi) - j * Bi;
        const BlockSet w = BlockSet::range(j * Bo + lo + x * k, j * Bo + lo + y * k, (j + 1) * Bo);
        rs.insert(rs.end(), w.ranges().begin(), w.ranges().end());
      }
    return BlockSet::union_of(rs);
  }

  // ---- the body ----
  void begin_phase(int id) {
    if (int(phases_.size()) <= id) phases_.resize(size_t(id) + 1, {0, 0});
    phases_[size_t(id)] = {logged_, logged_};
  }
  void end_phase(int id) { phases_[size_t(id)].second = logged_; }
  /// Whether body rounds are logged for mirror() (on after setup()). A driver whose program
  /// has no `mirror` statement turns it off: no copy of every body round.
  void keep_log(bool on) { keep_log_ = on; }
  void begin_round() { ops_.clear(); }
  /// Body statements: `set` of body blocks to / from body rank `peer` (mod p()).
  void send(const BlockSet& set, int64_t peer, int32_t site = -1) {
    if (group_.on && group_.idle) return;
    ops_.push_back(RoundOp::send_op(real_peer(group_peer(peer)), real_blocks(group_blocks(set)), Via::direct, site));
  }
  void recv(const BlockSet& set, int64_t peer, bool reduce, int32_t site = -1) {
    if (group_.on && group_.idle) return;
    ops_.push_back(RoundOp::recv_op(real_peer(group_peer(peer)), real_blocks(group_blocks(set)), reduce, Via::direct, site));
  }
  /// `reduce src into dst` / `copy src into dst` (applied after the round's receives).
  void local(const BlockSet& src, const BlockSet& dst, bool reduce, int32_t site = -1) {
    if (group_.on && group_.idle) return;
    RoundOp o;
    o.kind = RoundOp::Kind::local;
    o.reduce = reduce;
    o.blocks = real_blocks(group_blocks(dst));
    o.src = real_blocks(group_blocks(src));
    o.site = site;
    ops_.push_back(std::move(o));
  }
  /// `permute`: block j moves to block to[j] (the driver checked the bijection).
  void permute(std::vector<int64_t> to, int32_t site = -1) {
    if (group_.on && group_.idle) return;
    if (group_.on) {  // the group's blocks move within the window, the rest stays
      std::vector<int64_t> outer(static_cast<size_t>(body_blocks_));
      for (int64_t j = 0; j < body_blocks_; ++j) outer[size_t(j)] = j;
      for (size_t j = 0; j < to.size(); ++j)
        for (int64_t t = 0; t < group_.k; ++t)
          outer[size_t(group_.lo + int64_t(j) * group_.k + t)] = group_.lo + to[j] * group_.k + t;
      to = std::move(outer);
    }
    RoundOp o;
    o.kind = RoundOp::Kind::permute;
    o.blocks = BlockSet::all(body_blocks_);
    o.to = std::move(to);
    o.site = site;
    ops_.push_back(std::move(o));
  }
  /// Ends the body round begun by begin_round(): logs it for mirrors, then hands the
  /// sink its round(s).
  template <class Sink>
  int end_round(Sink& sink) {
    if (keep_log_) log_.push_back(ops_);
    ++logged_;
    return emit_body(sink, /*first=*/logged_ == 1, /*fused_replay=*/false);
  }
  /// Replays phase `id` reversed: its rounds in reverse order, each send becoming a copy
  /// receive and each receive a send, same peers and blocks, a permutation its inverse,
  /// local statements dropped. `at_end`: the mirror is the body's last statement (through
  /// composed schedules); under `fold 3-2` its replay of the body's first round is then
  /// fused with the elimination's epilogue (rounds E1, E2). `site`: the driver's id of the
  /// mirror statement.
  template <class Sink>
  int mirror(Sink& sink, int id, bool at_end, int32_t site = -1) {
    const auto [start, end] = id < int(phases_.size()) ? phases_[size_t(id)] : std::pair<int64_t, int64_t>{0, 0};
    if (!keep_log_ && end > start) return kNoLog;
    for (int64_t i = end; i-- > start;) {
      sink.replay(i);
      ops_.clear();
      for (const RoundOp& op : log_[size_t(i)]) {
        if (op.kind == RoundOp::Kind::local) continue;  // local reductions and copies are not replayed
        RoundOp m = op;
        m.via = Via::mirror;
        m.via_site = site;
        if (op.kind == RoundOp::Kind::permute) {
          for (size_t j = 0; j < op.to.size(); ++j) m.to[size_t(op.to[j])] = int64_t(j);
        } else {
          m.kind = op.kind == RoundOp::Kind::send ? RoundOp::Kind::recv : RoundOp::Kind::send;
          m.reduce = false;
        }
        ops_.push_back(std::move(m));
      }
      log_.push_back(ops_);
      ++logged_;
      const int rc = emit_body(sink, /*first=*/false, /*fused_replay=*/at_end && i == 0);
      if (rc) return rc;
    }
    return 0;
  }

  // ---- the fold's own rounds ----
  /// Before the body: the two-one prologue (odd v hands v - 1 its data, which v - 1
  /// reduces for reducing collectives; bine::fold_steps) or the R - 1 rounds of `fold ring R`.
  template <class Sink>
  int prologue(Sink& sink, Collective c) {
    if (lay_.ring) return ring_rounds(sink, true);
    const FoldData d = fold_steps(c).prologue;
    if (lay_.fold != FoldKind::two_one || lay_.extra == 0 || d == FoldData::none) return 0;
    ops_.clear();
    const int64_t v = lay_.v_of(rank_);
    if (v < 2 * lay_.extra) {
      const int64_t partner = lay_.real_of_v(even(v) ? v + 1 : v - 1);
      if (even(v)) ops_.push_back(RoundOp::recv_op(partner, fold_data(d), collective_reduces(c), Via::fold));
      else ops_.push_back(RoundOp::send_op(partner, fold_data(d), Via::fold));
    }
    return sink.round(RoundKind::fold_prologue, ops_);
  }
  /// After the body: the two-one epilogue (v - 1 hands v its result), the R - 1 rounds of
  /// `fold ring R`, or the unfused `fold 3-2` epilogue (the survivors hand their helpers
  /// the whole result).
  template <class Sink>
  int epilogue(Sink& sink, Collective c) {
    if (lay_.ring) return ring_rounds(sink, false);
    ops_.clear();
    if (tt_on_) {
      if (fused_) return 0;
      using Role = ThreeTwo::Role;
      const BlockSet all = BlockSet::all(blocks_);
      const ThreeTwo& tt = lay_.tt;
      if (role_ == Role::survivor || role_ == Role::triple1)
        ops_.push_back(RoundOp::send_op(lay_.real_of_v(tt.shadow(vrank_)), all, Via::fold));
      if (ThreeTwo::helps(role_)) ops_.push_back(RoundOp::recv_op(lay_.real_of_v(tt.survivor(vrank_)), all, false, Via::fold));
      return emit(sink, RoundKind::tt_epilogue, ops_);
    }
    const FoldData d = fold_steps(c).epilogue;
    if (lay_.fold != FoldKind::two_one || lay_.extra == 0 || d == FoldData::none) return 0;
    const int64_t v = lay_.v_of(rank_);
    if (v < 2 * lay_.extra) {
      const int64_t partner = lay_.real_of_v(even(v) ? v + 1 : v - 1);
      if (even(v)) ops_.push_back(RoundOp::send_op(partner, fold_data(d), Via::fold));
      else ops_.push_back(RoundOp::recv_op(partner, fold_data(d), false, Via::fold));
    }
    return sink.round(RoundKind::fold_epilogue, ops_);
  }

  /// Frees the log of body rounds (after epilogue(): a driver that keeps many ranks'
  /// pipelines alive, like the compiler's, need not keep their logs).
  void release() {
    std::vector<std::vector<RoundOp>>().swap(log_);
    std::vector<std::pair<int64_t, int64_t>>().swap(phases_);
    std::vector<RoundOp>().swap(ops_);
  }
  /// True when the final mirror's replay of the first round was fused with the `fold 3-2`
  /// epilogue.
  bool fused() const { return fused_; }

 private:
  using Role = ThreeTwo::Role;
  /// Real blocks a two-one fold round moves: the whole vector or the odd rank's block.
  BlockSet fold_data(FoldData d) const {
    if (d == FoldData::all) return BlockSet::all(blocks_);
    const int64_t v = lay_.v_of(rank_);
    return BlockSet::block(even(v) ? lay_.real_of_v(v + 1) : rank_, blocks_);
  }
  /// A body round (ops_) to the sink: as it is, or rewritten by `fold 3-2` (`first`: the
  /// body's first round; `fused_replay`: the final mirror's replay of it).
  template <class Sink>
  int emit_body(Sink& sink, bool first, bool fused_replay) {
    if (!tt_on_) return sink.round(RoundKind::body, ops_);
    if (first) return three_two_first(sink);
    if (fused_replay) {
      fused_ = true;
      return three_two_last(sink);
    }
    if (ThreeTwo::helps(role_)) ops_.clear();  // the helpers sit the body's inner rounds out
    return emit(sink, RoundKind::body, ops_);
  }
  /// A `fold 3-2` round to the sink, without its empty transfers (they move nothing).
  template <class Sink>
  int emit(Sink& sink, RoundKind k, std::vector<RoundOp>& ops) {
    size_t n = 0;
    for (size_t i = 0; i < ops.size(); ++i)
      if (!(ops[i].transfer() && ops[i].blocks.empty())) {
        if (n != i) ops[n] = std::move(ops[i]);
        ++n;
      }
    ops.resize(n);
    return sink.round(k, ops);
  }
  static RoundOp redirect(RoundOp op, int64_t peer, Via v) {
    op.peer = peer;
    if (op.via == Via::direct) op.via = v;
    return op;
  }
  static RoundOp marked(RoundOp op, Via v) { return redirect(op, op.peer, v); }
  /// The body's first round under `fold 3-2` (RT Sec. 3.1, 3.3): rounds A and B.
  template <class Sink>
  int three_two_first(Sink& sink) {
    const ThreeTwo& tt = lay_.tt;
    const BlockSet all = BlockSet::all(blocks_);
    const std::vector<RoundOp> body = std::move(ops_);
    ops_.clear();
    const bool region = role_ != Role::plain;
    const int64_t partner = lay_.real_of_v(tt.survivor(vrank_ ^ 1));
    BlockSet received;
    first_sent_ = BlockSet();
    for (const RoundOp& op : body) {
      if (region) {
        FoldRoundError e{&op, FoldRoundError::Why::not_transfer, vrank_, partner};
        if (!op.transfer() || op.peer != partner || (op.kind == RoundOp::Kind::recv && !op.reduce)) {
          e.why = !op.transfer() ? FoldRoundError::Why::not_transfer
                  : op.peer != partner ? FoldRoundError::Why::wrong_peer
                                       : FoldRoundError::Why::copies;
          return sink.fold_error(e);
        }
      }
      if (op.kind == RoundOp::Kind::recv) received = received | op.blocks;
      if (op.kind == RoundOp::Kind::send) first_sent_ = first_sent_ | op.blocks;
    }
    first_kept_ = received | (all - first_sent_);
    std::vector<RoundOp> a, b;
    const int64_t one = lay_.real_of_v(1), two = lay_.real_of_v(2);
    switch (role_) {
      case Role::plain: a = body; break;
      case Role::survivor:
        a = body;
        b.push_back(RoundOp::recv_op(lay_.real_of_v(tt.shadow(vrank_)), first_kept_, true, Via::fold));
        break;
      case Role::shadow:
        // Helps virtual w: does its first round with the partner's shadow, then hands the
        // survivor the partial in round B.
        for (const RoundOp& op : body) a.push_back(redirect(op, lay_.real_of_v(tt.shadow(vrank_ ^ 1)), Via::fold_pair));
        b.push_back(RoundOp::send_op(lay_.real_of_v(tt.survivor(vrank_)), first_kept_, Via::fold));
        break;
      case Role::triple0:
        // Round B: its first-round exchange, the partial of virtual 1 coming from real 2.
        for (const RoundOp& op : body) b.push_back(op.kind == RoundOp::Kind::recv ? redirect(op, two, Via::fold_step) : op);
        break;
      case Role::triple1:
        // Round A: keeps the part it holds after the first round, real 2 the part it sends.
        a.push_back(RoundOp::send_op(two, first_sent_, Via::fold));
        a.push_back(RoundOp::recv_op(two, first_kept_, true, Via::fold));
        for (const RoundOp& op : body)
          if (op.kind == RoundOp::Kind::recv) b.push_back(op);  // its sends go out from real 2
        break;
      case Role::triple_shadow:
        // Real 2: reduces the part virtual 1 sends in its first round, sends it in round B.
        a.push_back(RoundOp::send_op(one, first_kept_, Via::fold));
        a.push_back(RoundOp::recv_op(one, first_sent_, true, Via::fold));
        for (const RoundOp& op : body)
          if (op.kind == RoundOp::Kind::send) b.push_back(marked(op, Via::fold_step));
        break;
    }
    const int rc = emit(sink, RoundKind::tt_a, a);
    return rc ? rc : emit(sink, RoundKind::tt_b, b);
  }
  /// The final mirror's replay of the first round under `fold 3-2`: rounds E1 and E2.
  template <class Sink>
  int three_two_last(Sink& sink) {
    const ThreeTwo& tt = lay_.tt;
    const std::vector<RoundOp> body = std::move(ops_);
    ops_.clear();
    std::vector<RoundOp> e1, e2;
    const int64_t one = lay_.real_of_v(1), two = lay_.real_of_v(2);
    switch (role_) {
      case Role::plain: e2 = body; break;
      case Role::survivor:
        e1.push_back(RoundOp::send_op(lay_.real_of_v(tt.shadow(vrank_)), first_kept_, Via::fold));
        e2 = body;
        break;
      case Role::shadow:
        e1.push_back(RoundOp::recv_op(lay_.real_of_v(tt.survivor(vrank_)), first_kept_, false, Via::fold));
        for (const RoundOp& op : body) e2.push_back(redirect(op, lay_.real_of_v(tt.shadow(vrank_ ^ 1)), Via::fold_pair));
        break;
      case Role::triple0:  // E1: its last round, what it sends going to real 2
        for (const RoundOp& op : body) e1.push_back(op.kind == RoundOp::Kind::send ? redirect(op, two, Via::fold_step) : op);
        break;
      case Role::triple1:
        for (const RoundOp& op : body)
          if (op.kind == RoundOp::Kind::send) e1.push_back(op);
        for (const RoundOp& op : body)
          if (op.kind == RoundOp::Kind::recv) e2.push_back(redirect(op, two, Via::fold_step));
        e2.push_back(RoundOp::send_op(two, first_kept_, Via::fold));
        break;
      case Role::triple_shadow:
        for (const RoundOp& op : body)
          if (op.kind == RoundOp::Kind::recv) e1.push_back(marked(op, Via::fold_step));
        e2.push_back(RoundOp::send_op(one, first_sent_, Via::fold));
        e2.push_back(RoundOp::recv_op(one, first_kept_, false, Via::fold));
        break;
    }
    const int rc = emit(sink, RoundKind::tt_e1, e1);
    return rc ? rc : emit(sink, RoundKind::tt_e2, e2);
  }
  /// `fold ring R` (RT Sec. 3.4): R - 1 rounds before the body (member c sends part c + t
  /// to member c + t and keeps the piece of member c - t of its own part in scratch buffer
  /// t; after the last one the reduction in ring order, bine::ring_reductions) or after it
  /// (its part to member c + t, part c - t from member c - t).
  template <class Sink>
  int ring_rounds(Sink& sink, bool before) {
    const int64_t R = lay_.ring, c = ring_c_, Bv = body_blocks_, B = blocks_;
    const int64_t g = lay_.v_of(rank_) / R;
    auto member = [&](int64_t k) { return lay_.real_of_v(g * R + mod(k, R)); };
    auto part = [&](int64_t k, int64_t buffer) {
      return BlockSet::range(mod(k, R) * Bv, mod(k, R) * Bv + Bv, B).shifted(buffer * B);
    };
    for (int64_t t = 1; t < R; ++t) {
      ops_.clear();
      if (before) {
        ops_.push_back(RoundOp::send_op(member(c + t), part(c + t, 0), Via::fold));
        ops_.push_back(RoundOp::recv_op(member(c - t), part(c, t), false, Via::fold));
        if (t == R - 1)
          for (const RingLocal& l : ring_reductions(R, c)) {
            RoundOp o;
            o.kind = RoundOp::Kind::local;
            o.reduce = l.reduce;
            o.via = Via::fold;
            o.src = part(c, l.src);
            o.blocks = part(c, l.dst);
            ops_.push_back(std::move(o));
          }
      } else {
        ops_.push_back(RoundOp::send_op(member(c + t), part(c, 0), Via::fold));
        ops_.push_back(RoundOp::recv_op(member(c - t), part(c - t, 0), false, Via::fold));
      }
      const int rc = sink.round(before ? RoundKind::ring_prologue : RoundKind::ring_epilogue, ops_);
      if (rc) return rc;
    }
    return 0;
  }

  /// The sub-group of the composed phase being run (begin_group()).
  struct Group {
    bool on = false;
    bool idle = false;             ///< the group does not take part (group_of(): inactive)
    std::vector<int64_t> members;  ///< [group index] body rank
    int64_t index = 0;             ///< this rank's group index
    int64_t lo = 0, k = 1;         ///< window start; caller blocks per group block
    int64_t inner = 1;             ///< the group's blocks per buffer
    bool identity = false;         ///< GroupKind::whole: the caller's ranks (members unused)
  };
  Group group_;
  /// The map before each open begin_group() (its members are never replaced by a nested
  /// one: a sub-group does not open inside a group).
  struct Saved {
    bool on, identity, idle;
    int64_t lo, k, inner;
  };
  static constexpr int kMaxGroupDepth = 32;
  Saved saved_[kMaxGroupDepth] = {};
  int group_depth_ = 0;  ///< begin_group() levels open
  FoldLayout lay_;
  int64_t rank_ = 0, vrank_ = 0, ring_c_ = 0;
  int64_t blocks_ = 1, body_blocks_ = 1;
  Role role_ = Role::plain;
  bool tt_on_ = false;  ///< fold 3-2 with p not a power of two
  bool fused_ = false;
  std::vector<RoundOp> ops_;                 ///< the round being built
  std::vector<std::vector<RoundOp>> log_;    ///< [body round] its ops in real terms, before any fold 3-2 rewrite
  mutable std::vector<BlockSet::Range> ranges_scratch_;  ///< group_blocks()' and real_blocks()' ranges (kept: no allocation per call)
  int64_t logged_ = 0;                       ///< body rounds so far (log_.size() when keep_log_)
  bool keep_log_ = true;                     ///< log_ is kept (mirror() needs it)
  std::vector<std::pair<int64_t, int64_t>> phases_;  ///< [phase id] body rounds [first, end)
  BlockSet first_sent_, first_kept_;  ///< fold 3-2: the body's first round, sent / kept afterwards
};

}  // namespace bine
