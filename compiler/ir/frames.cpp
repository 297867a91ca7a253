#include "frames.h"

#include <algorithm>

namespace bine {

namespace {

/// The packets one node holds: N bits.
struct Bits {
  std::vector<uint64_t> w;
  bool has(int64_t k) const { return (w[size_t(k >> 6)] >> (k & 63)) & 1; }
  void set(int64_t k) { w[size_t(k >> 6)] |= uint64_t(1) << (k & 63); }
};

/// The packet `rule` picks for arc u>v in the state `have`, or -1 when v lacks nothing u has.
int64_t pick(const FramesData& f, const std::vector<std::vector<int64_t>>& nbrs, const std::vector<Bits>& have, int64_t u,
             int64_t v, int64_t tag) {
  const std::vector<uint64_t>& a = have[size_t(u)].w;
  const std::vector<uint64_t>& b = have[size_t(v)].w;
  (void)tag;  // the stream rule is picked in build_frames_table (it keeps per-stream cursors)
  int64_t best = -1, best_score = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t m = a[i] & ~b[i];
    while (m) {
      const int64_t k = int64_t(i) * 64 + __builtin_ctzll(m);
      m &= m - 1;
      if (f.rule == PacketRule::lowest) return k;
      // Algorithm 1 (forward potential): the neighbours of v that lack k; ties: lowest k.
      int64_t score = 0;
      for (int64_t w : nbrs[size_t(v)]) score += !have[size_t(w)].has(k);
      if (score > best_score) best = k, best_score = score;
    }
  }
  return best;
}

}  // namespace

const Stmt* find_frames(const Block& b) {
  for (const StmtPtr& s : b) {
    if (s->kind == StmtKind::frames) return s.get();
    if (const Stmt* in = find_frames(s->body)) return in;
  }
  return nullptr;
}

std::string frames_condition(const FramesData& f) {
  return "p == " + std::to_string(f.nodes) + " (the node count of the frames' topology)";
}

bool build_frames_table(const FramesData& f, int64_t packets, FramesTableData& out, std::string& err, FramesStall* stall) {
  const int64_t P = f.nodes, F = int64_t(f.frames.size()), N = packets;
  out = FramesTableData{};
  out.nodes = P;
  out.frames = F;
  out.packets = N;
  if (P < 1 || F < 1 || N < 1) {
    err = "a frames table needs nodes, frames and packets (got " + std::to_string(P) + ", " + std::to_string(F) + ", " +
          std::to_string(N) + ")";
    return false;
  }
  std::vector<std::vector<int64_t>> nbrs(static_cast<size_t>(P));
  for (auto [u, v] : f.links) nbrs[size_t(u)].push_back(v), nbrs[size_t(v)].push_back(u);
  std::vector<Bits> have(static_cast<size_t>(P));
  const size_t words = size_t((N + 63) / 64);
  for (Bits& b : have) b.w.assign(words, 0);
  for (int64_t k = 0; k < N; ++k) have[size_t(f.root)].set(k);
  std::vector<int64_t> count(static_cast<size_t>(P), 0);  // packets held
  count[size_t(f.root)] = N;
  // The stream rule (`packet stream K`): arc u>v:J carries the lowest q = J (mod K) that u
  // holds and v lacks. held[x K + J]: packets of stream J node x holds; gap[x K + J]: the
  // first of them x lacks. A node holding exactly a prefix of stream J (held = gap's index)
  // has nothing beyond it, so down an arborescence a pick is O(1); otherwise a scan.
  const int64_t K = f.rule == PacketRule::stream ? f.streams : 0;
  std::vector<int64_t> held(size_t(P * K), 0), gap(size_t(P * K), 0);
  for (int64_t x = 0; x < P; ++x)
    for (int64_t j = 0; j < K; ++j) gap[size_t(x * K + j)] = j;
  for (int64_t j = 0; j < K; ++j) {
    held[size_t(f.root * K + j)] = j < N ? (N - 1 - j) / K + 1 : 0;
    gap[size_t(f.root * K + j)] = j + K * held[size_t(f.root * K + j)];
  }
  auto pick_stream = [&](int64_t u, int64_t v, int64_t j) -> int64_t {
    const size_t uj = size_t(u * K + j), vj = size_t(v * K + j);
    if (held[uj] == (gap[uj] - j) / K && gap[uj] <= gap[vj]) return -1;  // u: a prefix v already has
    for (int64_t k = gap[vj]; k < N; k += K)
      if (have[size_t(u)].has(k) && !have[size_t(v)].has(k)) return k;
    return -1;
  };
  auto gain = [&](int64_t v, int64_t k) {  // v receives packet k: the stream cursors follow
    if (!K) return;
    const size_t vj = size_t(v * K + k % K);
    ++held[vj];
    while (gap[vj] < N && have[size_t(v)].has(gap[vj])) gap[vj] += K;
  };
  int64_t complete = 1;
  // [step][arc of the step's frame] the packet it carried, or -1.
  std::vector<std::vector<int32_t>> carried;
  std::vector<int64_t> chosen;
  int64_t last_move = -1;
  int64_t t = 0;
  for (; complete < P; ++t) {
    if (t >= kMaxFrameSteps || t - last_move > F) {
      int64_t x = 0;
      while (count[size_t(x)] == N) ++x;
      int64_t k = 0;
      while (have[size_t(x)].has(k)) ++k;
      if (stall) *stall = FramesStall{t, x, k};
      err = t >= kMaxFrameSteps ? "the frames need more than " + std::to_string(kMaxFrameSteps) + " steps"
                                : "the frames cannot finish: no packet moves in the " + std::to_string(F) +
                                      " steps before step " + std::to_string(t);
      err += " (node " + std::to_string(x) + " lacks packet " + std::to_string(k) + " of " + std::to_string(N) + ")";
      return false;
    }
    const std::vector<std::pair<int64_t, int64_t>>& fr = f.frames[size_t(t % F)];
    // Every arc's packet from the state at the start of the step (a frame is a matching,
    // so no node is in two arcs; Algorithm 1 reads the receivers' neighbours).
    chosen.assign(fr.size(), -1);
    const std::vector<int64_t>& tags = f.arc_streams[size_t(t % F)];
    for (size_t i = 0; i < fr.size(); ++i)
      chosen[i] = f.rule == PacketRule::stream ? pick_stream(fr[i].first, fr[i].second, tags[i])
                                               : pick(f, nbrs, have, fr[i].first, fr[i].second, tags[i]);
    std::vector<int32_t>& row = carried.emplace_back(fr.size(), -1);
    for (size_t i = 0; i < fr.size(); ++i) {
      const int64_t k = chosen[i];
      if (k < 0) continue;
      const int64_t v = fr[i].second;
      have[size_t(v)].set(k);
      gain(v, k);
      if (++count[size_t(v)] == N) ++complete;
      row[i] = int32_t(k);
      ++out.transfers;
      last_move = t;
    }
  }
  out.steps = t;
  // Compression: per node and frame slot, the carried packets over the cycles as maximal
  // arithmetic runs of consecutive cycles.
  out.slot.assign(size_t(P * F), -1);
  const int64_t cycles = (out.steps + F - 1) / F;
  // [s * P + x] the arc of frame s that node x is in (a frame is a matching), or -1:
  // one pass over the frames instead of a scan per node and slot.
  std::vector<int32_t> arc_of(static_cast<size_t>(F * P), -1);
  for (int64_t s = 0; s < F; ++s)
    for (size_t i = 0; i < f.frames[size_t(s)].size(); ++i) {
      const auto [u, v] = f.frames[size_t(s)][i];
      arc_of[size_t(s * P + u)] = arc_of[size_t(s * P + v)] = int32_t(i);
    }
  for (int64_t x = 0; x < P; ++x) {
    for (int64_t s = 0; s < F; ++s) {
      const std::vector<std::pair<int64_t, int64_t>>& fr = f.frames[size_t(s)];
      if (arc_of[size_t(s * P + x)] < 0) continue;
      const size_t arc = size_t(arc_of[size_t(s * P + x)]);
      const bool send = fr[arc].first == x;
      const int32_t e = int32_t(out.entry.size() / 4);
      out.slot[size_t(x * F + s)] = e;
      out.entry.insert(out.entry.end(), {int32_t(send ? fr[arc].second : fr[arc].first), send ? 1 : 0,
                                         int32_t(out.run.size() / 4), 0});
      for (int64_t c = 0; c < cycles; ++c) {
        const int64_t step = c * F + s;
        if (step >= out.steps) break;
        const int32_t k = carried[size_t(step)][arc];
        if (k < 0) continue;
        const size_t nr = out.run.size();
        if (nr > size_t(out.entry[size_t(4 * e + 2)]) * 4) {
          int32_t* u = &out.run[nr - 4];
          const int64_t next = int64_t(u[0]) + u[1];
          if (next == c && (u[1] == 1 || int64_t(u[2]) + int64_t(u[1]) * u[3] == k)) {
            if (u[1] == 1) u[3] = k - u[2];
            ++u[1];
            continue;
          }
        }
        out.run.insert(out.run.end(), {int32_t(c), 1, k, 0});
      }
      out.entry[size_t(4 * e + 3)] = int32_t(out.run.size() / 4);
    }
  }
  return true;
}

}  // namespace bine
