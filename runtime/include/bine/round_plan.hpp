// One round plan for every runtime (docs/architecture.md, "One round pipeline"; issue 46):
// a round of the shared pipeline (bine/rounds.hpp, RoundOp: block sets, real peers) resolved
// to element ranges of the working buffer: which transfers are posted in which order, which
// are packed or buffered, which reducing receives may be reduced piece by piece as they
// arrive, the local reductions and copies, and the block permutations. No MPI, no CUDA: the
// MPI runtime (bine/mpi_runtime.hpp, and through it the uTofu one) runs it over its
// transport, the device planner (bine/device_plan.hpp) turns it into device operations and
// messages.
#pragma once
#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include "bine/blockset.hpp"
#include "bine/collective.hpp"
#include "bine/rounds.hpp"

namespace bine {

/// (offset, count) in elements of the working buffer (the vector, then `scratch` buffers).
using ElemRange = std::pair<uint64_t, uint64_t>;

/// The block geometry a round is resolved in: the working buffer's vector of `count`
/// elements in `blocks` blocks (buffer_block_begin(): scratch buffer k's block b is block
/// (k + 1) * blocks + b), or irregular blocks (`offsets`: block b is [offsets[b],
/// offsets[b + 1]); no scratch there); `piece`: elements per message piece (segmentation
/// and the transport's chunk cap; UINT64_MAX: none); `keep_empty`: empty messages are
/// posted (a barrier's messages are all empty).
struct RoundGeometry {
  uint64_t count = 0;
  int64_t blocks = 1;
  const std::vector<uint64_t>* offsets = nullptr;
  uint64_t piece = UINT64_MAX;
  bool keep_empty = false;
};

/// The most elements one message piece holds on an MPI transport (MPI counts are `int`):
/// a longer message travels in pieces of this many (the MPI runtime's kMaxChunk unless a
/// test build lowers it with BINE_MAX_CHUNK; the cost model prices the same pieces).
inline constexpr uint64_t kMpiMaxPieceElements = INT_MAX;

/// Elements per message piece (RoundGeometry::piece): a `segment` of `segment_bytes` bytes
/// (<= 0: none) in whole elements of `elem_bytes`, at least one, at most `max_piece`. The
/// runtime's rule (BasicContext::piece_elements) and the cost model's.
inline uint64_t message_piece(int64_t segment_bytes, uint64_t elem_bytes, uint64_t max_piece) {
  if (segment_bytes <= 0) return max_piece;
  const uint64_t e = uint64_t(segment_bytes) / (elem_bytes ? elem_bytes : 1);
  return e < 1 ? 1 : e < max_piece ? e : max_piece;
}

/// One transfer of a compiled round (RoundPlan).
struct XferPlan {
  int64_t peer;      ///< real rank
  bool recv, reduce;
  bool buffered;     ///< send: packed into scratch first; receive: into scratch, applied after the wait
  bool early;        ///< a buffered reducing receive reduced piece by piece as the pieces arrive
  uint32_t first, n; ///< its element ranges, in message order: RoundPlan::ranges[first, first + n)
  uint64_t total;    ///< elements of the message
  /// Several ranges in one piece, posted as one element of a datatype over them (the MPI
  /// runtime's choice, after compile_round(): MPI transport only, a predefined element
  /// type): neither packed nor buffered.
  bool typed = false;
};
/// A local `reduce`/`copy` of a compiled round: ranges `from` onto ranges `to`, in order.
struct LocalPlan {
  uint32_t from, nfrom, to, nto;  ///< element ranges in RoundPlan::ranges
  bool reduce;
};
/// One round resolved to element ranges: what a runtime posts, waits for and applies.
/// Compiled from the round's block sets once (compile_round()), then run on that call and,
/// through a persistent plan, on every later call of the same shape.
struct RoundPlan {
  std::vector<ElemRange> ranges;
  std::vector<XferPlan> xfers;   ///< posted in this order
  std::vector<LocalPlan> locals; ///< applied after the receives, in program order
  std::vector<std::vector<int64_t>> perms;  ///< block permutations that move something, as cycles (permutation_cycles()), applied last
  std::vector<std::vector<int64_t>> perm_maps;  ///< the same permutations as maps (block j -> map[j])
  uint64_t piece = 0;            ///< elements per message piece (RoundGeometry::piece)
  /// The round's step for the transport (Transport::begin_step): the rank's count of rounds
  /// before it in the call, empty ones included, which is the instance round the verifier
  /// matched its transfers in; UINT32_MAX for a two-one fold epilogue (the instance's last
  /// round, which ranks the fold eliminated reach without the body's rounds).
  uint32_t step = 0;
};

/// Element ranges (offset, count) of a block set in the working buffer, scratch included,
/// appended to `out`; returns how many (empty blocks are skipped).
inline uint32_t element_ranges(const BlockSet& set, const RoundGeometry& g, std::vector<ElemRange>& out) {
  const uint64_t B = uint64_t(g.blocks);
  uint32_t n = 0;
  for (const BlockSet::Range& rg : set.ranges()) {
    const uint64_t off = g.offsets ? (*g.offsets)[size_t(rg.first)] : buffer_block_begin(g.count, B, uint64_t(rg.first));
    const uint64_t cnt = (g.offsets ? (*g.offsets)[size_t(rg.second)] : buffer_block_begin(g.count, B, uint64_t(rg.second))) - off;
    if (cnt > 0) out.push_back({off, cnt}), ++n;
  }
  return n;
}

/// The cycles of the block permutation `to` (block j -> to[j]) that move something: each as
/// its length k then blocks c_0 .. c_{k-1}, where c_{i+1} is the block whose data goes to
/// c_i (c_0's data goes to c_{k-1}). Fixed blocks are left out; empty for the identity.
inline std::vector<int64_t> permutation_cycles(const std::vector<int64_t>& to) {
  const size_t n = to.size();
  std::vector<int64_t> from(n, -1), out;
  for (size_t j = 0; j < n; ++j) from[size_t(to[j])] = int64_t(j);
  std::vector<bool> seen(n, false);
  for (size_t j = 0; j < n; ++j) {
    if (seen[j] || from[j] == int64_t(j)) continue;
    const size_t at = out.size();
    out.push_back(0);
    for (size_t c = j; !seen[c]; c = size_t(from[c])) {
      seen[c] = true;
      out.push_back(int64_t(c));
    }
    out[at] = int64_t(out.size() - at - 1);
  }
  return out;
}

/// Resolves one round's ops to element ranges in `rp` (empty on entry but for `step`). One
/// message per op (split into pieces of g.piece elements by the runtime). A send of several
/// ranges is packed; a receive is buffered (into scratch, applied after the wait) when it
/// reduces, has several ranges, or lands in blocks a send of the same round reads; a
/// buffered reducing one is reduced piece by piece (early) when it has more than one piece
/// and nothing else of the round (its sends, its other receives) touches its blocks.
/// Identity permutations are dropped. Returns null, or the reason the round is out of the
/// schedule's domain (a local statement between blocks of different sizes, a permutation
/// moving a block into one of another size), which the runtime reports as its error.
inline const char* compile_round(const std::vector<RoundOp>& posts, const RoundGeometry& g, RoundPlan& rp) {
  using Kind = RoundOp::Kind;
  rp.piece = g.piece;
  BlockSet sent;
  for (const RoundOp& op : posts)
    if (op.kind == Kind::send) sent = sent | op.blocks;
  for (size_t i = 0; i < posts.size(); ++i) {
    const RoundOp& op = posts[i];
    if (op.kind == Kind::permute) {
      const uint64_t B = uint64_t(g.blocks);
      for (size_t j = 0; j < op.to.size(); ++j)
        if (block_begin(g.count, B, j + 1) - block_begin(g.count, B, j) !=
            block_begin(g.count, B, uint64_t(op.to[j]) + 1) - block_begin(g.count, B, uint64_t(op.to[j])))
          return "out of domain: permute moves a block into a block of another size";
      std::vector<int64_t> cycles = permutation_cycles(op.to);
      if (!cycles.empty()) {  // the identity moves nothing
        rp.perms.push_back(std::move(cycles));
        rp.perm_maps.push_back(op.to);
      }
      continue;
    }
    if (op.kind == Kind::local) {
      LocalPlan l{uint32_t(rp.ranges.size()), 0, 0, 0, op.reduce};
      l.nfrom = element_ranges(op.src, g, rp.ranges);
      l.to = uint32_t(rp.ranges.size());
      l.nto = element_ranges(op.blocks, g, rp.ranges);
      uint64_t nf = 0, nt = 0;
      for (uint32_t k = 0; k < l.nfrom; ++k) nf += rp.ranges[l.from + k].second;
      for (uint32_t k = 0; k < l.nto; ++k) nt += rp.ranges[l.to + k].second;
      if (nf != nt) return "a local reduce or copy between blocks of different sizes";
      rp.locals.push_back(l);
      continue;
    }
    const bool is_recv = op.kind == Kind::recv;
    XferPlan x{op.peer, is_recv, op.reduce, false, false, uint32_t(rp.ranges.size()), 0, 0};
    x.n = element_ranges(op.blocks, g, rp.ranges);
    if (x.n == 0 && !g.keep_empty) continue;
    for (uint32_t k = 0; k < x.n; ++k) x.total += rp.ranges[x.first + k].second;
    if (!is_recv) {
      x.buffered = x.n > 1;
    } else {
      x.buffered = op.reduce || x.n > 1 || !(op.blocks & sent).empty();
      if (x.buffered && op.reduce && rp.piece < x.total) {
        BlockSet touched = sent;  // what else the round touches: its sends and its other receives
        for (size_t j = 0; j < posts.size(); ++j)
          if (j != i && posts[j].kind == Kind::recv) touched = touched | posts[j].blocks;
        x.early = (op.blocks & touched).empty();
      }
    }
    rp.xfers.push_back(x);
  }
  return nullptr;
}

}  // namespace bine
