#include "rotation.h"

namespace bine {
namespace {

/// The receive of rank s.peer that the send rd[j] of rank x meets in round t: the k-th
/// send to a peer meets the peer's k-th receive from x (match_round()'s rule); null when
/// there is none.
const RecvOp* matching_recv(const Schedule& sch, int64_t x, int64_t t, const Round& rd, size_t j, const SendOp& s) {
  size_t k = 0;
  for (size_t i = 0; i < j; ++i) k += std::holds_alternative<SendOp>(rd[i]) && peer_of(rd[i]) == s.peer;
  for (const Op& op : sch.ranks[size_t(s.peer)][size_t(t)]) {
    const auto* r = std::get_if<RecvOp>(&op);
    if (r && r->peer == x && k-- == 0) return r;
  }
  return nullptr;
}

class Rotation {
 public:
  Rotation(const Schedule& base, const Schedule& inst)
      : a_(base), b_(inst), p_(base.p), R_(inst.root), rank_blocks_(collective_has_rank_blocks(base.collective)) {}

  std::string run() const {
    if (a_.p != b_.p || a_.blocks != b_.blocks || a_.scratch != b_.scratch || a_.num_rounds != b_.num_rounds ||
        a_.ranks.size() != b_.ranks.size())
      return "the instances differ in p, block count, scratch buffers or rounds";
    if (a_.fold_helper.size() != b_.fold_helper.size()) return "the fold sets aside other ranks";
    // Round after round (the order of the round-major op storage) to find out whether
    // anything differs; only then rank after rank, to name the first difference in (rank,
    // round) order.
    bool differs = false;
    for (int64_t x = 0; x < p_ && !differs && !a_.fold_helper.empty(); ++x)
      differs = a_.fold_helper[size_t(x)] != b_.fold_helper[size_t(rho(x))];
    for (int64_t t = 0; t < a_.num_rounds && !differs; ++t)
      for (int64_t x = 0; x < p_ && !differs; ++x) differs = !round_mismatch(x, t).empty();
    if (!differs) return "";
    for (int64_t x = 0; x < p_; ++x) {
      const int64_t y = rho(x);
      if (!a_.fold_helper.empty() && a_.fold_helper[size_t(x)] != b_.fold_helper[size_t(y)])
        return "rank " + std::to_string(y) + ": the fold sets it aside differently";
      for (int64_t t = 0; t < a_.num_rounds; ++t) {
        const std::string d = round_mismatch(x, t);
        if (!d.empty()) return d;
      }
    }
    return "";
  }

 private:
  /// How round t of rank rho(x) differs from rank x's rotated ("" when it does not).
  std::string round_mismatch(int64_t x, int64_t t) const {
    const int64_t y = rho(x);
    const Round& ra = a_.ranks[size_t(x)][size_t(t)];
    const Round& rb = b_.ranks[size_t(y)][size_t(t)];
    // The message prefix only on a mismatch (this visits every op of the instance).
    auto where = [&] { return "rank " + std::to_string(y) + ", round " + std::to_string(t) + ": "; };
    if (ra.size() != rb.size())
      return where() + std::to_string(rb.size()) + " operations instead of the " + std::to_string(ra.size()) + " of rank " +
             std::to_string(x) + " for root 0";
    for (size_t i = 0; i < ra.size(); ++i) {
      const std::string d = op_mismatch(ra[i], rb[i]);
      if (!d.empty()) return where() + "operation " + std::to_string(i) + " " + d + " (rank " + std::to_string(x) + " for root 0)";
    }
    if (rank_blocks_) {
      const std::string d = pairing_mismatch(x, t);
      if (!d.empty()) return where() + d;
    }
    return "";
  }
  int64_t rho(int64_t x) const { return (x + R_) % p_; }
  /// Rank-indexed blocks are rank numbers and rotate with them; vector blocks do not.
  BlockSet rotated(const BlockSet& s) const {
    if (!rank_blocks_ || R_ == 0) return s;
    return BlockSet::wrap_mapped(s, [&](int64_t b) { return b + R_; }, p_, scratch_);
  }
  /// Whether b is a rotated: interned sets compare by id when nothing rotates.
  bool same_blocks(BlockSetRef b, BlockSetRef a) const {
    if (!rank_blocks_ || R_ == 0) return b == a;
    return b.get() == rotated(a);
  }
  /// Blocks of s that wrap to the front under the rotation.
  int64_t wrapping(const BlockSet& s) const { return (s & (BlockSet::all(p_) - BlockSet::all(p_ - R_))).size(); }
  /// Rotating both sets cyclically shifts their ascending orders by their wrapping counts,
  /// so the k-th to k-th pairing survives exactly when the shifts agree modulo the size.
  bool same_pairing(const BlockSet& a, const BlockSet& b) const {
    const int64_t n = a.size();
    if (n != b.size() || n == 0) return n == b.size();
    return wrapping(a) % n == wrapping(b) % n;
  }
  std::string op_mismatch(const Op& a, const Op& b) const {
    if (a.index() != b.index()) return "is of another kind";
    if (const auto* sa = std::get_if<SendOp>(&a)) {
      const auto& sb = std::get<SendOp>(b);
      if (sb.peer != rho(sa->peer))
        return "sends to rank " + std::to_string(sb.peer) + ", not " + std::to_string(rho(sa->peer));
      if (!same_blocks(sb.blocks, sa->blocks))
        return "sends blocks " + format_blocks(sb.blocks) + ", not " + format_blocks(rotated(sa->blocks));
      return "";
    }
    if (const auto* ra = std::get_if<RecvOp>(&a)) {
      const auto& rb = std::get<RecvOp>(b);
      if (rb.peer != rho(ra->peer))
        return "receives from rank " + std::to_string(rb.peer) + ", not " + std::to_string(rho(ra->peer));
      if (!same_blocks(rb.blocks, ra->blocks))
        return "receives blocks " + format_blocks(rb.blocks) + ", not " + format_blocks(rotated(ra->blocks));
      if (rb.reduce != ra->reduce) return rb.reduce ? "reduces instead of copying" : "copies instead of reducing";
      return "";
    }
    if (const auto* la = std::get_if<LocalOp>(&a)) {
      const auto& lb = std::get<LocalOp>(b);
      if (lb.reduce != la->reduce || !same_blocks(lb.src, la->src) || !same_blocks(lb.blocks, la->blocks))
        return "is another local statement";
      if (rank_blocks_ && !same_pairing(la->src, la->blocks)) return "pairs other blocks after the rotation";
      return "";
    }
    const auto& pa = std::get<PermuteOp>(a);
    const auto& pb = std::get<PermuteOp>(b);
    if (pa.to.size() != pb.to.size()) return "is another permutation";
    for (size_t j = 0; j < pa.to.size(); ++j) {
      const int64_t from = rank_blocks_ ? rho(int64_t(j)) : int64_t(j);
      const int64_t to = rank_blocks_ ? rho(pa.to[j]) : pa.to[j];
      if (pb.to[size_t(from)] != to) return "is another permutation";
    }
    return "";
  }
  /// Rank-indexed collectives: a message carries its k-th sent block into the k-th received
  /// block (ascending order); rotating both sets keeps that pairing exactly when they have
  /// as many blocks that wrap to the front.
  std::string pairing_mismatch(int64_t x, int64_t t) const {
    const Round& rd = a_.ranks[size_t(x)][size_t(t)];
    for (size_t j = 0; j < rd.size(); ++j) {
      const auto* s = std::get_if<SendOp>(&rd[j]);
      if (!s || s->peer < 0 || s->peer >= p_) continue;
      const RecvOp* r = matching_recv(a_, x, t, rd, j, *s);
      if (r && !same_pairing(s->blocks, r->blocks))
        return "the message to rank " + std::to_string(rho(s->peer)) + " pairs other blocks after the rotation";
    }
    return "";
  }

  const Schedule& a_;
  const Schedule& b_;
  int64_t p_, R_;
  bool rank_blocks_;
  mutable std::vector<BlockSet::Range> scratch_;  ///< rotated()'s ranges
};

}  // namespace

std::string rotation_mismatch(const Schedule& base, const Schedule& inst) { return Rotation(base, inst).run(); }

std::string pairing_for_every_root(const Schedule& base) {
  const int64_t p = base.p;
  // rotation_mismatch()'s same_pairing() for every R: equal sets, or one block each.
  auto keeps = [](BlockSetRef a, BlockSetRef b) { return a == b || (a.size() == 1 && b.size() == 1); };
  for (int64_t t = 0; t < base.num_rounds; ++t)
    for (int64_t x = 0; x < p; ++x) {
      const Round& rd = base.ranks[size_t(x)][size_t(t)];
      for (size_t j = 0; j < rd.size(); ++j) {
        if (const auto* l = std::get_if<LocalOp>(&rd[j])) {
          if (!keeps(l->src, l->blocks))
            return "rank " + std::to_string(x) + ", round " + std::to_string(t) + ": a local statement from blocks " +
                   format_blocks(l->src) + " into " + format_blocks(l->blocks) + " pairs other blocks under some rotation";
          continue;
        }
        const auto* s = std::get_if<SendOp>(&rd[j]);
        if (!s || s->peer < 0 || s->peer >= p) continue;
        const RecvOp* r = matching_recv(base, x, t, rd, j, *s);
        if (r && !keeps(s->blocks, r->blocks))
          return "rank " + std::to_string(x) + ", round " + std::to_string(t) + ": the message of blocks " +
                 format_blocks(s->blocks) + " into rank " + std::to_string(s->peer) + "'s blocks " + format_blocks(r->blocks) +
                 " pairs other blocks under some rotation";
      }
    }
  return "";
}

}  // namespace bine
