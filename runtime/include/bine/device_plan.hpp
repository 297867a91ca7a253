// bine/device_plan.hpp: plans of the CUDA target (docs/cuda.md). Host-only C++17: no CUDA,
// no MPI, so the CPU tests (tests/device) run everything here.
//
// A generated schedule body (the same body the MPI target emits, over bine::dev::PlanContext
// instead of bine::mpi::Context) runs once per call shape on the host and records its rounds
// through the shared round pipeline (bine/rounds.hpp); each round is compiled to a Step of
// device operations on element offsets:
//   pre   copies that pack a multi-range send into the rank's staging buffer
//   msgs  the round's messages, each one contiguous range of one buffer (a send from the
//         working buffer or staging; a receive into the working buffer or staging)
//   post  the buffered receives applied (copied, or reduced with the lower rank's data as
//         the left operand), then the local `reduce`/`copy` statements, then permutations
// with the semantics of the MPI runtime's rounds (sends read the buffer as it was at the
// start of the round; receives land at its end). A call = a copy-in step, the rounds, a
// copy-out step. What moves between ranks is then up to a transport:
// - per rank (NCCL, CUDA-aware MPI): RankExec, batches of device operations between
//   grouped sends and receives (rank_exec());
// - in process (p virtual ranks in one process, one stream): InprocExec, every rank's steps
//   merged into one sequence of batches by a dataflow run of the messages at plan time
//   (inproc_exec()): a receive copies straight from the sender's buffer, and the sender's
//   data is copied aside first only where the sender would overwrite it before the receive.
// A batch is a set of device operations that touch disjoint memory (or only read shared
// memory): one kernel launch (bine/cuda_runtime.cuh) or one host loop (run_host()).
#pragma once
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bine/blockset.hpp"
#include "bine/builtins.hpp"
#include "bine/collective.hpp"
#include "bine/cuda_api.h"
#include "bine/device_kernels.hpp"
#include "bine/round_plan.hpp"
#include "bine/rounds.hpp"

namespace bine::dev {

inline constexpr int kOk = BINE_CUDA_SUCCESS;
inline constexpr int kErrOther = BINE_CUDA_ERR_OTHER;

/// Buffers of one rank, as DevOp / Msg buffer ids: the working buffer (the user's recvbuf,
/// or internal device memory), the staging buffer (packed sends, buffered receives,
/// permutation copies), the user's send buffer and receive buffer.
enum : uint32_t { kWork = 0, kStage = 1, kIn = 2, kOut = 3, kBufsPerRank = 4 };

/// One message of a round: `n` elements at element `off` of buffer `buf` (a rank buffer id),
/// sent to or received from real rank `peer`. Messages of one (sender, receiver) pair match
/// in order (MPI's non-overtaking rule; NCCL's ordering within a group).
struct Msg {
  bool recv;
  int64_t peer;
  uint32_t buf;
  uint64_t off, n;
};
/// One round of one rank: pack, exchange, apply (see the top of the file).
struct Step {
  std::vector<DevOp> pre, post;
  std::vector<Msg> msgs;
};

/// What a plan is built for: the call's shape. `count` is the API's count (elements of the
/// vector for allreduce, reduce, bcast, scan, exscan; of one rank's block for allgather,
/// gather, scatter, alltoall, reduce_scatter). `commutative` is what the schedule body sees
/// (false asks an order-preserving schedule for the canonical rank order).
struct PlanRequest {
  Collective kind = Collective::allreduce;
  int64_t p = 1, rank = 0, root = 0;
  uint64_t count = 0;
  uint32_t elem_bytes = 4;
  bool commutative = true;
  bool in_place = false;
};

/// The plan of one rank for one call shape.
struct RankPlan {
  std::vector<Step> steps;
  bool work_internal = false;  ///< the working buffer is internal memory (else the user's recvbuf)
  uint64_t work_elems = 0;     ///< elements of the internal working buffer
  uint64_t stage_elems = 0;    ///< elements of the staging buffer
};

/// The per-function plan cache a generated body names (the MPI target's persistent plans);
/// the CUDA runtime caches plans per communicator instead, so this one is empty.
struct PlanCache {};

/// The schedule body's context (the calls the emitter writes, as bine::mpi::BasicContext
/// names them): runs the body of one rank for one PlanRequest and compiles its rounds into
/// RankPlan steps. Errors: kErrOther with a sentence (error()), BINE_CUDA_ERR_REQUIRES for an
/// unmet `requires`.
class PlanContext {
 public:
  PlanContext(const char* name, const PlanRequest& q) : name_(name), q_(q), sink_{this} {
    blocked_ = collective_has_rank_blocks(q.kind);
    block_elems_ = blocked_ ? q.count : 0;
    count_ = blocked_ ? q.count * uint64_t(q.p) : q.count;
    (void)take_domain_error();
  }

  // ---- the calls of a generated body (bine::mpi::BasicContext documents each) ----
  bool finished() const { return q_.p == 1 || count_ == 0; }
  int finish() {
    if (!finished() && rc_ == kOk) rc_ = pipe_.epilogue(sink_, q_.kind);
    if (rc_ == kOk) rc_ = fail_domain();
    return rc_;
  }
  int plan(PlanCache&) {
    pipe_.setup(FoldLayout(FoldKind::none, 0, blocked_, q_.p, q_.root), q_.rank);
    return kOk;
  }
  bool replayed() const { return false; }
  void fold_setup_ring(int64_t R) { pipe_.setup(FoldLayout(FoldKind::ring, R, blocked_, q_.p, q_.root), q_.rank); }
  bool fold_applies() const { return pipe_.layout().applies(); }
  void fold_setup(bool three_two = false) {
    pipe_.setup(FoldLayout(three_two ? FoldKind::three_two : FoldKind::two_one, 0, blocked_, q_.p, q_.root), q_.rank);
  }
  int fold_prologue() { return pipe_.prologue(sink_, q_.kind); }
  bool active() const { return pipe_.runs_body(); }
  int64_t p() const { return pipe_.p(); }
  int64_t r() const { return pipe_.r(); }
  int64_t root() const { return pipe_.root(); }
  bool commutative() const { return q_.commutative; }
  int fail(int code, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    if (!error_.empty()) return code;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    error_ = std::string(name_) + ": " + text;
    return code;
  }
  int fail_requires(const char* clause) {
    return fail(BINE_CUDA_ERR_REQUIRES, "does not apply at p = %lld: requires %s", (long long)q_.p, clause);
  }
  /// As fail_requires, for a clause that reads `root` (names the excluded root).
  int fail_requires_root(const char* clause) {
    return fail(BINE_CUDA_ERR_REQUIRES, "does not apply at p = %lld with root %lld: requires %s (this root is excluded)",
                (long long)q_.p, (long long)q_.root, clause);
  }
  int fail_domain() {
    if (const char* e = take_domain_error()) return fail(kErrOther, "out of domain: %s", e);
    return kOk;
  }
  int64_t segment() const { return segment_; }
  int set_segment(int64_t bytes) {
    if (bytes >= 0) segment_ = bytes;
    // Segments pace MPI messages; a device transport moves each message whole.
    return bytes < 0 ? fail(kErrOther, "segment size %lld bytes is negative", (long long)bytes) : kOk;
  }
  void set_blocks(int64_t B) {
    pipe_.set_blocks(B);
    blocks_set_ = true;
  }
  int set_scratch(int64_t K) {
    if (K < 0) return fail(kErrOther, "scratch buffer count %lld is negative", (long long)K);
    if (K == 0) return kOk;
    if (blocked_) return fail(kErrOther, "scratch buffers with rank-indexed blocks are not supported");
    scratch_ = K;
    return kOk;
  }
  BlockSet buf(int64_t j, const BlockSet& s) { return buffer_blocks(j, s, scratch_, scope_blocks()); }
  BlockSet bufs(int64_t a, int64_t b, const BlockSet& s) { return buffers_blocks(a, b, s, scratch_, scope_blocks()); }
  void local(const BlockSet& src, const BlockSet& dst, bool reduce) { pipe_.local(src, dst, reduce); }
  void begin_phase(int id) { pipe_.begin_phase(id); }
  void end_phase(int id) { pipe_.end_phase(id); }
  void begin_round() { pipe_.begin_round(); }
  void send(const BlockSet& set, int64_t peer) { pipe_.send(set, peer); }
  void recv(const BlockSet& set, int64_t peer, bool reduce) { pipe_.recv(set, peer, reduce); }
  template <class F>
  void permute(F f) {
    std::vector<int64_t> to;
    if (block_permutation(f, scope_blocks(), to)) pipe_.permute(std::move(to));
  }
  /// Sub-groups (`phase NAME = SCHEDULE on region|across`), as bine::mpi::BasicContext.
  int group_of(GroupKind kind, bool rooted, int64_t* size, int64_t* index, int64_t* root) {
    RoundPipeline::GroupInfo g;
    std::string err;
    if (!RoundPipeline::group_of(kind, pipe_.r(), pipe_.root(), rooted, g, err))
      return fail(kErrOther, "phase on %s: %s", group_kind_name(kind), err.c_str());
    *size = int64_t(g.members.size());
    *index = g.index;
    *root = g.root;
    return kOk;
  }
  int begin_group(GroupKind kind, const BlockSet& window, int64_t B, bool rooted) {
    std::string err;
    if (!pipe_.begin_group(kind, window, B, rooted, err)) return fail(kErrOther, "phase on %s: %s", group_kind_name(kind), err.c_str());
    return kOk;
  }
  void end_group() { pipe_.end_group(); }
  int end_round() {
    if (const int dr = fail_domain(); dr != kOk) return dr;
    return pipe_.end_round(sink_);
  }
  int mirror(int id, bool fold_epilogue = false) { return pipe_.mirror(sink_, id, fold_epilogue); }

  int64_t real_p() const { return q_.p; }
  /// The region layout's fingerprint (bine/mpi_regions.hpp): a device plan is built per
  /// call shape on the host from BINE_REGIONS, which the call shape does not vary.
  void set_region_key(uint64_t) {}

  // ---- for the plan builder ----
  const std::string& error() const { return error_; }
  int64_t scratch() const { return scratch_; }
  uint64_t count() const { return count_; }
  uint64_t block_elems() const { return block_elems_; }
  bool blocked() const { return blocked_; }
  std::vector<Step>& steps() { return steps_; }
  uint64_t stage_elems() const { return stage_max_; }

 private:
  struct Sink {
    PlanContext* cx;
    int round(RoundKind, std::vector<RoundOp>& ops) { return ops.empty() ? kOk : cx->compile_round(ops); }
    void replay(int64_t) {}
    int fold_error(const FoldRoundError&) {
      return cx->fail(kErrOther, "internal error: a fold 3-2 body round the compiler rejects");
    }
  };

  int64_t geometry_blocks() const { return blocked_ ? q_.p : blocks_set_ ? pipe_.stride() : 1; }
  int64_t scope_blocks() const { return pipe_.in_group() ? pipe_.scope_blocks() : geometry_blocks(); }
  static uint64_t total(const std::vector<ElemRange>& r) {
    uint64_t n = 0;
    for (const ElemRange& e : r) n += e.second;
    return n;
  }
  /// Element-wise pairs of two range lists of equal totals: f(from_off, to_off, n).
  template <class F>
  static void zip(const std::vector<ElemRange>& from, const std::vector<ElemRange>& to, F f) {
    size_t i = 0, j = 0;
    uint64_t di = 0, dj = 0;
    while (i < from.size() && j < to.size()) {
      const uint64_t c = std::min(from[i].second - di, to[j].second - dj);
      f(from[i].first + di, to[j].first + dj, c);
      if ((di += c) == from[i].second) ++i, di = 0;
      if ((dj += c) == to[j].second) ++j, dj = 0;
    }
  }
  static DevOp copy_op(uint32_t db, uint64_t d, uint32_t sb, uint64_t s, uint64_t n) {
    return DevOp{0, db, sb, sb, d, s, s, n};
  }
  static DevOp reduce_op(uint32_t db, uint64_t d, uint32_t ab, uint64_t a, uint32_t bb, uint64_t b, uint64_t n) {
    return DevOp{1, db, ab, bb, d, a, b, n};
  }
  /// One round -> one Step (see the top of the file): the round plan every runtime shares
  /// (bine/round_plan.hpp, compile_round(): which receives are buffered, which sends
  /// packed), as device operations and messages through the staging buffer.
  int compile_round(const std::vector<RoundOp>& posts) {
    RoundGeometry g;
    g.count = count_;
    g.blocks = geometry_blocks();
    RoundPlan rp;
    if (const char* why = bine::compile_round(posts, g, rp)) return fail(kErrOther, "%s", why);
    Step st;
    uint64_t stage = 0;  // staging elements used by this round
    const ElemRange* R = rp.ranges.data();
    for (const XferPlan& x : rp.xfers) {
      if (!x.recv) {
        if (!x.buffered) {
          st.msgs.push_back({false, x.peer, kWork, R[x.first].first, x.total});
        } else {  // packed into staging
          uint64_t w = stage;
          for (uint32_t k = 0; k < x.n; ++k)
            st.pre.push_back(copy_op(kStage, w, kWork, R[x.first + k].first, R[x.first + k].second)), w += R[x.first + k].second;
          st.msgs.push_back({false, x.peer, kStage, stage, x.total});
          stage += x.total;
        }
        continue;
      }
      if (!x.buffered) {
        st.msgs.push_back({true, x.peer, kWork, R[x.first].first, x.total});
        continue;
      }
      st.msgs.push_back({true, x.peer, kStage, stage, x.total});
      uint64_t w = stage;
      const bool left = received_is_left_operand(x.peer, q_.rank);
      for (uint32_t k = 0; k < x.n; ++k) {
        const ElemRange& e = R[x.first + k];
        if (!x.reduce)
          st.post.push_back(copy_op(kWork, e.first, kStage, w, e.second));
        else if (left)
          st.post.push_back(reduce_op(kWork, e.first, kStage, w, kWork, e.first, e.second));
        else
          st.post.push_back(reduce_op(kWork, e.first, kWork, e.first, kStage, w, e.second));
        w += e.second;
      }
      stage += x.total;
    }
    for (const LocalPlan& l : rp.locals) {  // after the receives, in program order
      const std::vector<ElemRange> rg(R + l.from, R + l.from + l.nfrom), rg2(R + l.to, R + l.to + l.nto);
      bool overlap = false;
      for (const ElemRange& a : rg)
        for (const ElemRange& b : rg2) overlap |= a.first < b.first + b.second && b.first < a.first + a.second;
      if (l.reduce || !overlap) {
        zip(rg, rg2, [&](uint64_t f, uint64_t t, uint64_t n) {
          st.post.push_back(l.reduce ? reduce_op(kWork, t, kWork, f, kWork, t, n) : copy_op(kWork, t, kWork, f, n));
        });
      } else {  // an overlapping copy (memmove): through staging
        const uint64_t at = stage;
        stage += total(rg);
        uint64_t w = at;
        for (const ElemRange& e : rg) st.post.push_back(copy_op(kStage, w, kWork, e.first, e.second)), w += e.second;
        w = at;
        for (const ElemRange& e : rg2) st.post.push_back(copy_op(kWork, e.first, kStage, w, e.second)), w += e.second;
      }
    }
    const uint64_t B = uint64_t(geometry_blocks());
    for (const std::vector<int64_t>& perm : rp.perm_maps) {  // through a staging copy of the vector
      const uint64_t at = stage;
      stage += count_;
      st.post.push_back(copy_op(kStage, at, kWork, 0, count_));
      for (size_t j = 0; j < perm.size(); ++j) {
        const uint64_t from = block_begin(count_, B, j), len = block_begin(count_, B, j + 1) - from;
        if (len) st.post.push_back(copy_op(kWork, block_begin(count_, B, uint64_t(perm[j])), kStage, at + from, len));
      }
    }
    stage_max_ = std::max(stage_max_, stage);
    steps_.push_back(std::move(st));
    return kOk;
  }

  const char* name_;
  PlanRequest q_;
  Sink sink_;
  RoundPipeline pipe_;
  bool blocked_ = false, blocks_set_ = false;
  uint64_t block_elems_ = 0, count_ = 0;
  int64_t scratch_ = 0, segment_ = 0;
  int rc_ = kOk;
  std::string error_;
  std::vector<Step> steps_;
  uint64_t stage_max_ = 0;
};

/// The region built-ins' layout (docs/topology.md): BINE_REGIONS when set (K, rr:N,
/// map:...), else one region. A device communicator has no node map of its own.
template <class Cx>
int bind_regions(Cx& cx) {
  std::vector<int64_t> labels;
  const char* env = std::getenv("BINE_REGIONS");
  std::string err;
  if (!region_labels(env && *env ? env : "one", cx.real_p(), labels, err))
    return cx.fail(kErrOther, "BINE_REGIONS: %s", err.c_str());
  set_region_labels(labels);
  return kOk;
}

/// Element counts of rank `rank`'s send and receive buffers for API count `count` (0 where
/// the collective has no such buffer on that rank: reduce and gather off the root, bcast
/// and scatter's send side off the root).
inline void buffer_elems(Collective c, int64_t p, int64_t rank, int64_t root, uint64_t count, uint64_t& in,
                         uint64_t& out) {
  const BufferExtents& b = collective_info(c).buffers;
  const bool at_root = rank == root;
  in = extent_elems(at_root ? b.in_root : b.in_other, count, p);
  out = extent_elems(at_root ? b.out_root : b.out_other, count, p);
}

/// A generated body (bine_body_<function>).
using BodyFn = int (*)(PlanContext&);

/// What the generated .cu knows of a schedule: its table entry (bine_device_schedules).
struct Schedule {
  const char* function;       ///< the generated name, e.g. "bcc_bine_allreduce_bdw"
  Collective kind;
  BodyFn body;
  const int64_t (*order)[2];  ///< p ranges where the schedule is order-preserving (verified)
  int norder;
  bool order_preserving, same_bracketing;  ///< the proof's results over the verified range
};

/// `commutative` as the body sees it for (dtype, p): false asks an order-preserving
/// schedule for the canonical rank order, which floating-point sums and products need for
/// reproducible bits (docs/cuda.md, "Operand order").
inline bool body_commutative(const Schedule& s, int dtype, int64_t p) {
  if (!collective_reduces(s.kind) || !dtype_is_float(dtype)) return true;
  for (int i = 0; i < s.norder; ++i)
    if (p >= s.order[i][0] && p <= s.order[i][1]) return false;
  return true;
}

/// The plan of rank q.rank for q: the body's rounds, between the copy-in and copy-out steps
/// of the collective (which user buffer is the working buffer, what is copied in and out:
/// docs/cuda.md, "Buffers"). Returns kOk, or an error code with `error` set.
inline int build_rank_plan(BodyFn body, const char* name, const PlanRequest& q, RankPlan& out, std::string& error) {
  out = RankPlan{};
  PlanContext cx(name, q);
  const int rc = body(cx);
  if (rc != kOk) {
    error = cx.error().empty() ? std::string(name) + ": error " + std::to_string(rc) : cx.error();
    return rc;
  }
  const uint64_t n = cx.count(), be = cx.block_elems(), K = uint64_t(cx.scratch());
  const uint64_t me = uint64_t(q.rank);
  const bool root = q.rank == q.root;
  Step in, outs;
  auto copy = [](uint32_t db, uint64_t d, uint32_t sb, uint64_t s, uint64_t len) { return DevOp{0, db, sb, sb, d, s, s, len}; };
  switch (q.kind) {
    case Collective::allreduce:
    case Collective::scan:
    case Collective::exscan:
    case Collective::reduce:
    case Collective::bcast: {
      // The vector lives in recvbuf where the rank has one (reduce: the root) and the
      // schedule has no scratch buffers; else in internal memory.
      const bool has_out = q.kind != Collective::reduce || root;
      out.work_internal = !has_out || K > 0;
      const bool has_in = q.kind != Collective::bcast || root;  // bcast: only the root's sendbuf
      const uint32_t src = q.in_place ? kOut : kIn;
      if (has_in && n > 0 && (out.work_internal || !q.in_place)) in.pre.push_back(copy(kWork, 0, src, 0, n));
      if (out.work_internal && has_out && n > 0) outs.post.push_back(copy(kOut, 0, kWork, 0, n));
      out.work_elems = out.work_internal ? n * (K + 1) : 0;
      break;
    }
    case Collective::allgather:
    case Collective::gather:
      out.work_internal = q.kind == Collective::gather && !root;
      if (!q.in_place && be > 0) in.pre.push_back(copy(kWork, me * be, kIn, 0, be));
      out.work_elems = out.work_internal ? n : 0;
      break;
    case Collective::scatter:
      out.work_internal = true;
      out.work_elems = n;
      if (root && n > 0) in.pre.push_back(copy(kWork, 0, kIn, 0, n));
      if (!(root && q.in_place) && be > 0) outs.post.push_back(copy(kOut, 0, kWork, me * be, be));
      break;
    case Collective::alltoall:
    case Collective::reduce_scatter:
      out.work_internal = true;
      out.work_elems = n;
      if (n > 0) in.pre.push_back(copy(kWork, 0, q.in_place && q.kind == Collective::alltoall ? kOut : kIn, 0, n));
      if (q.kind == Collective::alltoall && n > 0) outs.post.push_back(copy(kOut, 0, kWork, 0, n));
      if (q.kind == Collective::reduce_scatter && be > 0) outs.post.push_back(copy(kOut, 0, kWork, me * be, be));
      break;
    case Collective::barrier:
      break;
  }
  if (!in.pre.empty()) out.steps.push_back(std::move(in));
  for (Step& s : cx.steps()) out.steps.push_back(std::move(s));
  if (!outs.post.empty()) out.steps.push_back(std::move(outs));
  out.stage_elems = cx.stage_elems();
  return kOk;
}

// ---------------------------------------------------------------------------------------
// Batching: device operations -> batches of non-conflicting ones (ASAP levels).

/// A sequence of batches: batch k is tiles[batch[k], batch[k + 1]).
struct Batches {
  std::vector<DevOp> ops;
  std::vector<Tile> tiles;
  std::vector<uint32_t> batch{0};
  size_t size() const { return batch.size() - 1; }
};

/// Appends `ops` (in program order) to `out` as batches: an op joins the earliest batch
/// after every earlier op it conflicts with (write/read, read/write or write/write overlap
/// on a buffer). Returns how many batches were appended.
inline size_t append_batches(const std::vector<DevOp>& ops, Batches& out) {
  if (ops.empty()) return 0;
  struct Access {
    uint32_t buf;
    uint64_t lo, hi;
    bool write;
    uint32_t level;
  };
  std::map<uint32_t, std::vector<Access>> seen;
  std::vector<uint32_t> level(ops.size(), 0);
  uint32_t levels = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const DevOp& o = ops[i];
    const Access acc[3] = {{o.dst_buf, o.dst, o.dst + o.n, true, 0},
                           {o.a_buf, o.a, o.a + o.n, false, 0},
                           {o.b_buf, o.b, o.b + o.n, false, 0}};
    const int na = o.reduce ? 3 : 2;
    uint32_t lv = 0;
    for (int k = 0; k < na; ++k)
      for (const Access& s : seen[acc[k].buf])
        if ((s.write || acc[k].write) && s.lo < acc[k].hi && acc[k].lo < s.hi) lv = std::max(lv, s.level + 1);
    level[i] = lv;
    levels = std::max(levels, lv + 1);
    for (int k = 0; k < na; ++k) {
      Access a = acc[k];
      a.level = lv;
      seen[a.buf].push_back(a);
    }
  }
  std::vector<std::vector<uint32_t>> by_level(levels);
  for (size_t i = 0; i < ops.size(); ++i) by_level[level[i]].push_back(uint32_t(i));
  const uint32_t base = uint32_t(out.ops.size());
  out.ops.insert(out.ops.end(), ops.begin(), ops.end());
  for (const std::vector<uint32_t>& l : by_level) {
    for (uint32_t i : l)
      for (uint64_t b = 0; b < ops[i].n; b += kTileElems)
        out.tiles.push_back(Tile{base + i, uint32_t(std::min<uint64_t>(kTileElems, ops[i].n - b)), b});
    out.batch.push_back(uint32_t(out.tiles.size()));
  }
  return levels;
}

/// A rank's plan for a per-rank transport: actions in order, each a batch of device
/// operations or a group of messages (posted together, completed together).
struct RankExec {
  struct Action {
    bool p2p;
    uint32_t first, count;  ///< batches, or msgs
  };
  Batches batches;
  std::vector<Msg> msgs;
  std::vector<Action> actions;
};
inline RankExec rank_exec(const RankPlan& plan) {
  RankExec ex;
  auto add_ops = [&](const std::vector<DevOp>& ops) {
    const uint32_t first = uint32_t(ex.batches.size());
    const size_t n = append_batches(ops, ex.batches);
    if (n) ex.actions.push_back({false, first, uint32_t(n)});
  };
  for (const Step& s : plan.steps) {
    add_ops(s.pre);
    if (!s.msgs.empty()) {
      ex.actions.push_back({true, uint32_t(ex.msgs.size()), uint32_t(s.msgs.size())});
      ex.msgs.insert(ex.msgs.end(), s.msgs.begin(), s.msgs.end());
    }
    add_ops(s.post);
  }
  return ex;
}

/// The in-process form of a call: every rank's plan merged into one sequence of batches on
/// global buffer ids (rank i's buffer b is i * kBufsPerRank + b; the arena, where a
/// message's data waits when its sender would overwrite it first, is p * kBufsPerRank).
struct InprocExec {
  Batches batches;
  uint64_t arena_elems = 0;
};

/// Merges the p rank plans by running their messages as a dataflow at plan time: a rank
/// runs its steps in order; a step's sends become available to their receivers when it
/// starts, and the step completes once every one of its receives has a matching message
/// (same sender, in order, same length). Errors (kErrOther, `error` set): a receive whose
/// matching message has another length, or no rank able to go on (a deadlock: the
/// schedule's messages do not match).
inline int inproc_exec(const std::vector<RankPlan>& plans, InprocExec& out, std::string& error) {
  const int64_t p = int64_t(plans.size());
  const uint32_t arena = uint32_t(p) * kBufsPerRank;
  struct Live {
    uint32_t buf;
    uint64_t off, n;
    bool moved;  ///< copied into the arena at `off`
  };
  std::vector<Live> live;                          // every message sent
  std::map<std::pair<int64_t, int64_t>, std::deque<size_t>> chan;  // (src, dst) -> messages
  std::vector<std::pair<uint64_t, uint64_t>> free_list;             // arena (offset, length)
  std::vector<DevOp> ops;
  std::vector<size_t> unconsumed;  // indices into live not yet received
  auto arena_alloc = [&](uint64_t n) {
    for (auto& f : free_list)
      if (f.second >= n) {
        const uint64_t at = f.first;
        f.first += n, f.second -= n;
        return at;
      }
    const uint64_t at = out.arena_elems;
    out.arena_elems += n;
    return at;
  };
  auto arena_free = [&](uint64_t off, uint64_t n) { free_list.push_back({off, n}); };
  // Before an op writes [lo, hi) of `buf`: messages still to be received from there move
  // to the arena.
  auto protect = [&](uint32_t buf, uint64_t lo, uint64_t hi) {
    for (size_t k = 0; k < unconsumed.size(); ++k) {
      Live& m = live[unconsumed[k]];
      if (m.moved || m.buf != buf || !(m.off < hi && lo < m.off + m.n)) continue;
      const uint64_t at = arena_alloc(m.n);
      ops.push_back(DevOp{0, arena, m.buf, m.buf, at, m.off, m.off, m.n});
      m.buf = arena, m.off = at, m.moved = true;
    }
  };
  auto emit = [&](int64_t rank, const DevOp& o0) {
    DevOp o = o0;
    const uint32_t g = uint32_t(rank) * kBufsPerRank;
    o.dst_buf += g, o.a_buf += g, o.b_buf += g;
    protect(o.dst_buf, o.dst, o.dst + o.n);
    ops.push_back(o);
  };
  std::vector<size_t> step(size_t(p), 0);
  std::vector<char> posted(size_t(p), 0);
  size_t done = 0;
  for (int64_t r = 0; r < p; ++r)
    if (plans[size_t(r)].steps.empty()) ++done;
  while (done < size_t(p)) {
    bool progress = false;
    for (int64_t r = 0; r < p; ++r) {
      const std::vector<Step>& steps = plans[size_t(r)].steps;
      while (step[size_t(r)] < steps.size()) {
        const Step& st = steps[step[size_t(r)]];
        if (!posted[size_t(r)]) {
          for (const DevOp& o : st.pre) emit(r, o);
          for (const Msg& m : st.msgs)
            if (!m.recv) {
              live.push_back({uint32_t(r) * kBufsPerRank + m.buf, m.off, m.n, false});
              chan[{r, m.peer}].push_back(live.size() - 1);
              unconsumed.push_back(live.size() - 1);
            }
          posted[size_t(r)] = 1;
          progress = true;
        }
        // Can every receive be matched?
        std::map<int64_t, size_t> need;
        bool ready = true;
        for (const Msg& m : st.msgs)
          if (m.recv && chan[{m.peer, r}].size() < ++need[m.peer]) ready = false;
        if (!ready) break;
        // A receive into staging whose data sits in another rank's buffer (or the arena) is
        // not copied: the step's post operations read it where it is (no rank writes
        // there before they run: the step's operations are emitted together).
        struct Alias {
          uint64_t lo, hi;
          uint32_t buf;
          uint64_t off;
        };
        std::vector<Alias> alias;
        std::vector<size_t> freed;
        auto stage_written = [&](uint64_t lo, uint64_t hi) {
          for (const DevOp& o : st.post)
            if (o.dst_buf == kStage && o.dst < hi && lo < o.dst + o.n) return true;
          return false;
        };
        for (const Msg& m : st.msgs) {
          if (!m.recv) continue;
          std::deque<size_t>& q = chan[{m.peer, r}];
          const size_t id = q.front();
          q.pop_front();
          Live& src = live[id];
          if (src.n != m.n) {
            error = "rank " + std::to_string(r) + " receives " + std::to_string(m.n) + " elements from rank " +
                    std::to_string(m.peer) + ", which sends " + std::to_string(src.n);
            return kErrOther;
          }
          const bool foreign = src.buf == arena || int64_t(src.buf / kBufsPerRank) != r;
          if (m.buf == kStage && foreign && !stage_written(m.off, m.off + m.n)) {
            alias.push_back({m.off, m.off + m.n, src.buf, src.off});
            freed.push_back(id);  // stays protected until the post operations are out
            continue;
          }
          unconsumed.erase(std::find(unconsumed.begin(), unconsumed.end(), id));
          emit(r, DevOp{0, m.buf, 0, 0, m.off, 0, 0, m.n});
          ops.back().a_buf = ops.back().b_buf = src.buf;  // the source is global already
          ops.back().a = ops.back().b = src.off;
          if (src.moved) arena_free(src.off, src.n);
        }
        auto redirect = [&](uint32_t& buf, uint64_t& off, uint64_t n) {
          if (buf != uint32_t(r) * kBufsPerRank + kStage) return;
          for (const Alias& a : alias)
            if (off >= a.lo && off + n <= a.hi) {
              off = a.off + (off - a.lo);
              buf = a.buf;
              return;
            }
        };
        for (const DevOp& o : st.post) {
          emit(r, o);
          DevOp& e = ops.back();
          redirect(e.a_buf, e.a, e.n);
          if (e.reduce) redirect(e.b_buf, e.b, e.n);
          if (!e.reduce) e.b_buf = e.a_buf, e.b = e.a;
        }
        for (size_t id : freed) {
          unconsumed.erase(std::find(unconsumed.begin(), unconsumed.end(), id));
          if (live[id].moved) arena_free(live[id].off, live[id].n);
        }
        posted[size_t(r)] = 0;
        if (++step[size_t(r)] == steps.size()) ++done;
        progress = true;
      }
    }
    if (!progress) {
      for (int64_t r = 0; r < p; ++r)
        if (step[size_t(r)] < plans[size_t(r)].steps.size()) {
          error = "deadlock: rank " + std::to_string(r) + " waits in its step " + std::to_string(step[size_t(r)]) +
                  " for a message no rank sends";
          break;
        }
      return kErrOther;
    }
  }
  if (!unconsumed.empty()) {
    error = "a message is never received";
    return kErrOther;
  }
  append_batches(ops, out.batches);
  return kOk;
}

// ---------------------------------------------------------------------------------------
// The host executor: the kernels' tile body run on the CPU (tests; docs/cuda.md).

struct HostTileRunner {
  const DevOp* ops;
  const Tile* tile;
  char* const* base;
  uint32_t esize;
  template <int T, int Op>
  void operator()() const {
    run_tile<T, Op>(ops, *tile, base, esize, 0, 1);
  }
};
/// Runs batches [first, first + count) of `b` on the host with base pointers `base` (one
/// per buffer id) for (dtype, op). False for a dtype or op outside the enums.
inline bool run_host(const Batches& b, uint32_t first, uint32_t count, char* const* base, int dtype, int op) {
  const uint32_t es = dtype_bytes(dtype);
  for (uint32_t k = first; k < first + count; ++k)
    for (uint32_t t = b.batch[k]; t < b.batch[k + 1]; ++t)
      if (!dispatch(dtype, op, HostTileRunner{b.ops.data(), &b.tiles[t], base, es})) return false;
  return true;
}

}  // namespace bine::dev
