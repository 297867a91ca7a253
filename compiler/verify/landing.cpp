// Static landing layout proof (landing.h; docs/utofu.md, "Static landing layout").
#include "landing.h"

#include <algorithm>
#include <stdexcept>

namespace bine {

std::string origin_words(const Origin* o) {
  if (!o || !o->span.valid()) return "";
  std::string s = "line " + std::to_string(o->span.line);
  if (!o->via.empty()) s += ", " + o->via;
  return s;
}

namespace {

/// One matched transfer of a round: the k-th send from `s` to `d` and the k-th receive of
/// `d` from `s` (the runtime's matching rule, which the verifier proved for the instance).
struct Pair {
  int64_t s, d;
  const SendOp* send;
  const RecvOp* recv;
};

std::string with_line(const std::string& what, const Origin* o) {
  const std::string w = origin_words(o);
  return w.empty() ? what : what + " (" + w + ")";
}

template <class F>
void for_each_block(const BlockSet& b, int64_t B, F&& f) {
  for (const auto& [lo, hi] : b.ranges())
    for (int64_t i = lo; i < hi && i < B; ++i) f(i);
}

/// The matched pairs of round t (unmatched operations are ignored: the verifier rejects
/// instances that have them).
std::vector<Pair> pairs_of(const Schedule& sch, size_t t) {
  // Sorted by (source, destination), stably: each pair's operations keep their posting
  // order, so the k-th send of a group meets the k-th receive (no per-peer counting).
  using Key = std::pair<int64_t, int64_t>;  // (s, d)
  std::vector<std::pair<Key, const SendOp*>> sends;
  std::vector<std::pair<Key, const RecvOp*>> recvs;
  for (int64_t x = 0; x < sch.p; ++x)
    for (const Op& op : sch.ranks[size_t(x)][t]) {
      if (const auto* s = std::get_if<SendOp>(&op)) sends.push_back({Key{x, s->peer}, s});
      else if (const auto* r = std::get_if<RecvOp>(&op)) recvs.push_back({Key{r->peer, x}, r});
    }
  auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::stable_sort(sends.begin(), sends.end(), by_key);
  std::stable_sort(recvs.begin(), recvs.end(), by_key);
  std::vector<Pair> out;
  size_t i = 0, j = 0;
  while (i < sends.size() && j < recvs.size()) {
    if (sends[i].first < recvs[j].first) ++i;
    else if (recvs[j].first < sends[i].first) ++j;
    else {
      const Key k = sends[i].first;
      for (; i < sends.size() && j < recvs.size() && sends[i].first == k && recvs[j].first == k; ++i, ++j)
        out.push_back({k.first, k.second, sends[i].second, recvs[j].second});
      while (i < sends.size() && sends[i].first == k) ++i;  // unmatched (the verifier rejects those)
      while (j < recvs.size() && recvs[j].first == k) ++j;
    }
  }
  return out;
}

/// A direct receive that the `early` obligation must order after an earlier operation.
struct Query {
  size_t t;            ///< round of the receive (the sender posts the put in it)
  int64_t s, d;        ///< sender, receiver
  int64_t touched;     ///< the receiver's last round that touched a block of the receive
  int64_t block;       ///< one such block
  const Pair* pair;
  int64_t touch_peer;  ///< the peer of that operation (-1: a local operation)
  const Origin* touch_origin;
  /// The receiver's operations of round `touched` on those blocks are all sends: their
  /// receivers (`readers`) finishing that round also shows the data was read.
  bool all_sends;
  std::vector<int64_t> readers;
  /// An earlier direct put of round `touched` (from `touch_peer`) wrote `block` too: its
  /// landing (the receiver finishing that round) must happen before this put is posted.
  bool overlap = false;
};

LandingViolation violation(LandingViolation::Kind kind, int64_t rank, int64_t round, int64_t peer, int64_t block = -1,
                           int64_t other_round = -1, int64_t other_peer = -1) {
  LandingViolation v;
  v.kind = kind;
  v.rank = rank;
  v.round = round;
  v.peer = peer;
  v.block = block;
  v.other_round = other_round;
  v.other_peer = other_peer;
  return v;
}

}  // namespace

LandingCount count_landing(const Schedule& sch, const LandingLayout& layout) {
  LandingCount c;
  for (size_t t = 0; t < size_t(sch.num_rounds); ++t)
    for (const Pair& pr : pairs_of(sch, t)) {
      ++c.transfers;
      if (layout.direct_send(*pr.send) && layout.direct_recv(*pr.recv)) ++c.direct;
    }
  return c;
}

std::vector<LandingViolation> check_landing(const Schedule& sch, const LandingLayout& layout, size_t max) {
  if (sch.p > kLandingMaxRanks)
    throw std::length_error("landing layout: p = " + std::to_string(sch.p) + " is above " + std::to_string(kLandingMaxRanks));
  std::vector<LandingViolation> out;
  const int64_t P = sch.p, B = sch.blocks;
  const size_t T = size_t(sch.num_rounds);
  auto add = [&](LandingViolation v) {
    if (out.size() < max) out.push_back(std::move(v));
  };
  auto where = [](int64_t rank, size_t t) { return "rank " + std::to_string(rank) + ", round " + std::to_string(t) + ": "; };

  // notices and copy, per round; the direct receives of each rank, in round order.
  std::vector<std::vector<Pair>> rounds(T);
  std::vector<std::vector<std::pair<size_t, const Pair*>>> direct;  // [d] (round, pair)
  direct.resize(size_t(P));
  for (size_t t = 0; t < T; ++t) {
    rounds[t] = pairs_of(sch, t);
    // Per receiver: direct puts addressed to it (senders' view), direct receives it posts.
    std::vector<int64_t> addressed(size_t(P), 0), expected(size_t(P), 0);
    for (const Pair& pr : rounds[t]) {
      const bool ds = layout.direct_send(*pr.send), dr = layout.direct_recv(*pr.recv);
      addressed[size_t(pr.d)] += ds;
      expected[size_t(pr.d)] += dr;
    }
    for (const Pair& pr : rounds[t]) {
      const bool ds = layout.direct_send(*pr.send), dr = layout.direct_recv(*pr.recv);
      const Origin* so = &pr.send->origin.get();
      const Origin* ro = &pr.recv->origin.get();
      if (ds != dr) {
        LandingViolation v = violation(LandingViolation::notices, pr.d, int64_t(t), pr.s);
        v.send = so;
        v.recv = ro;
        v.message = where(pr.d, t) + "rank " + std::to_string(pr.d) + " counts " + std::to_string(expected[size_t(pr.d)]) +
                    " direct put notice(s), its senders address " + std::to_string(addressed[size_t(pr.d)]) + " to it: " +
                    with_line("rank " + std::to_string(pr.s) + "'s send", so) + (ds ? " lands directly, " : " is staged, ") +
                    with_line("the receive", ro) + (dr ? " expects it directly" : " expects it staged");
        add(v);
        continue;
      }
      if (!ds) continue;
      std::string why;
      if (pr.recv->reduce) why = "the receive reduces (a put would overwrite the rank's own data)";
      else if (!pr.recv->blocks->empty() && pr.recv->blocks->ranges().back().second > B)
        why = "the receive writes a scratch buffer (the sender knows only the vector's offsets)";
      else if (pr.recv->blocks != pr.send->blocks)
        why = "the receive writes other blocks than the sender sends (the sender computes the offsets from its own)";
      if (!why.empty()) {
        LandingViolation v = violation(LandingViolation::copy, pr.d, int64_t(t), pr.s);
        v.send = so;
        v.recv = ro;
        v.message = where(pr.d, t) + with_line("the receive from rank " + std::to_string(pr.s), ro) +
                    " cannot land directly: " + why;
        add(v);
        continue;
      }
      direct[size_t(pr.d)].push_back({t, &pr});
    }
  }

  // overlap and early, rank by rank; `early` queries that need happens-before are
  // answered below, round by round.
  std::vector<Query> queries;
  std::vector<int32_t> writer(size_t(std::max<int64_t>(B, 0)), -1);      // [block] index into direct[d]
  std::vector<int64_t> last(size_t(std::max<int64_t>(B, 0)), -1);       // [block] last round that touched it
  std::vector<int64_t> last_peer(size_t(std::max<int64_t>(B, 0)), -1);
  std::vector<const Origin*> last_origin(size_t(std::max<int64_t>(B, 0)), nullptr);
  for (int64_t d = 0; d < P; ++d) {
    const auto& mine = direct[size_t(d)];
    for (size_t i = 0; i < mine.size(); ++i) {
      const size_t t = mine[i].first;  // not a structured binding: the lambda below uses it
      const Pair* pr = mine[i].second;
      bool reported = false;
      for_each_block(pr->recv->blocks, B, [&](int64_t b) {
        const int32_t w = writer[size_t(b)];
        writer[size_t(b)] = int32_t(i);
        if (w < 0 || reported) return;
        reported = true;
        const auto& [t0, p0] = mine[size_t(w)];
        if (t0 < t) {  // in flight together unless the first landed before the second is posted
          queries.push_back({t, pr->s, d, int64_t(t0), b, pr, p0->s, &p0->send->origin.get(), false, {}, true});
          return;
        }
        LandingViolation v = violation(LandingViolation::overlap, d, int64_t(t), pr->s, b, int64_t(t0), p0->s);
        v.send = &pr->send->origin.get();
        v.recv = &pr->recv->origin.get();
        v.message = where(d, t) + "two direct puts of the same round write block " + std::to_string(b) + " of rank " +
                    std::to_string(d) + ": " + with_line("rank " + std::to_string(p0->s) + "'s", &p0->send->origin.get()) +
                    " and " + with_line("rank " + std::to_string(pr->s) + "'s", v.send);
        add(v);
      });
    }
    for (const auto& [t, pr] : mine) for_each_block(pr->recv->blocks, B, [&](int64_t b) { writer[size_t(b)] = -1; });

    // Sweep the rank's rounds: a direct receive of round t against the rank's operations
    // of earlier rounds (a query) and of round t (always a hazard).
    size_t next = 0;
    for (size_t t = 0; t < T; ++t) {
      const Round ops = sch.ranks[size_t(d)][t];
      for (; next < mine.size() && mine[next].first == t; ++next) {
        const Pair* pr = mine[next].second;
        const BlockSet& want = pr->recv->blocks;
        // Same round: the rank's sends read, its other receives write, while the put may land.
        bool clash = false;
        for (const Op& op : ops) {
          const BlockSet* b = nullptr;
          int64_t peer = -1;
          const Origin* o = nullptr;
          if (const auto* s = std::get_if<SendOp>(&op)) b = &s->blocks.get(), peer = s->peer, o = &s->origin.get();
          else if (const auto* r = std::get_if<RecvOp>(&op); r && r != pr->recv) b = &r->blocks.get(), peer = r->peer, o = &r->origin.get();
          if (!b || clash) continue;
          const BlockSet common = *b & want;
          if (common.empty() || common.ranges().front().first >= B) continue;
          clash = true;
          const int64_t blk = common.ranges().front().first;
          LandingViolation v = violation(LandingViolation::early, d, int64_t(t), pr->s, blk, int64_t(t), peer);
          v.send = &pr->send->origin.get();
          v.recv = &pr->recv->origin.get();
          v.message = where(d, t) + with_line("rank " + std::to_string(pr->s) + "'s direct put", v.send) + " of block " +
                      std::to_string(blk) + " may land while rank " + std::to_string(d) + " " +
                      with_line(std::string(std::holds_alternative<SendOp>(op) ? "sends it to" : "receives it from") +
                                    " rank " + std::to_string(peer) + " in the same round",
                                o);
          add(v);
        }
        if (clash) continue;
        int64_t touched = -1, blk = -1;
        for_each_block(want, B, [&](int64_t b) {
          if (last[size_t(b)] > touched) touched = last[size_t(b)], blk = b;
        });
        if (touched >= 0) {
          Query k{t, pr->s, d, touched, blk, pr, last_peer[size_t(blk)], last_origin[size_t(blk)], true, {}};
          for (const Op& op : sch.ranks[size_t(d)][size_t(touched)]) {
            const auto* snd = std::get_if<SendOp>(&op);
            const BlockSet* b = snd ? &snd->blocks.get() : nullptr;
            if (const auto* r = std::get_if<RecvOp>(&op)) b = &r->blocks.get();
            else if (const auto* l = std::get_if<LocalOp>(&op)) {
              if (!(l->src.get() & want).empty()) k.all_sends = false;
              b = &l->blocks.get();
            } else if (const auto* m = std::get_if<PermuteOp>(&op)) b = &m->blocks.get();
            if (!b || (*b & want).empty()) continue;
            if (snd) k.readers.push_back(snd->peer);
            else k.all_sends = false;
          }
          queries.push_back(std::move(k));
        }
      }
      // Every block the rank's operations of round t touch.
      auto touch = [&](const BlockSet& b, int64_t peer, const Origin* o) {
        for_each_block(b, B, [&](int64_t i) {
          last[size_t(i)] = int64_t(t);
          last_peer[size_t(i)] = peer;
          last_origin[size_t(i)] = o;
        });
      };
      for (const Op& op : ops) {
        if (const auto* s = std::get_if<SendOp>(&op)) touch(s->blocks, s->peer, &s->origin.get());
        else if (const auto* r = std::get_if<RecvOp>(&op)) touch(r->blocks, r->peer, &r->origin.get());
        else if (const auto* l = std::get_if<LocalOp>(&op)) {
          touch(l->src, -1, &l->origin.get());
          touch(l->blocks, -1, &l->origin.get());
        } else if (const auto* m = std::get_if<PermuteOp>(&op)) touch(m->blocks, -1, &m->origin.get());
      }
    }
    std::fill(last.begin(), last.end(), -1);
  }
  if (queries.empty()) return out;

  // Vector clocks: clock[y * P + x] = the last round of rank x whose end happens before
  // rank y posts the current round (-1: none). Round u -> u + 1: y has finished round u,
  // and each message x' -> y of round u was posted after x' finished what it knew then.
  std::sort(queries.begin(), queries.end(), [](const Query& a, const Query& b) { return a.t < b.t; });
  std::vector<int32_t> clock(size_t(P * P), -1), nextc;
  size_t q = 0;
  for (size_t u = 0; u < T && q < queries.size(); ++u) {
    for (; q < queries.size() && queries[q].t == u; ++q) {
      const Query& k = queries[q];
      // Done with the blocks: the receiver finished that round, or every operation of it on
      // them was a send whose receiver finished the round (so the data had been read).
      if (clock[size_t(k.s * P + k.d)] >= k.touched) continue;
      if (k.all_sends && std::all_of(k.readers.begin(), k.readers.end(),
                                     [&](int64_t x) { return clock[size_t(k.s * P + x)] >= k.touched; }))
        continue;
      LandingViolation v = violation(k.overlap ? LandingViolation::overlap : LandingViolation::early, k.d, int64_t(u), k.s,
                                     k.block, k.touched, k.touch_peer);
      v.send = &k.pair->send->origin.get();
      v.recv = &k.pair->recv->origin.get();
      if (k.overlap) {
        v.message = where(k.d, u) + "two direct puts to rank " + std::to_string(k.d) + " may be in flight together and both write block " +
                    std::to_string(k.block) + ": " + with_line("rank " + std::to_string(k.touch_peer) + "'s of round " +
                    std::to_string(k.touched), k.touch_origin) + " and " + with_line("rank " + std::to_string(k.s) + "'s", v.send) +
                    "; no chain of messages orders the first one's arrival (rank " + std::to_string(k.d) + " finishing round " +
                    std::to_string(k.touched) + ") before rank " + std::to_string(k.s) + " posts round " + std::to_string(u);
        add(v);
        continue;
      }
      const std::string what = k.touch_peer < 0 ? "uses it in a local operation"
                               : std::string("sends or receives it (peer rank ") + std::to_string(k.touch_peer) + ")";
      v.message = where(k.d, u) + with_line("rank " + std::to_string(k.s) + "'s direct put", v.send) + " of block " +
                  std::to_string(k.block) + " may overwrite it before rank " + std::to_string(k.d) + " is done with it: rank " +
                  std::to_string(k.d) + " " + with_line(what + " in round " + std::to_string(k.touched), k.touch_origin) +
                  ", and no chain of messages orders the end of that round before rank " + std::to_string(k.s) +
                  " posts round " + std::to_string(u);
      add(v);
    }
    if (q >= queries.size()) break;
    nextc = clock;
    for (int64_t y = 0; y < P; ++y) nextc[size_t(y * P + y)] = int32_t(u);
    for (const Pair& pr : rounds[u]) {
      int32_t* dst = &nextc[size_t(pr.d * P)];
      const int32_t* src = &clock[size_t(pr.s * P)];
      for (int64_t x = 0; x < P; ++x) dst[x] = std::max(dst[x], src[x]);
    }
    clock.swap(nextc);
  }
  return out;
}

}  // namespace bine
