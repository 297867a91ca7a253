// The reference instantiation: the interpreter of compiler/ir/instantiate.cpp as it was before
// the round pipeline (runtime/include/bine/rounds.hpp) took over the folds and the mirror
// (issue 12). It builds the folds' rounds globally (build_three_two, build_ring) from the
// bodies' runs, independently of the pipeline, and stays as the oracle of
// tests/oracle/pipeline_vs_reference.cpp: the instances of both must be byte-identical.
// Not part of bine-cc. Do not "fix" it to match: a difference is a finding.
#include "reference_instantiate.h"

#include <algorithm>

#include "bine/builtins.hpp"
#include "builtins_table.h"

namespace bine::reference {

/// Stores a rank's rounds, built one vector per round, into the Schedule when it goes out
/// of scope (every path of a per-rank loop body).
struct CommitRounds {
  RankRounds& dst;
  std::vector<RoundOps>& rounds;
  ~CommitRounds() { dst = RankRounds(rounds); }
};
namespace {

constexpr int64_t kMaxSteps = 50'000'000;  ///< loop iterations per rank
constexpr size_t kMaxRounds = size_t(1) << 20;  ///< rounds per rank (each holds ops and a label)
constexpr int64_t kMaxBlocks = int64_t(1) << 24;

struct Value {
  int64_t i = 0;
  BlockSet s;
};

/// The fold's rank mapping (formulas.md, "Non-power-of-two process counts"); with no fold
/// the body sees the real p, r and root.
struct FoldMap {
  bool on = false;
  bool blocked = false;  ///< blocks are indexed by rank (gather, scatter, allgather, reduce_scatter)
  bool three_two = false;  ///< `fold 3-2` (allreduce, root 0): the layout of `tt`
  ThreeTwo tt;
  /// `fold ring R` (allreduce, root 0): rings of R consecutive ranks; the body runs on
  /// p / R virtual ranks (r / R) and on part `ring_c` = r mod R of the vector, body block b
  /// being real block ring_c * body_blocks + b (set per rank by RankRun::run()).
  int64_t ring = 0, ring_c = 0, body_blocks = 0;
  int64_t p = 1, root = 0, pv = 1, extra = 0;
  /// First v-space rank (block) of virtual rank w; w == pv gives p.
  int64_t v_first(int64_t w) const { return w < extra ? 2 * w : w + extra; }
  /// Body block set -> real block set. With rank-indexed blocks under a fold, virtual block
  /// w stands for the blocks of the real ranks it represents (one or two), rotated by root.
  BlockSet real_blocks(const BlockSet& body) const {
    if (on && ring) return body.shifted(ring_c * body_blocks);
    if (!on || !blocked) return body;
    BlockSet out;
    for (const auto& [lo, hi] : body.ranges())
      out = out | BlockSet::wrap(v_first(lo) + root, v_first(hi) + root, p);
    return out;
  }
  int64_t v_of(int64_t x) const { return mod(x - root, p); }
  int64_t real_of_v(int64_t v) const { return mod(v + root, p); }
  bool active(int64_t x) const {
    if (!on || ring) return true;
    if (three_two) return !ThreeTwo::helps(tt.role(v_of(x)));
    const int64_t v = v_of(x);
    return v >= 2 * extra || even(v);
  }
  int64_t body_rank(int64_t x) const {
    if (!on) return x;
    if (three_two) return tt.virt(v_of(x));
    if (ring) return v_of(x) / ring;
    const int64_t v = v_of(x);
    return v < 2 * extra ? v / 2 : v - extra;
  }
  int64_t real_peer(int64_t w) const {
    if (!on) return mod(w, p);
    w = mod(w, pv);
    if (three_two) return real_of_v(tt.survivor(w));
    if (ring) return real_of_v(ring * w + ring_c);
    return real_of_v(w < extra ? 2 * w : w + extra);
  }
  /// "rank x" for messages; under the fold also the rank the body sees as r.
  std::string describe(int64_t x) const {
    std::string d = "rank " + std::to_string(x);
    if (on && active(x) && body_rank(x) != x) d += " (r = " + std::to_string(body_rank(x)) + " after the fold)";
    return d;
  }
};

struct Failure {};

/// A composed phase on a sub-group (`phase X = S on region|across window W`): group index w
/// is rank members[w mod size]; group block x of buffer j = x / inner is the caller's blocks
/// j * outer + lo + (x mod inner) * k + t, t < k. Mapped block by block (the pipeline maps
/// ranges).
struct GroupMap {
  bool on = false;
  bool idle = false;  ///< an across group without the root, for a schedule with a root
  std::vector<int64_t> members;
  int64_t index = 0, lo = 0, k = 1, inner = 1, outer = 1;
  bool identity = false;  ///< a composed schedule with fewer blocks than its caller: the caller's ranks
  int64_t peer(int64_t w) const { return on && !identity ? members[size_t(mod(w, int64_t(members.size())))] : w; }
  BlockSet blocks(const BlockSet& s) const {
    if (!on) return s;
    std::vector<int64_t> out;
    for (const auto& [a, b] : s.ranges())
      for (int64_t x = a; x < b; ++x)
        for (int64_t t = 0; t < k; ++t) out.push_back((x / inner) * outer + lo + (x % inner) * k + t);
    std::sort(out.begin(), out.end());
    BlockSet r;
    for (int64_t y : out) r.push_back_block(y);
    return r;
  }
};

/// "p=P root=R" for rooted collectives, "p=P" otherwise: the instance an error is about.
std::string instance_label(int64_t p, int64_t root, Collective c) {
  return "p=" + std::to_string(p) + (collective_is_rooted(c) ? " root=" + std::to_string(root) : "");
}

class RankRun {
 public:
  RankRun(const Program& prog, const ScheduleDecl& sd, const FoldMap& fm, int64_t real_rank,
          bool commutative, DiagnosticSink& diags, int64_t p_real, int64_t root_real)
      : prog_(prog), sd_(&sd), fm_(fm), rank_(real_rank), commutative_(commutative), diags_(diags),
        p_real_(p_real), root_real_(root_real), collective_(sd.collective) {
    p_ = fm.on ? fm.pv : p_real;
    r_ = fm.body_rank(real_rank);
    root_ = fm.on ? 0 : root_real;
    slots_.resize(size_t(sd.num_slots));
    phase_rounds_.resize(size_t(sd.num_phases), {0, 0});
  }

  std::vector<RoundOps> rounds;
  std::vector<const Stmt*> sites;   ///< the statement that opened each round
  std::vector<std::string> labels;
  std::vector<int64_t> segments;    ///< the `segment` size in force in each round (bytes, 0: none)
  int64_t blocks = 1;
  int64_t scratch = 0;              ///< K of `scratch K` (buffers besides the vector)
  int64_t top_segment = 0;          ///< the top-level schedule's `segment` (fold rounds use it)
  std::string unmet;
  const Expr* unmet_clause = nullptr;  ///< the first false `requires` clause
  /// Under `fold 3-2`: the body round in which the body's final mirror replays body round 0
  /// (the fold's epilogue is fused with it), else -1.
  int64_t fused_round = -1;

  /// Runs params, requires, blocks and the body. Returns false when `requires` fails
  /// (unmet is set). Throws Failure after reporting a diagnostic.
  bool run() {
    for (const Param& pr : sd_->params) slots_[size_t(pr.slot)].i = eval_int(*pr.init, pr.span);
    for (const ExprPtr& e : sd_->requires_)
      if (!eval_int(*e, e->span)) {
        unmet = e->span.text();
        unmet_clause = e.get();
        return false;
      }
    blocks = sd_->blocks ? eval_int(*sd_->blocks, sd_->blocks->span) : p_;
    if (fm_.on && fm_.ring) {
      fm_.ring_c = mod(fm_.v_of(rank_), fm_.ring);
      fm_.body_blocks = blocks;
      if (blocks > kMaxBlocks / (2 * fm_.ring))
        fail(sd_->blocks ? sd_->blocks->span : sd_->name_span,
             "block count " + std::to_string(blocks) + " times 'fold ring " + std::to_string(fm_.ring) +
                 "' parts and buffers exceeds " + std::to_string(kMaxBlocks) + " blocks");
    }
    if (blocks < 1 || blocks > kMaxBlocks)
      fail(sd_->blocks ? sd_->blocks->span : sd_->name_span,
           "block count " + std::to_string(blocks) + " outside 1.." + std::to_string(kMaxBlocks));
    if (sd_->scratch) {
      scratch = eval_int(*sd_->scratch, sd_->scratch->span);
      if (scratch < 0 || (scratch + 1) > kMaxBlocks / buffer_stride())
        fail(sd_->scratch->span, "scratch buffer count " + std::to_string(scratch) + " outside 0.." +
                                     std::to_string(kMaxBlocks / buffer_stride() - 1) + " (at most " + std::to_string(kMaxBlocks) +
                                     " blocks in all buffers)");
    }
    top_segment = segment_ = eval_segment(*sd_, 0);
    exec_top(sd_->body, /*at_end=*/true);
    return true;
  }

 private:
  [[noreturn]] void fail(const Span& at, const std::string& msg) {
    diags_.error(at, instance_label(p_real_, root_real_, collective_) + ": " +
                         fm_.describe(rank_) + ": " + msg);
    throw Failure{};
  }
  /// The `segment` clause of `t` in the current scope, else `inherited`.
  int64_t eval_segment(const ScheduleDecl& t, int64_t inherited) {
    if (!t.segment) return inherited;
    const int64_t v = eval_int(*t.segment, t.segment->span);
    if (v < 0) fail(t.segment->span, "segment size " + std::to_string(v) + " bytes is negative (0: no segmentation)");
    return v;
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
  /// The body of a schedule (top level or composed): its last statement ends the top-level
  /// body when `at_end` (a mirror there is fused with the `fold 3-2` epilogue; the emitter's
  /// top_block() applies the same rule).
  void exec_top(const Block& b, bool at_end) {
    for (size_t i = 0; i < b.size(); ++i) {
      at_end_ = at_end && i + 1 == b.size();
      exec(*b[i]);
    }
    at_end_ = false;
  }
  void open_round(const Stmt& site, const std::string& label) {
    if (rounds.size() >= kMaxRounds) fail(site.span, "more than " + std::to_string(kMaxRounds) + " rounds");
    rounds.emplace_back();
    sites.push_back(&site);
    labels.push_back(label);
    segments.push_back(segment_);
    in_round_ = true;
  }
  std::string where_label(const Stmt& s) const {
    std::string l = phase_name_.empty() ? "" : "phase " + phase_name_ + ", ";
    return l + "line " + std::to_string(s.span.line);
  }
  void exec(const Stmt& s) {
    if (s.round && !in_round_) {
      open_round(s, where_label(s));
      exec_inner(s);
      in_round_ = false;
      return;
    }
    exec_inner(s);
  }
  void exec_inner(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::let:
      case StmtKind::var:
      case StmtKind::assign:
        if (s.in_fn) args_.back()[size_t(s.slot)] = eval_int(*s.a, s.span);
        else slots_[size_t(s.slot)] = eval(*s.a, s.span);
        return;
      case StmtKind::for_: {
        const int64_t lo = eval_int(*s.a, s.span), hi = eval_int(*s.b, s.span);
        for (int64_t i = lo; i < hi; ++i) {
          if (++steps_ > kMaxSteps) fail(s.span, "more than " + std::to_string(kMaxSteps) + " loop iterations");
          if (s.in_fn) args_.back()[size_t(s.slot)] = i;
          else slots_[size_t(s.slot)].i = i;
          if (s.round_loop) {
            open_round(s, where_label(s) + ", " + s.name + " = " + std::to_string(i));
            exec_block(s.body);
            in_round_ = false;
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
        BlockSet set = fm_.real_blocks(gm_.blocks(eval_set(*s.a, s.span)));
        const int64_t peer = fm_.real_peer(gm_.peer(eval_int(*s.b, s.span)));
        add(SendOp{peer, std::move(set), Origin{s.span, {}, {}}});
        return;
      }
      case StmtKind::recv: {
        BlockSet set = fm_.real_blocks(gm_.blocks(eval_set(*s.a, s.span)));
        const int64_t peer = fm_.real_peer(gm_.peer(eval_int(*s.b, s.span)));
        add(RecvOp{peer, std::move(set), s.reduce, Origin{s.span, {}, {}}});
        return;
      }
      case StmtKind::exchange: {
        BlockSet out = fm_.real_blocks(gm_.blocks(eval_set(*s.a, s.span)));
        BlockSet in = fm_.real_blocks(gm_.blocks(eval_set(*s.b, s.span)));
        const int64_t peer = fm_.real_peer(gm_.peer(eval_int(*s.c, s.span)));
        add(SendOp{peer, std::move(out), Origin{s.span, {}, {}}});
        add(RecvOp{peer, std::move(in), s.reduce, Origin{s.span, {}, {}}});
        return;
      }
      case StmtKind::phase: {
        const size_t start = rounds.size();
        phase_name_ = s.name;
        exec_block(s.body);
        phase_name_.clear();
        phase_rounds_[size_t(s.phase_id)] = {start, rounds.size()};
        return;
      }
      case StmtKind::round_block:
        exec_block(s.body);
        return;
      case StmtKind::frames:  // newer than this frozen oracle (the library has no frames schedule)
        fail(s.span, "'frames' is not supported by the reference interpreter");
      case StmtKind::local: {
        BlockSet src = fm_.real_blocks(gm_.blocks(eval_set(*s.a, s.span)));
        BlockSet dst = fm_.real_blocks(gm_.blocks(eval_set(*s.b, s.span)));
        add(LocalOp{std::move(src), std::move(dst), s.reduce, Origin{s.span, {}, {}}});
        return;
      }
      case StmtKind::permute: {
        // Block j moves to block f(j); f must be a bijection on [0, B).
        if (fm_.on && fm_.blocked)
          fail(s.span, "'permute' under 'fold' with rank-indexed blocks is not supported");
        PermuteOp op;
        op.origin = Origin{s.span, {}, {}};
        op.blocks = BlockSetRef(BlockSet::all(blocks));
        std::vector<int64_t> perm(size_t(blocks), 0);
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
          perm[size_t(j)] = d;
        }
        if (gm_.on) {  // inside a sub-group: each group block is k caller blocks of the window
          std::vector<int64_t> to(size_t(gm_.outer));
          for (int64_t x = 0; x < gm_.outer; ++x) to[size_t(x)] = x;
          for (int64_t x = gm_.lo; x < gm_.lo + gm_.inner * gm_.k; ++x)
            to[size_t(x)] = gm_.lo + perm[size_t((x - gm_.lo) / gm_.k)] * gm_.k + (x - gm_.lo) % gm_.k;
          op.to = std::move(to);
          op.blocks = BlockSetRef(BlockSet::all(gm_.outer));
        } else {
          op.to = std::move(perm);
        }
        add(std::move(op));
        return;
      }
      case StmtKind::use: {
        // Composition: run the used schedule's body in its own scope, on the same ranks
        // and blocks. Its `fold` is not applied (the caller's governs); its `requires`
        // must hold and its block count must equal the caller's.
        const ScheduleDecl& t = prog_.schedules[size_t(s.target)];
        // Parameter values set by this call, evaluated in the caller's scope.
        std::vector<std::pair<int, int64_t>> given;
        for (const Stmt::Override& ov : s.overrides) given.emplace_back(ov.param, eval_int(*ov.value, ov.value->span));
        // On a sub-group: the members (every rank of this region in rank order, or the rank
        // of every region with this rank's local index, in region order), the window in the
        // caller's blocks; the group's p and r from here on.
        const int64_t saved_p = p_, saved_r = r_, saved_root = root_, saved_blocks = blocks;
        GroupMap gm;
        BlockSet window;
        if (s.group != GroupKind::none) {
          if (gm_.on) fail(s.span, "sub-groups do not nest");
          const RegionLayout& lay = region_layout();
          std::vector<int64_t> count(size_t(lay.p), 0);
          for (int64_t x = 0; x < lay.p; ++x) ++count[size_t(lay.region_of[size_t(x)])];
          for (int64_t x = 0; x < lay.p; ++x)
            if (count[size_t(lay.region_of[size_t(x)])] != count[0]) fail(s.group_span, "regions are not of one size");
          const int64_t me = r_;
          for (int64_t x = 0; x < lay.p; ++x) {
            const bool same = s.group == GroupKind::region ? lay.region_of[size_t(x)] == lay.region_of[size_t(me)]
                                                           : lay.local_of[size_t(x)] == lay.local_of[size_t(me)];
            if (x == me) gm.index = int64_t(gm.members.size());
            if (same) gm.members.push_back(x);
          }
          if (s.group == GroupKind::across)  // in region order: regions are numbered by their lowest rank
            std::sort(gm.members.begin(), gm.members.end(),
                      [&](int64_t a, int64_t b) { return lay.region_of[size_t(a)] < lay.region_of[size_t(b)]; });
          for (size_t i = 0; i < gm.members.size(); ++i)
            if (gm.members[i] == me) gm.index = int64_t(i);
          window = s.a ? eval_set(*s.a, s.a->span) : BlockSet::all(blocks);
          gm.outer = blocks;
          // A schedule with a root: the group's root is the member in the root's region
          // (across) or with the root's local index (region); only the root's across group runs.
          if (collective_is_rooted(t.collective)) {
            const int64_t rt = root_;
            if (s.group == GroupKind::across) gm.idle = lay.local_of[size_t(rt)] != lay.local_of[size_t(me)];
            root_ = s.group == GroupKind::across ? lay.region_of[size_t(rt)] : lay.local_of[size_t(rt)];
          }
          p_ = int64_t(gm.members.size());
          r_ = gm.index;
        }
        const ScheduleDecl* saved_sd = sd_;
        std::vector<Value> saved_slots = std::move(slots_);
        std::vector<std::pair<size_t, size_t>> saved_phases = std::move(phase_rounds_);
        const std::string saved_name = phase_name_;
        sd_ = &t;
        slots_.assign(size_t(t.num_slots), Value{});
        phase_rounds_.assign(size_t(t.num_phases), {0, 0});
        phase_name_ = s.name;
        const size_t start = rounds.size();
        for (size_t k = 0; k < t.params.size(); ++k) {
          const Param& pr = t.params[k];
          const auto g = std::find_if(given.begin(), given.end(), [&](const auto& v) { return v.first == int(k); });
          slots_[size_t(pr.slot)].i = g != given.end() ? g->second : eval_int(*pr.init, pr.span);
        }
        for (const ExprPtr& e : t.requires_)
          if (!eval_int(*e, e->span))
            fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "', whose requirement '" + e->span.text() +
                                "' is false here");
        if (s.group != GroupKind::none) {
          gm.inner = t.blocks ? eval_int(*t.blocks, t.blocks->span) : p_;
          if (window.ranges().size() != 1 || gm.inner < 1 || window.size() % gm.inner != 0)
            fail(s.span, "bad window for the sub-group");
          gm.lo = window.ranges()[0].first;
          gm.k = window.size() / gm.inner;
          gm.on = true;
          blocks = gm.inner;
        } else if (t.blocks) {
          // Fewer blocks than the caller: each of them is blocks / b consecutive caller blocks,
          // on the caller's ranks (a window of every block).
          const int64_t b = eval_int(*t.blocks, t.blocks->span);
          if (b < 1 || blocks % b != 0)
            fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "' with " + std::to_string(b) +
                                " blocks, but this schedule has " + std::to_string(blocks) + ", not a multiple of " + std::to_string(b));
          gm = gm_;
          if (b != blocks) {
            if (gm.on) {  // inside a sub-group or another rescaled schedule: each of its blocks is blocks / b of those
              gm.k *= blocks / b;
            } else {
              gm.on = gm.identity = true;
              gm.outer = blocks, gm.lo = 0, gm.k = blocks / b;
            }
            gm.inner = b;
            blocks = b;
          }
        } else {
          gm = gm_;
        }
        if (t.scratch) {
          const int64_t k = eval_int(*t.scratch, t.scratch->span);
          if (k > scratch)
            fail(s.c->span, "phase '" + s.name + "' uses schedule '" + t.name + "' with " + std::to_string(k) +
                                " scratch buffers, but this schedule declares " + std::to_string(scratch));
        }
        const int64_t saved_segment = segment_;
        segment_ = eval_segment(t, segment_);
        std::swap(gm_, gm);
        exec_top(t.body, at_end_);
        std::swap(gm_, gm);
        p_ = saved_p, r_ = saved_r, root_ = saved_root, blocks = saved_blocks;
        segment_ = saved_segment;
        sd_ = saved_sd;
        slots_ = std::move(saved_slots);
        phase_rounds_ = std::move(saved_phases);
        phase_name_ = saved_name;
        phase_rounds_[size_t(s.phase_id)] = {start, rounds.size()};
        return;
      }
      case StmtKind::mirror: {
        const auto [start, end] = phase_rounds_[size_t(s.mirror_of)];
        const std::string via = "mirror of phase '" + s.other + "'";
        for (size_t i = end; i-- > start;) {
          open_round(s, "phase " + s.name + " (" + via + ", its body round " + std::to_string(i) + ")");
          if (fm_.three_two && at_end_ && i == 0) fused_round = int64_t(rounds.size()) - 1;
          const RoundOps src = rounds[i];
          for (const Op& op : src) {
            Origin o = origin_of(op);
            o.via = via;
            o.via_span = s.span;
            if (const auto* snd = std::get_if<SendOp>(&op)) {
              rounds.back().push_back(RecvOp{snd->peer, snd->blocks, false, o});
            } else if (std::holds_alternative<LocalOp>(op)) {
              continue;  // local reductions and copies are not replayed by a mirror
            } else if (const auto* pm = std::get_if<PermuteOp>(&op)) {
              PermuteOp inv = *pm;  // mirrored: the inverse permutation
              std::vector<int64_t> back(pm->to.size());
              for (size_t j = 0; j < pm->to.size(); ++j) back[size_t(pm->to[j])] = int64_t(j);
              inv.to = std::move(back);
              inv.origin = o;
              rounds.back().push_back(std::move(inv));
            } else {
              rounds.back().push_back(SendOp{peer_of(op), blocks_of(op), o});
            }
          }
          in_round_ = false;
        }
        return;
      }
    }
  }
  void add(Op op) {
    if (!in_round_) fail(origin_of(op).span, "internal: transfer outside a round");
    if (gm_.on && gm_.idle) return;  // a sub-group that does not take part
    rounds.back().push_back(std::move(op));
  }

  // ---- expressions ----
  Value eval(const Expr& e, const Span& at) {
    Value v;
    if (e.type == Type::set) v.s = eval_set(e, at);
    else v.i = eval_int(e, at);
    return v;
  }
  int64_t eval_int(const Expr& e, const Span& at) {
    const int64_t v = int_expr(e, at);
    check_domain(e.span.valid() ? e.span : at);
    return v;
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
          case NameKind::fn_param: return args_.back()[size_t(e.slot)];
          case NameKind::unresolved: break;
        }
        fail(e.span, "internal: unresolved name");
      case ExprKind::unary: {
        const int64_t a = int_expr(*e.kids[0], at);
        if (e.op == Tok::minus) return neg(a);
        if (e.op == Tok::bang) return !a;
        return ~a;
      }
      case ExprKind::binary: {
        if (e.kids[0]->type == Type::set) {
          const BlockSet x = eval_set(*e.kids[0], at), y = eval_set(*e.kids[1], at);
          return e.op == Tok::eq ? x == y : x != y;
        }
        const int64_t a = int_expr(*e.kids[0], at);
        if (e.op == Tok::ampamp) return a && int_expr(*e.kids[1], at);
        if (e.op == Tok::pipepipe) return a || int_expr(*e.kids[1], at);
        const int64_t b = int_expr(*e.kids[1], at);
        switch (e.op) {
          case Tok::plus: return bine::add(a, b);
          case Tok::minus: return sub(a, b);
          case Tok::star: return mul(a, b);
          case Tok::slash: return checked(div(a, b), e.span);
          case Tok::percent: return checked(rem(a, b), e.span);
          case Tok::shl: return checked(shl(a, b), e.span);
          case Tok::shr: return checked(shr(a, b), e.span);
          case Tok::amp: return a & b;
          case Tok::pipe: return a | b;
          case Tok::caret: return a ^ b;
          case Tok::eq: return a == b;
          case Tok::ne: return a != b;
          case Tok::lt: return a < b;
          case Tok::le: return a <= b;
          case Tok::gt: return a > b;
          case Tok::ge: return a >= b;
          default: fail(e.span, "internal: bad operator");
        }
      }
      case ExprKind::ternary:
        return int_expr(*e.kids[0], at) ? int_expr(*e.kids[1], at) : int_expr(*e.kids[2], at);
      case ExprKind::call: return call(e, at);
      default: fail(e.span, "internal: set used as int");
    }
  }
  int64_t call(const Expr& e, const Span& at) {
    if (e.builtin >= 0) return checked(builtin(e, at), e.span);
    const FnDecl& f = e.fn >= 0 ? sd_->fns[size_t(e.fn)] : prog_.fns[size_t(-2 - e.fn)];
    std::vector<int64_t> a;
    for (const ExprPtr& k : e.kids) a.push_back(int_expr(*k, at));
    if (args_.size() > 256) fail(e.span, "fn calls nested too deeply");
    a.resize(size_t(std::max<int64_t>(f.frame_size, int64_t(a.size()))), 0);
    args_.push_back(std::move(a));
    exec_block(f.stmts);
    const int64_t v = int_expr(*f.body, at);
    args_.pop_back();
    return v;
  }
  int64_t builtin(const Expr& e, const Span& at) {
    const BuiltinId id = BuiltinId(e.builtin);
    if (id == BuiltinId::size) return set_size(eval_set(*e.kids[0], at));
    if (id == BuiltinId::contains) return set_contains(eval_set(*e.kids[0], at), int_expr(*e.kids[1], at));
    const int64_t a = e.kids.empty() ? 0 : int_expr(*e.kids[0], at);  // regions() has none
    const int64_t b = e.kids.size() > 1 ? int_expr(*e.kids[1], at) : 0;
    switch (id) {
      case BuiltinId::log2: return bine::log2(a);
      case BuiltinId::ceil_log2: return ceil_log2(a);
      case BuiltinId::is_pow2: return is_pow2(a);
      case BuiltinId::pow2: return pow2(a);
      case BuiltinId::lowmask: return lowmask(a);
      case BuiltinId::popcount: return popcount(a);
      case BuiltinId::ctz: return ctz(a);
      case BuiltinId::clz: return clz(a);
      case BuiltinId::bitrev: return bitrev(a, b);
      case BuiltinId::even: return even(a);
      case BuiltinId::odd: return odd(a);
      case BuiltinId::min: return bine::min(a, b);
      case BuiltinId::max: return bine::max(a, b);
      case BuiltinId::mod: return mod(a, b);
      case BuiltinId::nb: return nb(a);
      case BuiltinId::from_nb: return from_nb(a);
      case BuiltinId::rho: return rho(a);
      case BuiltinId::nu: return nu(a, b);
      case BuiltinId::nu_inv: return nu_inv(a, b);
      case BuiltinId::regions: return bine::regions();
      case BuiltinId::region: return bine::region(a);
      case BuiltinId::local_rank: return bine::local_rank(a);
      case BuiltinId::region_size: return bine::region_size(a);
      case BuiltinId::region_rank: return bine::region_rank(a, b);
      case BuiltinId::equal_regions: return bine::equal_regions();
      case BuiltinId::size:
      case BuiltinId::contains:
      case BuiltinId::buf:
      case BuiltinId::bufs: break;
    }
    fail(e.span, "internal: unknown builtin " + e.name);
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
        fail(e.span, "internal: int used as set");
      default: fail(e.span, "internal: int used as set");
    }
  }
  /// Blocks per buffer in the instance: B, or R * B under `fold ring R` (the body's blocks are
  /// one R-th of each buffer; real_blocks() then shifts them to the rank's part).
  int64_t buffer_stride() const { return fm_.on && fm_.ring ? fm_.ring * blocks : blocks; }
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

  const Program& prog_;
  const ScheduleDecl* sd_;
  FoldMap fm_;  ///< a copy: under `fold ring` it holds this rank's ring coordinate
  int64_t rank_;
  bool commutative_;
  DiagnosticSink& diags_;
  int64_t p_real_, root_real_;
  Collective collective_;  ///< of the top-level schedule (error labels)
  int64_t p_ = 1, r_ = 0, root_ = 0;
  GroupMap gm_;  ///< the sub-group of the composed phase being run
  std::vector<Value> slots_;
  std::vector<std::vector<int64_t>> args_;
  std::vector<std::pair<size_t, size_t>> phase_rounds_;
  std::string phase_name_;
  bool in_round_ = false;
  int64_t segment_ = 0;  ///< the `segment` size in force (bytes, 0: none)
  int64_t steps_ = 0;
  bool at_end_ = false;  ///< the statement being run ends the top-level body (exec_top)
};

/// What virtual rank w does in the body's first round (run of its survivor): the blocks it
/// sends, the blocks it receives, and what it keeps = receives | (all - sends): the part of
/// the vector it holds reduced over its pair afterwards.
struct FirstRound {
  BlockSet sent, received, kept;
};
FirstRound first_round(const RoundOps& r0, const BlockSet& all) {
  FirstRound f;
  for (const Op& op : r0) {
    if (const auto* s = std::get_if<SendOp>(&op)) f.sent = f.sent | s->blocks;
    if (const auto* v = std::get_if<RecvOp>(&op)) f.received = f.received | v->blocks;
  }
  f.kept = f.received | (all - f.sent);
  return f;
}

/// `fold 3-2` for p = p' + extra, extra > 0 (docs/language.md, "fold 3-2"; RT Sec. 3.1 and
/// 3.3): the body ran on the survivors as p' virtual ranks; its first round is replaced by
/// rounds A and B of the elimination, its last round, when it is the final mirror's replay
/// of the first, by rounds E1 and E2 (else one epilogue round E follows the body). Body round
/// k >= 1 becomes instance round k + 1 (the fused last one: R + 1), R + 2 rounds in all.
InstStatus build_three_two(const ScheduleDecl& decl, const FoldMap& fm, std::vector<RankRun>& runs, const RankRun& ref,
                           Schedule& out, DiagnosticSink& diags) {
  using Role = ThreeTwo::Role;
  const ThreeTwo& tt = fm.tt;
  const size_t R = ref.rounds.size();
  const std::string inst = instance_label(out.p, out.root, decl.collective);
  if (R == 0) {
    diags.error(decl.fold_span, inst + ": 'fold 3-2' needs a body with at least one round (its first round is fused with "
                                       "the 3-2 step)");
    return InstStatus::error;
  }
  const bool fused = R >= 2 && ref.fused_round == int64_t(R) - 1;
  // The 3-2 and 2-1 steps stand in for the first butterfly exchange of the virtual ranks
  // they double up (RT Sec. 3.1 and 3.3): that round must pair 2w with 2w + 1 only.
  for (int64_t w = 0; w < tt.vregion_end(); ++w) {
    const int64_t x = fm.real_of_v(tt.survivor(w)), partner = fm.real_of_v(tt.survivor(w ^ 1));
    for (const Op& op : runs[size_t(x)].rounds[0]) {
      std::string why;
      const auto* rv = std::get_if<RecvOp>(&op);
      if (!is_transfer(op)) why = "has a local statement or permute in it";
      else if (peer_of(op) != partner)
        why = "communicates with " + fm.describe(peer_of(op)) + ", not with " + fm.describe(partner);
      else if (rv && !rv->reduce) why = "receives without reducing";
      if (why.empty()) continue;
      diags.error(origin_of(op).span, inst + ": " + fm.describe(x) + ": 'fold 3-2' fuses the 3-2 and 2-1 elimination steps with " +
                                          "the body's first round, which must be a reducing exchange between r = 2w and 2w + 1 " +
                                          "(RT Sec. 3.1); here r = " + std::to_string(w) + " " + why);
      return InstStatus::error;
    }
  }
  const BlockSet all = BlockSet::all(out.blocks);
  const Origin fo{decl.fold_span, "fold", decl.fold_span};
  auto via = [&](const Op& op, const char* what) {
    Op o = op;
    std::visit([&](auto& v) {
      if (v.origin->via.empty()) {
        Origin org = v.origin;
        org.via = what;
        org.via_span = decl.fold_span;
        v.origin = org;
      }
    }, o);
    return o;
  };
  auto with_peer = [](Op op, int64_t peer) {
    if (auto* snd = std::get_if<SendOp>(&op)) snd->peer = int32_t(peer);
    if (auto* rcv = std::get_if<RecvOp>(&op)) rcv->peer = int32_t(peer);
    return op;
  };
  out.num_rounds = int64_t(R + 2);
  out.round_labels.assign(R + 2, "");
  out.round_segments.assign(R + 2, ref.top_segment);
  out.round_labels[0] = tt.t ? "fold 3-2, round A (3-2 step: ranks 1 and 2 reduce what each keeps; the others: " + ref.labels[0] + ")"
                             : "fold 3-2, round A (" + ref.labels[0] + ", the 2-1 helpers too)";
  out.round_labels[1] = "fold 3-2, round B (" + ref.labels[0] + ", the eliminated ranks' partials in)";
  out.round_segments[0] = out.round_segments[1] = ref.segments[0];
  auto at = [&](size_t k) { return fused && k == R - 1 ? R + 1 : k + 1; };  // body round k >= 1
  for (size_t k = 1; k < R; ++k) {
    out.round_labels[at(k)] = ref.labels[k];
    out.round_segments[at(k)] = ref.segments[k];
  }
  if (fused) {
    out.round_labels[R] = "fold 3-2 epilogue E1 (mirror of round B)";
    out.round_labels[R + 1] += " + fold 3-2 epilogue E2 (mirror of round A)";
  } else {
    out.round_labels[R + 1] = "fold 3-2 epilogue (the result to the eliminated ranks)";
  }
  for (int64_t x = 0; x < out.p; ++x) {
    std::vector<RoundOps> rr;
    const CommitRounds commit{out.ranks[size_t(x)], rr};
    rr.assign(R + 2, {});
    const int64_t v = fm.v_of(x);
    const Role role = tt.role(v);
    const int64_t w = tt.virt(v);
    const bool shadow = ThreeTwo::helps(role);
    const int64_t sv = fm.real_of_v(tt.survivor(w));  // the survivor this rank is or helps
    RankRun& run = runs[size_t(sv)];
    // Body rounds 1 .. R-1 (the survivors' own; a fused last round is rebuilt below).
    if (!shadow)
      for (size_t k = 1; k < R; ++k)
        if (!(fused && k == R - 1 && role != Role::plain && role != Role::survivor)) rr[at(k)] = run.rounds[k];
    const FirstRound f = first_round(run.rounds[0], all);
    switch (role) {
      case Role::plain:
        rr[0] = run.rounds[0];
        break;
      case Role::survivor: {
        const int64_t sh = fm.real_of_v(tt.shadow(w));
        rr[0] = run.rounds[0];
        rr[1].push_back(RecvOp{sh, f.kept, true, fo});
        if (fused) rr[R].push_back(SendOp{sh, f.kept, fo});
        else rr[R + 1].push_back(SendOp{sh, all, fo});
        break;
      }
      case Role::shadow: {
        // Helps virtual w: does its first round (and, fused, its last) with the partner's
        // shadow, and hands it the partial in round B.
        const int64_t partner_shadow = fm.real_of_v(tt.shadow(w ^ 1));
        for (const Op& op : run.rounds[0]) rr[0].push_back(via(with_peer(op, partner_shadow), "fold 3-2 (2-1 pair)"));
        rr[1].push_back(SendOp{sv, f.kept, fo});
        if (fused) {
          rr[R].push_back(RecvOp{sv, f.kept, false, fo});
          for (const Op& op : run.rounds[R - 1]) rr[R + 1].push_back(via(with_peer(op, partner_shadow), "fold 3-2 (2-1 pair)"));
        } else {
          rr[R + 1].push_back(RecvOp{sv, all, false, fo});
        }
        break;
      }
      case Role::triple0: {
        // RoundOps B: its first-round exchange, the partial of virtual 1 coming from real 2.
        const int64_t helper = fm.real_of_v(2);
        for (const Op& op : run.rounds[0])
          rr[1].push_back(std::holds_alternative<RecvOp>(op) ? via(with_peer(op, helper), "fold 3-2 (3-2 step)") : op);
        if (fused)  // E1: its last round, what it sends going to real 2
          for (const Op& op : run.rounds[R - 1])
            rr[R].push_back(std::holds_alternative<SendOp>(op) ? via(with_peer(op, helper), "fold 3-2 (3-2 step)") : op);
        break;
      }
      case Role::triple1: {
        // RoundOps A: keeps the part it holds after the first round, real 2 the part it sends.
        const int64_t helper = fm.real_of_v(2);
        rr[0].push_back(SendOp{helper, f.sent, fo});
        rr[0].push_back(RecvOp{helper, f.kept, true, fo});
        for (const Op& op : run.rounds[0])
          if (std::holds_alternative<RecvOp>(op)) rr[1].push_back(op);  // its sends go out from real 2
        if (fused) {
          for (const Op& op : run.rounds[R - 1])
            if (std::holds_alternative<SendOp>(op)) rr[R].push_back(op);
          for (const Op& op : run.rounds[R - 1])
            if (std::holds_alternative<RecvOp>(op)) rr[R + 1].push_back(via(with_peer(op, helper), "fold 3-2 (3-2 step)"));
          rr[R + 1].push_back(SendOp{helper, f.kept, fo});
        } else {
          rr[R + 1].push_back(SendOp{helper, all, fo});
        }
        break;
      }
      case Role::triple_shadow: {
        // Real 2: reduces the part virtual 1 sends in its first round and sends it in round B.
        const int64_t one = fm.real_of_v(1);
        rr[0].push_back(SendOp{one, f.kept, fo});
        rr[0].push_back(RecvOp{one, f.sent, true, fo});
        for (const Op& op : run.rounds[0])
          if (std::holds_alternative<SendOp>(op)) rr[1].push_back(via(op, "fold 3-2 (3-2 step)"));
        if (fused) {
          for (const Op& op : run.rounds[R - 1])
            if (std::holds_alternative<RecvOp>(op)) rr[R].push_back(via(op, "fold 3-2 (3-2 step)"));
          rr[R + 1].push_back(SendOp{one, f.sent, fo});
          rr[R + 1].push_back(RecvOp{one, f.kept, false, fo});
        } else {
          rr[R + 1].push_back(RecvOp{one, all, false, fo});
        }
        break;
      }
    }
    // Empty sets move nothing: drop them.
    for (RoundOps& rd : rr)
      rd.erase(std::remove_if(rd.begin(), rd.end(), [](const Op& op) { return is_transfer(op) && blocks_of(op).empty(); }),
               rd.end());
  }
  return InstStatus::ok;
}

/// `fold ring R` (docs/language.md, "fold ring"; RT Sec. 3.4): R - 1 prologue rounds (each
/// member sends every other member its part, keeps the pieces of its own in scratch
/// buffers 1 .. R-1, reduces them in ring order after the last one, bine::ring_reductions),
/// the body on its part, R - 1 epilogue rounds (each member sends its part to every other).
InstStatus build_ring(const ScheduleDecl& decl, const FoldMap& fm, std::vector<RankRun>& runs, const RankRun& ref,
                      Schedule& out) {
  const int64_t R = fm.ring, Bv = ref.blocks, B = R * Bv;
  const size_t body = ref.rounds.size(), pro = size_t(R - 1);
  out.blocks = B;
  out.scratch = std::max(ref.scratch, R - 1);  // the body's buffers reuse the ring's
  out.num_rounds = int64_t(2 * pro + body);
  out.round_labels.clear();
  out.round_segments.clear();
  for (size_t t = 1; t <= pro; ++t) {
    out.round_labels.push_back("fold ring " + std::to_string(R) + ", prologue round " + std::to_string(t) + " (parts to the member " +
                               std::to_string(t) + " ahead" + (t == pro ? ", then the reduction in ring order)" : ")"));
    out.round_segments.push_back(ref.top_segment);
  }
  out.round_labels.insert(out.round_labels.end(), ref.labels.begin(), ref.labels.end());
  out.round_segments.insert(out.round_segments.end(), ref.segments.begin(), ref.segments.end());
  for (size_t t = 1; t <= pro; ++t) {
    out.round_labels.push_back("fold ring " + std::to_string(R) + ", epilogue round " + std::to_string(t) + " (its part to the member " +
                               std::to_string(t) + " ahead)");
    out.round_segments.push_back(ref.top_segment);
  }
  const Origin o{decl.fold_span, "fold", decl.fold_span};
  for (int64_t x = 0; x < out.p; ++x) {
    std::vector<RoundOps> rr;
    const CommitRounds commit{out.ranks[size_t(x)], rr};
    rr.assign(size_t(out.num_rounds), {});
    const int64_t v = fm.v_of(x), c = mod(v, R), g = v / R;
    auto member = [&](int64_t k) { return fm.real_of_v(g * R + mod(k, R)); };
    auto part = [&](int64_t k, int64_t buffer) { return BlockSet::range(mod(k, R) * Bv, mod(k, R) * Bv + Bv, B).shifted(buffer * B); };
    for (int64_t t = 1; t < R; ++t) {
      RoundOps& rd = rr[size_t(t - 1)];
      rd.push_back(SendOp{member(c + t), part(c + t, 0), o});
      rd.push_back(RecvOp{member(c - t), part(c, t), false, o});
      if (t == R - 1)
        for (const RingLocal& l : ring_reductions(R, c)) rd.push_back(LocalOp{part(c, l.src), part(c, l.dst), l.reduce, o});
      RoundOps& ep = rr[pro + body + size_t(t - 1)];
      ep.push_back(SendOp{member(c + t), part(c, 0), o});
      ep.push_back(RecvOp{member(c - t), part(c - t, 0), false, o});
    }
    for (size_t k = 0; k < body; ++k) rr[pro + k] = std::move(runs[size_t(x)].rounds[k]);
  }
  return InstStatus::ok;
}

}  // namespace

InstStatus reference_instantiate(const Program& program, const ScheduleDecl& decl, const InstanceRequest& req,
                       Schedule& out, DiagnosticSink& diags, std::string* unmet) {
  (void)take_domain_error();
  bind_regions(req.p);  // the layout of --regions (region_spec()) for the region built-ins
  out = Schedule{};
  out.name = decl.name;
  out.decl_span = decl.name_span;
  out.collective = decl.collective;
  out.p = req.p;
  out.root = collective_is_rooted(decl.collective) ? req.root : 0;
  out.fold = decl.fold;
  out.fold_ring = decl.fold == FoldKind::ring ? decl.fold_ring : 0;
  out.ranks.assign(size_t(req.p), {});
  if (req.p < 1 || out.root < 0 || out.root >= req.p) {
    diags.error(decl.name_span, "invalid instance: " + instance_label(req.p, req.root, decl.collective));
    return InstStatus::error;
  }
  FoldMap fm;
  fm.p = req.p;
  fm.root = out.root;
  if (decl.fold != FoldKind::none) {
    fm.on = true;
    fm.blocked = collective_has_rank_blocks(decl.collective);
    fm.pv = int64_t(1) << bine::log2(req.p);
    fm.extra = req.p - fm.pv;
    fm.three_two = decl.fold == FoldKind::three_two;
    fm.tt = ThreeTwo(req.p);
    if (decl.fold == FoldKind::ring) {
      fm.ring = decl.fold_ring;
      if (req.p % fm.ring != 0) {
        // Like an unmet `requires`: the instance does not exist (check reports the p as excluded).
        if (unmet) *unmet = fold_ring_condition(fm.ring);
        return InstStatus::not_applicable;
      }
      fm.pv = req.p / fm.ring;
      fm.extra = 0;
    }
  }
  out.fold_helper.assign(size_t(req.p), false);
  for (int64_t x = 0; x < req.p; ++x) out.fold_helper[size_t(x)] = !fm.active(x);
  const FoldSteps steps = fold_steps(decl.collective);
  const bool prologue = fm.on && !fm.three_two && !fm.ring && fm.extra > 0 && steps.prologue != FoldData::none;
  const bool epilogue = fm.on && !fm.three_two && !fm.ring && fm.extra > 0 && steps.epilogue != FoldData::none;

  // Run the body on every active rank.
  std::vector<RankRun> runs;
  runs.reserve(size_t(req.p));
  const RankRun* ref = nullptr;
  int64_t ref_rank = 0;  ///< the first active rank, whose run the others are compared with
  int64_t first_rank = -1;
  bool applies = true;   ///< the `requires` clauses hold (on the first active rank)
  try {
    for (int64_t x = 0; x < req.p; ++x) {
      runs.emplace_back(program, decl, fm, x, req.commutative, diags, req.p, out.root);
      if (!fm.active(x)) continue;
      const bool met = runs.back().run();
      if (first_rank < 0) {
        first_rank = x;
        applies = met;
      } else if (met != applies) {
        // Every rank must agree on whether the schedule applies.
        const int64_t no = met ? first_rank : x, yes = met ? x : first_rank;
        const Expr* clause = runs[size_t(no)].unmet_clause;
        diags.error(clause ? clause->span : decl.name_span,
                    instance_label(req.p, out.root, decl.collective) + ": 'requires' clause is false on " +
                        fm.describe(no) + " but holds on " + fm.describe(yes) +
                        "; the conditions of 'requires' must not depend on the rank");
        return InstStatus::error;
      }
      if (!met) continue;
      if (!ref) {
        ref = &runs.back();
        ref_rank = x;
        continue;
      }
      const RankRun& me = runs.back();
      if (me.blocks != ref->blocks) {
        diags.error(decl.blocks ? decl.blocks->span : decl.name_span,
                    instance_label(req.p, out.root, decl.collective) + ": ranks disagree on the block count (" +
                        fm.describe(ref_rank) + ": " + std::to_string(ref->blocks) + ", " + fm.describe(x) + ": " +
                        std::to_string(me.blocks) + "); the block count must not depend on the rank");
        return InstStatus::error;
      }
      if (me.scratch != ref->scratch) {
        diags.error(decl.scratch ? decl.scratch->span : decl.name_span,
                    instance_label(req.p, out.root, decl.collective) + ": ranks disagree on the scratch buffer count (" +
                        fm.describe(ref_rank) + ": " + std::to_string(ref->scratch) + ", " + fm.describe(x) + ": " +
                        std::to_string(me.scratch) + "); it must not depend on the rank");
        return InstStatus::error;
      }
      const size_t n = std::min(me.sites.size(), ref->sites.size());
      size_t i = 0;
      while (i < n && me.sites[i] == ref->sites[i]) ++i;
      if (i < n || me.sites.size() != ref->sites.size()) {
        const Stmt* a = i < ref->sites.size() ? ref->sites[i] : nullptr;
        const Stmt* b = i < me.sites.size() ? me.sites[i] : nullptr;
        Diagnostic& d = diags.error(b ? b->span : (a ? a->span : decl.name_span),
                                    instance_label(req.p, out.root, decl.collective) +
                                        ": ranks disagree on the round structure at round " + std::to_string(i) +
                                        " (" + fm.describe(x) + (b ? " opens it here" : " has no such round") +
                                        "); conditions and bounds of round loops must not depend on the rank");
        if (a) add_note(d, a->span, "the first active rank, " + fm.describe(ref_rank) + ", opens it here");
        return InstStatus::error;
      }
      // Checked after the round structure: ranks that agree on their rounds have one
      // segment size per round each, so the two lists have the same length.
      if (me.segments != ref->segments) {
        size_t k = 0;
        while (me.segments[k] == ref->segments[k]) ++k;
        const Expr* seg = decl.segment.get();
        diags.error(seg ? seg->span : decl.name_span,
                    instance_label(req.p, out.root, decl.collective) + ": ranks disagree on the segment size in round " +
                        std::to_string(k) + " (" + fm.describe(ref_rank) + ": " + std::to_string(ref->segments[k]) +
                        " bytes, " + fm.describe(x) + ": " + std::to_string(me.segments[k]) +
                        "); the segment size must not depend on the rank");
        return InstStatus::error;
      }
    }
  } catch (const Failure&) {
    return InstStatus::error;
  }
  if (!applies) {
    if (unmet) *unmet = runs[size_t(first_rank)].unmet;
    return InstStatus::not_applicable;
  }
  out.blocks = fm.blocked ? req.p : ref ? ref->blocks : 1;
  out.scratch = ref ? ref->scratch : 0;
  if (fm.three_two && fm.extra > 0 && ref) return build_three_two(decl, fm, runs, *ref, out, diags);
  if (fm.ring && ref) return build_ring(decl, fm, runs, *ref, out);

  const size_t body_rounds = ref ? ref->rounds.size() : 0;
  const size_t first = prologue ? 1 : 0;
  out.num_rounds = int64_t(first + body_rounds + (epilogue ? 1 : 0));
  if (prologue) out.round_labels.push_back("fold prologue (two-one elimination)");
  if (ref) out.round_labels.insert(out.round_labels.end(), ref->labels.begin(), ref->labels.end());
  if (epilogue) out.round_labels.push_back("fold epilogue");
  const int64_t top_seg = ref ? ref->top_segment : 0;
  if (prologue) out.round_segments.push_back(top_seg);
  if (ref) out.round_segments.insert(out.round_segments.end(), ref->segments.begin(), ref->segments.end());
  if (epilogue) out.round_segments.push_back(top_seg);
  const BlockSet everything = BlockSet::all(out.blocks);
  for (int64_t x = 0; x < req.p; ++x) {
    std::vector<RoundOps> rr;
    const CommitRounds commit{out.ranks[size_t(x)], rr};
    rr.assign(size_t(out.num_rounds), {});
    if (fm.active(x))
      for (size_t t = 0; t < body_rounds; ++t) rr[first + t] = std::move(runs[size_t(x)].rounds[t]);
    if (!fm.on || fm.extra == 0) continue;
    const int64_t v = fm.v_of(x);
    if (v >= 2 * fm.extra) continue;
    const Origin o{decl.fold_span, "fold", decl.fold_span};
    const int64_t partner = even(v) ? fm.real_of_v(v + 1) : fm.real_of_v(v - 1);
    // Prologue: odd v hands its data to v - 1; epilogue: v - 1 hands v its result.
    const int64_t odd_real = even(v) ? partner : x;
    auto data = [&](FoldData d) { return d == FoldData::all ? everything : BlockSet::block(odd_real, out.blocks); };
    if (prologue) {
      const bool reduce = collective_reduces(decl.collective);
      if (even(v)) rr[0].push_back(RecvOp{partner, data(steps.prologue), reduce, o});
      else rr[0].push_back(SendOp{partner, data(steps.prologue), o});
    }
    if (epilogue) {
      RoundOps& last = rr.back();
      if (even(v)) last.push_back(SendOp{partner, data(steps.epilogue), o});
      else last.push_back(RecvOp{partner, data(steps.epilogue), false, o});
    }
  }
  return InstStatus::ok;
}

}  // namespace bine::reference
