#include "schedule.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <functional>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace bine {

// The size the verifier's memory at p = 2^20 is planned with (docs/verifier.md, "Scale").
static_assert(sizeof(Op) == 24, "an op is 24 bytes");

namespace {

/// Append-only storage whose elements never move and whose reads take no lock: a fixed
/// directory of kDir chunks of 2^kShift elements each. push_back() is called under the
/// owner's lock; an index it returned may then be read from any thread that obtained it
/// (under that lock, or after joining the thread that did): instantiation runs on several
/// threads for large instances (instantiate.h, set_instantiation_threads()).
template <class T, unsigned kShift, size_t kDir>
class StableArena {
 public:
  static constexpr size_t kChunk = size_t(1) << kShift;
  size_t size() const { return n_.load(std::memory_order_acquire); }
  const T& operator[](size_t i) const { return dir_[i >> kShift][i & (kChunk - 1)]; }
  /// Appends v (the caller holds the owner's lock); returns its index.
  size_t push_back(T v) {
    const size_t i = n_.load(std::memory_order_relaxed);
    BINE_ASSERT((i >> kShift) < kDir, "more than " + std::to_string(kDir * kChunk) + " interned entries");
    if ((i & (kChunk - 1)) == 0) dir_[i >> kShift] = std::make_unique<T[]>(kChunk);
    dir_[i >> kShift][i & (kChunk - 1)] = std::move(v);
    n_.store(i + 1, std::memory_order_release);
    return i;
  }

 private:
  std::array<std::unique_ptr<T[]>, kDir> dir_;
  std::atomic<size_t> n_{0};
};

/// The interned origins: entry 0 is the empty origin. Interning locks; reading does not.
struct OriginTable {
  /// Every field of both spans (a freed SourceFile's address may come back for another
  /// text, so line and column are part of the key) and the derivation.
  struct Key {
    std::array<uint64_t, 6> v;
    std::string via;
    bool operator==(const Key& o) const { return v == o.v && via == o.via; }
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      size_t h = std::hash<std::string>()(k.via);
      for (uint64_t x : k.v) h = (h ^ std::hash<uint64_t>()(x)) * 0x9E3779B97F4A7C15ull;
      return h;
    }
  };
  std::mutex mu;
  StableArena<Origin, 10, (size_t(1) << 14)> origins;  ///< up to 2^24 distinct origins
  std::unordered_map<Key, uint32_t, Hash> index;
  OriginTable() {
    origins.push_back(Origin{});
    index.emplace(key(Origin{}), 0);
  }
  static Key key(const Origin& o) {
    auto half = [](const Span& sp, std::array<uint64_t, 6>& v, size_t at) {
      v[at] = uint64_t(uintptr_t(sp.file));
      v[at + 1] = uint64_t(sp.begin) << 32 | sp.end;
      v[at + 2] = uint64_t(sp.line) << 32 | sp.col;
    };
    Key k{{}, o.via};
    half(o.span, k.v, 0);
    half(o.via_span, k.v, 3);
    return k;
  }
};

OriginTable& origin_table() {
  static OriginTable t;
  return t;
}

}  // namespace

OriginRef::OriginRef(const Origin& o) {
  OriginTable& t = origin_table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto [it, fresh] = t.index.try_emplace(OriginTable::key(o), uint32_t(t.origins.size()));
  if (fresh) t.origins.push_back(o);
  id_ = it->second;
}

const Origin& OriginRef::get() const { return origin_table().origins[id_]; }

namespace {

/// The interned block sets: entry 0 is the empty set; an open-addressing index by content
/// (ids, linear probing, load at most 1/2). Interning locks, except when the set is the one
/// this thread interned last (ops of a rank often repeat it); reading does not.
struct BlockSetTable {
  std::mutex mu;
  StableArena<BlockSet, 14, (size_t(1) << 18)> sets;  ///< ids are 32-bit
  std::vector<uint32_t> index;  ///< ids; kFree marks a free slot
  static constexpr uint32_t kFree = ~uint32_t(0);
  BlockSetTable() { sets.push_back(BlockSet()); }
  static uint64_t hash(const BlockSet& b) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ b.ranges().size();
    for (const auto& [lo, hi] : b.ranges()) {
      h = (h ^ uint64_t(lo)) * 0xBF58476D1CE4E5B9ull;
      h = (h ^ uint64_t(hi)) * 0x94D049BB133111EBull;
      h ^= h >> 31;
    }
    return h;
  }
  void grow() {
    index.assign(std::max<size_t>(64, 2 * index.size()), kFree);
    for (uint32_t id = 0; id < sets.size(); ++id) place(id, hash(sets[id]));
  }
  void place(uint32_t id, uint64_t h) {
    size_t i = size_t(h) & (index.size() - 1);
    while (index[i] != kFree) i = (i + 1) & (index.size() - 1);
    index[i] = id;
  }
  uint32_t intern(const BlockSet& b) {
    thread_local uint32_t last = 0;  ///< the set this thread interned last (an id it may read)
    if (sets[last] == b) return last;
    std::lock_guard<std::mutex> lock(mu);
    if (2 * (sets.size() + 1) > index.size()) grow();
    const uint64_t h = hash(b);
    size_t i = size_t(h) & (index.size() - 1);
    for (; index[i] != kFree; i = (i + 1) & (index.size() - 1))
      if (sets[index[i]] == b) return last = index[i];
    BINE_ASSERT(sets.size() < kFree, "more than 2^32 - 1 distinct block sets");
    const uint32_t id = uint32_t(sets.push_back(b));
    index[i] = id;
    return last = id;
  }
};

BlockSetTable& block_set_table() {
  static BlockSetTable t;
  return t;
}

}  // namespace

namespace {
std::atomic<int> g_threads{0};  ///< 0: not set (the machine's hardware threads, at most 8)
/// 0: not set (BINE_PARALLEL_MIN_P from the environment, else 256; tests lower it to run
/// small instances on several threads).
std::atomic<int64_t> g_parallel_min_p{0};
}  // namespace

void set_instance_threads(int threads, int64_t min_p) {
  g_threads.store(std::max(1, threads));
  if (min_p > 0) g_parallel_min_p.store(std::max<int64_t>(2, min_p));
}
int instance_threads() {
  if (const int t = g_threads.load(std::memory_order_relaxed)) return t;
  static const int machine = int(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8));  // reads /sys once
  return machine;
}
int64_t instance_parallel_min_p() {
  if (const int64_t m = g_parallel_min_p.load(std::memory_order_relaxed)) return m;
  int64_t m = 256;
  if (const char* e = std::getenv("BINE_PARALLEL_MIN_P"); e && *e) m = std::max<int64_t>(2, std::atoll(e));
  int64_t unset = 0;
  g_parallel_min_p.compare_exchange_strong(unset, m);
  return g_parallel_min_p.load();
}

BlockSetRef::BlockSetRef(const BlockSet& b) : id_(b.empty() ? 0 : block_set_table().intern(b)) {}

const BlockSet& BlockSetRef::get() const { return block_set_table().sets[id_]; }

size_t interned_block_sets() { return block_set_table().sets.size() - 1; }

RankRounds::RankRounds(const std::vector<RoundOps>& rounds) {
  start_.reserve(rounds.size() + 1);
  start_.push_back(0);
  for (const RoundOps& rd : rounds) {
    ops_.insert(ops_.end(), rd.begin(), rd.end());
    start_.push_back(uint32_t(ops_.size()));
  }
}

void RankRounds::add(size_t t, Op op) {
  if (store_) {  // a view: own copy first
    std::vector<Op> ops;
    std::vector<uint32_t> start{0};
    for (size_t u = 0; u < store_->rounds(); ++u) {
      const Round rd = store_->round(u, rank_);
      ops.insert(ops.end(), rd.begin(), rd.end());
      start.push_back(uint32_t(ops.size()));
    }
    store_.reset();
    ops_ = std::move(ops);
    start_ = std::move(start);
  }
  ops_.insert(ops_.begin() + start_[t + 1], std::move(op));
  for (size_t u = t + 1; u < start_.size(); ++u) ++start_[u];
}


std::string format_blocks(const BlockSet& s) {
  std::string out = "{";
  bool first = true;
  for (const auto& [lo, hi] : s.ranges()) {
    if (!first) out += ", ";
    first = false;
    out += std::to_string(lo);
    if (hi - lo > 1) out += "-" + std::to_string(hi - 1);
  }
  return out + "}";
}

namespace {

/// match_round()'s rule by direct search, for rounds where no rank posts more than
/// kShortRound ops (schedule.h): the k-th send of x to y is paired
/// with the k-th receive of y from x by scanning both ranks' few ops, linear in the round
/// instead of sorting it. Returns false, leaving m partly filled, at the first transfer
/// without a counterpart: the caller then redoes the round by sorting, which names the
/// first unmatched transfer in (source, destination) order.
bool match_direct(const Schedule& s, int64_t t, RoundMatching& m) {
  for (int64_t x = 0; x < s.p; ++x) {
    const Round rd = s.ranks[size_t(x)][size_t(t)];
    for (size_t i = 0; i < rd.size(); ++i) {
      const auto* snd = std::get_if<SendOp>(&rd[i]);
      if (!snd) continue;
      const int64_t y = snd->peer;
      size_t k = 0;  // earlier sends of x to y
      for (size_t j = 0; j < i; ++j)
        if (const auto* e = std::get_if<SendOp>(&rd[j]); e && e->peer == y) ++k;
      const Round other = s.ranks[size_t(y)][size_t(t)];
      int32_t hit = -1;
      for (size_t j = 0; j < other.size() && hit < 0; ++j)
        if (const auto* rv = std::get_if<RecvOp>(&other[j]); rv && rv->peer == x && k-- == 0) hit = int32_t(j);
      if (hit < 0) return false;
      m.mate[m.at[size_t(x)] + i] = hit;
      m.mate[m.at[size_t(y)] + size_t(hit)] = int32_t(i);
    }
  }
  for (int64_t y = 0; y < s.p; ++y) {  // a receive left over has no send
    const Round rd = s.ranks[size_t(y)][size_t(t)];
    for (size_t j = 0; j < rd.size(); ++j)
      if (std::holds_alternative<RecvOp>(rd[j]) && m.mate[m.at[size_t(y)] + j] < 0) return false;
  }
  return true;
}

}  // namespace

bool match_round(const Schedule& s, int64_t t, RoundMatching& m) {
  m.at.assign(size_t(s.p) + 1, 0);
  size_t widest = 0;
  for (int64_t r = 0; r < s.p; ++r) {
    const size_t n = s.ranks[size_t(r)][size_t(t)].size();
    widest = std::max(widest, n);
    m.at[size_t(r) + 1] = m.at[size_t(r)] + uint32_t(n);
  }
  m.mate.assign(m.at.back(), -1);
  m.complete = true;
  m.unmatched_send = false;
  m.src = m.dst = -1;
  m.k = 0;
  if (widest <= kShortRound) {
    if (match_direct(s, t, m)) return true;
    std::fill(m.mate.begin(), m.mate.end(), -1);
  }
  // Sends and receives keyed by (source, destination, posting index): sorted, equal keys
  // of a pair meet in order.
  struct Key {
    int64_t src, dst;
    size_t index;
    bool operator<(const Key& o) const {
      return src != o.src ? src < o.src : dst != o.dst ? dst < o.dst : index < o.index;
    }
  };
  std::vector<Key> sends, recvs;
  for (int64_t r = 0; r < s.p; ++r) {
    const Round& rd = s.ranks[size_t(r)][size_t(t)];
    for (size_t i = 0; i < rd.size(); ++i) {
      if (std::holds_alternative<SendOp>(rd[i])) sends.push_back({r, peer_of(rd[i]), i});
      else if (std::holds_alternative<RecvOp>(rd[i])) recvs.push_back({peer_of(rd[i]), r, i});
    }
  }
  std::sort(sends.begin(), sends.end());
  std::sort(recvs.begin(), recvs.end());
  size_t a = 0, b = 0;
  auto unmatched = [&](const Key& key, bool is_send, size_t k) {
    if (!m.complete) return;
    m.complete = false;
    m.unmatched_send = is_send;
    m.src = key.src;
    m.dst = key.dst;
    m.k = k;
  };
  while (a < sends.size() || b < recvs.size()) {
    // the next (source, destination) pair in order, from either list
    const bool take_send = b == recvs.size() || (a < sends.size() && !(recvs[b].src < sends[a].src ||
                                                                     (recvs[b].src == sends[a].src && recvs[b].dst < sends[a].dst)));
    const int64_t x = take_send ? sends[a].src : recvs[b].src, y = take_send ? sends[a].dst : recvs[b].dst;
    size_t k = 0;
    for (; a < sends.size() && sends[a].src == x && sends[a].dst == y; ++a, ++k) {
      if (b < recvs.size() && recvs[b].src == x && recvs[b].dst == y) {
        m.mate[m.at[size_t(x)] + sends[a].index] = int32_t(recvs[b].index);
        m.mate[m.at[size_t(y)] + recvs[b].index] = int32_t(sends[a].index);
        ++b;
      } else {
        unmatched(sends[a], true, k + 1);
      }
    }
    for (; b < recvs.size() && recvs[b].src == x && recvs[b].dst == y; ++b, ++k) unmatched(recvs[b], false, k + 1);
  }
  return m.complete;
}

bool message_sizes_agree(const Schedule& s, const BlockSet& sent, const BlockSet& received) {
  if (collective_has_rank_blocks(s.collective)) return sent.size() == received.size();
  if (s.scratch == 0) return sent == received;
  // The vector blocks (index mod B) named, in order, as maximal runs [lo, hi) of
  // consecutive vector blocks: equal run lists are equal sequences (O(ranges), not
  // O(blocks): a set may name 2^24 blocks).
  const int64_t B = s.blocks;
  auto logical = [&](const BlockSet& x) {
    std::vector<std::pair<int64_t, int64_t>> v;
    for (auto [lo, hi] : x.ranges())
      while (lo < hi) {
        const int64_t end = std::min(hi, (lo / B + 1) * B);  // within one buffer
        const int64_t a = lo % B, b = a + (end - lo);
        if (!v.empty() && v.back().second == a) v.back().second = b;
        else v.emplace_back(a, b);
        lo = end;
      }
    return v;
  };
  return logical(sent) == logical(received);
}

std::string message_size_rule(const Schedule& s) {
  if (collective_has_rank_blocks(s.collective)) return "rank-indexed blocks: the counts must be equal";
  if (s.scratch > 0) return "sizes agree for every element count only when both name the same vector blocks, in order";
  return "sizes agree for every element count only when the block sets are equal";
}

static std::string line_of(const Origin& o) {
  return o.span.valid() ? o.span.file->name + ":" + std::to_string(o.span.line) : std::string("?");
}

namespace {

/// ", fold two_one" etc. for the text listing's header line; empty without a fold.
std::string fold_text(const Schedule& s) {
  switch (s.fold) {
    case FoldKind::none: return "";
    case FoldKind::two_one: return ", fold two_one";
    case FoldKind::three_two: return ", fold three_two";
    case FoldKind::ring: return ", fold ring " + std::to_string(s.fold_ring);
  }
  return "";
}

}  // namespace

void write_schedule_text(const Schedule& s, std::ostream& out) {
  out << "schedule " << s.name << " implements " << collective_name(s.collective) << "\n";
  out << "p = " << s.p << ", root = " << s.root << ", blocks = " << s.blocks
      << (s.scratch > 0 ? ", scratch = " + std::to_string(s.scratch) : std::string()) << ", rounds = " << s.num_rounds
      << fold_text(s) << "\n";
  for (int64_t t = 0; t < s.num_rounds; ++t) {
    out << "\nround " << t << ": " << s.round_labels[size_t(t)];
    const int64_t seg = size_t(t) < s.round_segments.size() ? s.round_segments[size_t(t)] : 0;
    if (seg > 0) out << " [segments of " << seg << " bytes]";
    out << "\n";
    for (int64_t r = 0; r < s.p; ++r)
      for (const Op& op : s.ranks[size_t(r)][size_t(t)]) {
        out << "  rank " << r;
        if (const auto* snd = std::get_if<SendOp>(&op)) {
          out << " send " << format_blocks(snd->blocks) << " to " << snd->peer;
        } else if (const auto* lo = std::get_if<LocalOp>(&op)) {
          out << (lo->reduce ? " reduce " : " copy ") << format_blocks(lo->src) << " into " << format_blocks(lo->blocks);
        } else if (const auto* pm = std::get_if<PermuteOp>(&op)) {
          out << " permute";
          for (size_t j = 0; j < pm->to.size(); ++j) out << (j ? " " : " ") << j << "->" << pm->to[j];
        } else {
          const auto& rcv = std::get<RecvOp>(op);
          out << " recv " << format_blocks(rcv.blocks) << " from " << rcv.peer << (rcv.reduce ? " reduce" : " copy");
        }
        out << "   [" << line_of(origin_of(op)) << (origin_of(op).via.empty() ? "" : ", " + origin_of(op).via) << "]\n";
      }
  }
}

std::string schedule_text(const Schedule& s) {
  std::ostringstream out;
  write_schedule_text(s, out);
  return out.str();
}

namespace {

/// Rank r's rounds as JSON (an array of rounds, each an array of ops).
nlohmann::ordered_json rank_json(const Schedule& s, int64_t r) {
  nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
  for (const Round& rd : s.ranks[size_t(r)]) {
    nlohmann::ordered_json ops = nlohmann::ordered_json::array();
    for (const Op& op : rd) {
      nlohmann::ordered_json o;
      if (const auto* pm = std::get_if<PermuteOp>(&op)) {
        o["op"] = "permute";
        o["to"] = pm->to.get();
        if (pm->origin->span.valid()) o["line"] = pm->origin->span.line;
        ops.push_back(o);
        continue;
      }
      auto ranges_of = [](const BlockSet& b) {
        nlohmann::ordered_json v = nlohmann::ordered_json::array();
        for (const auto& [lo, hi] : b.ranges()) v.push_back({lo, hi});
        return v;
      };
      if (const auto* lo = std::get_if<LocalOp>(&op)) {
        o["op"] = lo->reduce ? "local_reduce" : "local_copy";
        o["src"] = ranges_of(lo->src);
        o["blocks"] = ranges_of(lo->blocks);
        if (lo->origin->span.valid()) {
          o["line"] = lo->origin->span.line;
          o["column"] = lo->origin->span.col;
        }
        ops.push_back(o);
        continue;
      }
      const bool is_send = std::holds_alternative<SendOp>(op);
      o["op"] = is_send ? "send" : (std::get<RecvOp>(op).reduce ? "recv_reduce" : "recv_copy");
      o["peer"] = peer_of(op);
      o["blocks"] = ranges_of(blocks_of(op));
      const Origin& org = origin_of(op);
      if (org.span.valid()) {
        o["line"] = org.span.line;
        o["column"] = org.span.col;
      }
      if (!org.via.empty()) o["via"] = org.via;
      ops.push_back(o);
    }
    rounds.push_back(ops);
  }
  return rounds;
}

}  // namespace

namespace {

/// The keys of an instance's JSON before "ranks" (docs/cli.md#schedule).
nlohmann::ordered_json schedule_json_head(const Schedule& s) {
  nlohmann::ordered_json j;
  j["schedule"] = s.name;
  j["collective"] = collective_name(s.collective);
  j["p"] = s.p;
  j["root"] = s.root;
  j["blocks"] = s.blocks;
  if (s.scratch > 0) j["scratch"] = s.scratch;
  j["fold"] = s.fold != FoldKind::none;
  if (s.fold == FoldKind::three_two) j["fold_step"] = "3-2";
  if (s.fold == FoldKind::ring) j["fold_ring"] = s.fold_ring;
  j["num_rounds"] = s.num_rounds;
  j["round_labels"] = s.round_labels;
  j["round_segments"] = s.round_segments;
  return j;
}

}  // namespace

void write_schedule_json(const Schedule& s, std::ostream& out) {
  // nlohmann's dump(1) of the whole object, written rank by rank: the document of one rank
  // at a time (an instance of 2^20 rounds held as one JSON tree took gigabytes), each of
  // its lines indented by its depth in the object (2: "ranks", then the rank's entry).
  std::string head = schedule_json_head(s).dump(1);  // "{\n ...\n}"
  head.resize(head.size() - 2);  // without "\n}"
  out << head << ",\n \"ranks\": [";
  for (int64_t r = 0; r < s.p; ++r) {
    const std::string rank = rank_json(s, r).dump(1);
    out << (r ? ",\n  " : "\n  ");
    for (char ch : rank) {
      out << ch;
      if (ch == '\n') out << "  ";
    }
  }
  out << (s.p > 0 ? "\n ]\n}\n" : "]\n}\n");
}

void write_schedule_json_line(const Schedule& s, std::ostream& out) {
  std::string head = schedule_json_head(s).dump();  // "{...}"
  head.pop_back();
  out << head << ",\"ranks\":[";
  for (int64_t r = 0; r < s.p; ++r) out << (r ? "," : "") << rank_json(s, r).dump();
  out << "]}\n";
}

std::string schedule_json(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(s, out);
  return out.str();
}

}  // namespace bine
