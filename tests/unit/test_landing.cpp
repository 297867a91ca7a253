// The static landing layout (compiler/verify/landing.h): which transfers may put straight
// into the receiver's vector. Oracle: an execution of the instance under the one-sided
// model, written here independently of landing.cpp. Each rank posts a round, its sends read
// their blocks at any later moment, a direct put lands at any moment after its read (into
// the blocks the SENDER names), a staged receive is applied when the receiver completes the
// round, the receiver completes a round once its sends have read and its receives have
// arrived, then applies the round's local operations. Events are chosen at random. Every
// value a send reads, and every rank's final buffer, must equal the synchronous-round
// semantics (what the verifier proved). A layout check_landing() proves must never
// disagree; the planted hazards (one per obligation) are reported by check_landing() with
// the right kind, and the execution finds a wrong value for each (so the oracle can fail).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>

#include "check.h"
#include "landing.h"
#include "library.h"

namespace bine::test {

namespace {

using Tokens = std::vector<uint64_t>;

uint64_t mix(uint64_t a, uint64_t b) { return (a * 0x9E3779B97F4A7C15ull) ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2)); }

std::vector<int64_t> blocks_of(const BlockSet& b) {
  std::vector<int64_t> v;
  for (const auto& [lo, hi] : b.ranges())
    for (int64_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

struct Sim {
  const Schedule& sch;
  const LandingLayout& layout;
  int64_t P, NB;  // ranks, blocks per rank (every buffer)
  // [t] (s, d, k) -> (send op, recv op), the runtime's matching rule.
  std::vector<std::map<std::tuple<int64_t, int64_t, int64_t>, std::pair<const SendOp*, const RecvOp*>>> match;
  std::map<const SendOp*, const RecvOp*> peer_recv;
  std::map<const RecvOp*, const SendOp*> peer_send;

  Sim(const Schedule& s, const LandingLayout& l) : sch(s), layout(l), P(s.p), NB((s.scratch + 1) * s.blocks) {
    match.resize(size_t(s.num_rounds));
    for (size_t t = 0; t < size_t(s.num_rounds); ++t)
      for (int64_t x = 0; x < P; ++x) {
        std::map<int64_t, int64_t> ks, kr;
        for (const Op& op : s.ranks[size_t(x)][t]) {
          if (const auto* a = std::get_if<SendOp>(&op)) match[t][{x, a->peer, ks[a->peer]++}].first = a;
          if (const auto* r = std::get_if<RecvOp>(&op)) match[t][{r->peer, x, kr[r->peer]++}].second = r;
        }
      }
    for (auto& m : match)
      for (auto& [k, v] : m) {
        peer_recv[v.first] = v.second;
        peer_send[v.second] = v.first;
      }
  }

  std::vector<Tokens> initial() const {
    std::vector<Tokens> buf(static_cast<size_t>(P), Tokens(static_cast<size_t>(NB)));
    for (int64_t x = 0; x < P; ++x)
      for (int64_t b = 0; b < NB; ++b) buf[size_t(x)][size_t(b)] = mix(uint64_t(x) + 1, uint64_t(b) + 1000);
    return buf;
  }
  static Tokens read(const Tokens& buf, const BlockSet& b) {
    Tokens v;
    for (int64_t i : blocks_of(b)) v.push_back(buf[size_t(i)]);
    return v;
  }
  static void write(Tokens& buf, const BlockSet& b, const Tokens& v, bool reduce) {
    const std::vector<int64_t> bl = blocks_of(b);
    for (size_t k = 0; k < bl.size() && k < v.size(); ++k) {
      uint64_t& dst = buf[size_t(bl[k])];
      dst = reduce ? mix(v[k], dst) : v[k];
    }
  }
  /// The round's local operations, in order, after its receives.
  void locals(Tokens& buf, Round ops) const {
    for (const Op& op : ops) {
      if (const auto* l = std::get_if<LocalOp>(&op)) write(buf, l->blocks, read(buf, l->src), l->reduce);
      if (const auto* m = std::get_if<PermuteOp>(&op)) {
        const Tokens old = buf;
        for (size_t j = 0; j < m->to->size(); ++j) buf[size_t(m->to[j])] = old[j];
      }
    }
  }

  /// Synchronous rounds: what every send reads, and the final buffers.
  std::map<const SendOp*, Tokens> ref_reads;
  std::vector<Tokens> ref_final;
  void reference() {
    std::vector<Tokens> buf = initial();
    for (size_t t = 0; t < size_t(sch.num_rounds); ++t) {
      std::map<const SendOp*, Tokens> sent;
      for (int64_t x = 0; x < P; ++x)
        for (const Op& op : sch.ranks[size_t(x)][t])
          if (const auto* a = std::get_if<SendOp>(&op)) sent[a] = ref_reads[a] = read(buf[size_t(x)], a->blocks);
      for (int64_t x = 0; x < P; ++x) {
        for (const Op& op : sch.ranks[size_t(x)][t])
          if (const auto* r = std::get_if<RecvOp>(&op)) write(buf[size_t(x)], r->blocks, sent.at(peer_send.at(r)), r->reduce);
        locals(buf[size_t(x)], sch.ranks[size_t(x)][t]);
      }
    }
    ref_final = buf;
  }

  /// One random one-sided execution; "" when it agrees with the reference.
  std::string run(std::mt19937& rng) {
    std::vector<Tokens> buf = initial();
    const size_t T = size_t(sch.num_rounds);
    std::vector<size_t> round(size_t(P), 0);
    std::vector<bool> posted(size_t(P), false);
    std::map<const SendOp*, Tokens> data;  // read, not yet landed / applied
    std::vector<const SendOp*> inflight;   // direct puts read and not landed, in read order
    std::map<const SendOp*, bool> landed;
    for (;;) {
      // Enabled events: 0 post, 1 read a send, 2 land a direct put, 3 complete a round.
      std::vector<std::tuple<int, int64_t, const SendOp*>> ev;
      for (int64_t x = 0; x < P; ++x) {
        if (round[size_t(x)] >= T) continue;
        if (!posted[size_t(x)]) {
          ev.push_back({0, x, nullptr});
          continue;
        }
        bool done = true;
        for (const Op& op : sch.ranks[size_t(x)][round[size_t(x)]]) {
          if (const auto* a = std::get_if<SendOp>(&op)) {
            if (!data.count(a) && !landed.count(a)) ev.push_back({1, x, a}), done = false;
          } else if (const auto* r = std::get_if<RecvOp>(&op)) {
            const SendOp* a = peer_send.at(r);
            if (layout.direct_recv(*r) ? !landed.count(a) : !data.count(a)) done = false;
          }
        }
        if (done) ev.push_back({3, x, nullptr});
      }
      for (const SendOp* a : inflight)  // a put in flight lands whenever, also after its sender moved on
        ev.push_back({2, int64_t(-1), a});
      if (ev.empty()) break;
      const auto [kind, x, a] = ev[std::uniform_int_distribution<size_t>(0, ev.size() - 1)(rng)];
      const size_t t = x >= 0 ? round[size_t(x)] : 0;
      if (kind == 0) {
        posted[size_t(x)] = true;
      } else if (kind == 1) {
        data[a] = read(buf[size_t(x)], a->blocks);
        if (layout.direct_send(*a)) inflight.push_back(a);
        if (data[a] != ref_reads.at(a))
          return "rank " + std::to_string(x) + ", round " + std::to_string(t) + ": a send read a value the rounds do not give";
      } else if (kind == 2) {
        write(buf[size_t(a->peer)], a->blocks, data[a], false);  // at the sender's offsets
        landed[a] = true;
        data.erase(a);
        inflight.erase(std::find(inflight.begin(), inflight.end(), a));
      } else {
        for (const Op& op : sch.ranks[size_t(x)][t])
          if (const auto* r = std::get_if<RecvOp>(&op)) {
            const SendOp* s = peer_send.at(r);
            if (!layout.direct_recv(*r)) {
              write(buf[size_t(x)], r->blocks, data.at(s), r->reduce);
              data.erase(s);
              landed[s] = true;
            }
          }
        locals(buf[size_t(x)], sch.ranks[size_t(x)][t]);
        ++round[size_t(x)];
        posted[size_t(x)] = false;
      }
    }
    for (int64_t x = 0; x < P; ++x)
      if (round[size_t(x)] < T) return "stuck at rank " + std::to_string(x);
    for (int64_t x = 0; x < P; ++x)
      if (buf[size_t(x)] != ref_final[size_t(x)]) return "rank " + std::to_string(x) + " ends with other values than the rounds give";
    return "";
  }
};

/// The first disagreement over `seeds` random executions, or "".
std::string execute(const Schedule& sch, const LandingLayout& layout, int seeds) {
  Sim sim(sch, layout);
  sim.reference();
  for (int seed = 0; seed < seeds; ++seed) {
    std::mt19937 rng(uint32_t(seed) * 7919u + 1);
    const std::string e = sim.run(rng);
    if (!e.empty()) return "seed " + std::to_string(seed) + ": " + e;
  }
  return "";
}

/// A hand-made instance: ops per rank per round, B blocks.
struct Planted {
  Schedule sch;
  Planted(int64_t p, int64_t B, int64_t rounds) {
    sch.p = p;
    sch.blocks = B;
    sch.num_rounds = rounds;
    sch.ranks.assign(size_t(p), {});
    for (auto& r : sch.ranks) r.assign(size_t(rounds));
  }
  /// A transfer s -> d of blocks `b` in round t, from its own statement `name`.
  void transfer(size_t t, int64_t s, int64_t d, const BlockSet& b, const std::string& name, bool reduce = false) {
    sch.ranks[size_t(s)].add(t, SendOp(d, b, Origin{Span{}, name + " send", Span{}}));
    sch.ranks[size_t(d)].add(t, RecvOp(s, b, reduce, Origin{Span{}, name + " recv", Span{}}));
  }
};

/// One transfer of a planted instance: round, sender, receiver, the single block, statement.
struct Xfer {
  size_t t;
  int64_t s, d, block;
  const char* name;
};
/// A planted instance of p ranks, B blocks and `rounds` rounds with these transfers.
Schedule planted(int64_t p, int64_t B, int64_t rounds, std::initializer_list<Xfer> xs) {
  Planted x(p, B, rounds);
  for (const Xfer& e : xs) x.transfer(e.t, e.s, e.d, BlockSet::block(e.block, B), e.name);
  return x.sch;
}
/// The checker proves `layout` on `sch`, and the one-sided execution agrees.
void check_safe(const Schedule& sch, const LandingLayout& layout) {
  CHECK(check_landing(sch, layout).empty());
  CHECK(execute(sch, layout, 200) == "");
}

bool has_kind(const std::vector<LandingViolation>& v, LandingViolation::Kind k) {
  for (const LandingViolation& x : v)
    if (x.kind == k) return true;
  return false;
}

}  // namespace

TEST_CASE("landing: each hazard, planted, is reported with its kind and breaks the one-sided execution") {
  const LandingLayout all;  // every origin direct
  SUBCASE("early: a put may overwrite a block its receiver still sends") {
    // Rank 2 reads block 0 in round 0; rank 1 knows nothing of rank 2.
    const Schedule x = planted(3, 2, 2, {{0, 2, 0, 0, "a"}, {1, 1, 2, 0, "b"}});
    const auto v = check_landing(x, all);
    REQUIRE(v.size() == 1);
    CHECK(v[0].kind == LandingViolation::early);
    CHECK(v[0].rank == 2);
    CHECK(v[0].round == 1);
    CHECK(v[0].peer == 1);
    CHECK(v[0].block == 0);
    CHECK(execute(x, all, 200) != "");
    // The same with the block read by the putting rank itself: it has the data, so the read is over.
    check_safe(planted(3, 2, 2, {{0, 2, 1, 0, "a"}, {1, 1, 2, 0, "b"}}), all);
  }
  SUBCASE("early: a put may land while its receiver sends the block in the same round") {
    Planted x(2, 1, 1);
    x.transfer(0, 0, 1, BlockSet::block(0, 1), "a");
    x.transfer(0, 1, 0, BlockSet::block(0, 1), "a");  // a swap
    const auto v = check_landing(x.sch, all);
    CHECK(has_kind(v, LandingViolation::early));
    CHECK(execute(x.sch, all, 200) != "");
  }
  SUBCASE("overlap: two puts in flight write one block") {
    // Rank 1 cannot know that rank 0's put landed.
    const Schedule x = planted(3, 2, 2, {{0, 0, 2, 0, "a"}, {1, 1, 2, 0, "b"}});
    const auto v = check_landing(x, all);
    REQUIRE(!v.empty());
    CHECK(v[0].kind == LandingViolation::overlap);
    CHECK(v[0].other_round == 0);
    CHECK(v[0].other_peer == 0);
    CHECK(execute(x, all, 200) != "");
    // Ordered by a message of rank 2 after the first landed: safe.
    check_safe(planted(3, 2, 3, {{0, 0, 2, 0, "a"}, {1, 2, 1, 1, "c"}, {2, 1, 2, 0, "b"}}), all);
  }
  SUBCASE("copy: a reducing receive cannot land directly") {
    Planted x(2, 1, 1);
    x.transfer(0, 0, 1, BlockSet::block(0, 1), "a", /*reduce=*/true);
    const auto v = check_landing(x.sch, all);
    REQUIRE(v.size() == 1);
    CHECK(v[0].kind == LandingViolation::copy);
    CHECK(execute(x.sch, all, 50) != "");
    LandingLayout staged;
    staged.staged_sends.insert(v[0].send);
    staged.staged_recvs.insert(v[0].recv);
    CHECK(check_landing(x.sch, staged).empty());
    CHECK(execute(x.sch, staged, 50) == "");
  }
  SUBCASE("notices: sender and receiver disagree on a direct put") {
    Planted x(2, 1, 1);
    x.transfer(0, 0, 1, BlockSet::block(0, 1), "a");
    LandingLayout half;
    half.staged_recvs.insert(&std::get<RecvOp>(*x.sch.ranks[1][0].begin()).origin.get());
    const auto v = check_landing(x.sch, half);
    REQUIRE(v.size() == 1);
    CHECK(v[0].kind == LandingViolation::notices);
    CHECK(v[0].message.find("counts 0 direct put notice(s), its senders address 1") != std::string::npos);
  }
}

TEST_CASE("landing: the library's derived layouts never disagree with the one-sided execution (p = 1..9)") {
  CheckOptions opt;
  opt.p_lo = 1;
  opt.p_hi = 9;
  int64_t direct = 0, executed = 0, broken = 0;
  for (const auto& s : library().schedules) {
    DiagnosticSink d;
    const LandingReport rep = landing_schedule(library(), s, opt, d);
    REQUIRE(rep.analysed);
    direct += rep.count.direct;
    for (int64_t p = 2; p <= 9; ++p)
      for (bool commutative : commutative_values(s)) {
        Schedule sch;
        DiagnosticSink d2;
        if (instantiate(library(), s, {p, collective_is_rooted(s.collective) ? p / 2 : 0, commutative}, sch, d2) != InstStatus::ok)
          continue;
        INFO(s.name << " p=" << p << " commutative=" << commutative);
        CHECK(check_landing(sch, rep.layout).empty());  // rotated roots too
        CHECK(execute(sch, rep.layout, 40) == "");
        ++executed;
        // Every origin direct: where that breaks the execution, check_landing() must object.
        if (execute(sch, LandingLayout{}, 12) != "") {
          ++broken;
          CHECK(!check_landing(sch, LandingLayout{}).empty());
        }
      }
  }
  MESSAGE("landing: " << direct << " direct transfers in the library's layouts (p = 1..9), " << executed
                      << " instances executed 40 times each; with every transfer direct " << broken
                      << " of them compute wrong values");
  CHECK(broken > 100);
  CHECK(direct > 0);
  CHECK(executed > 300);
}

}  // namespace bine::test
