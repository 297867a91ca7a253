// The verifier's data flow on classes of blocks (verify.cpp init_classes(), docs/verifier.md
// "Memory") against one state per block (VerifyOptions::block_classes = false, the
// reference): the same result, properties, counterexample and diagnostics on every
// instance of the library's vector collectives, of every mutation of tests/mutations (most
// of them fail, in every way the verifier reports), and of random vector schedules with
// scratch buffers whose block sets cut the vector into a few runs, matched or not. Then the
// point of it: an allreduce on 2^24 blocks costs what it costs on one. And the memory
// account (resource.h): it refuses what exceeds the budget with a ResourceLimit.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <random>

#include "check.h"
#include "library.h"
#include "resource.h"
#include "verify.h"

namespace bine::test {

namespace {

std::string all_text(const DiagnosticSink& d) {
  std::string s;
  for (const Diagnostic& x : d.all()) s += render_text(x);
  return s;
}

/// Verifies `s` both ways and requires the same outcome; returns whether it verified and,
/// in `kind`, the counterexample's kind.
bool same_both_ways(const Schedule& s, Counterexample::Kind* kind = nullptr) {
  DiagnosticSink a, b;
  VerifyOptions classes, blocks;
  blocks.block_classes = false;
  const VerifyResult x = verify(s, a, classes);
  const VerifyResult y = verify(s, b, blocks);
  CAPTURE(s.name);
  CAPTURE(s.p);
  CAPTURE(s.root);
  CHECK(x.ok == y.ok);
  CHECK(x.order_preserving == y.order_preserving);
  CHECK(x.same_bracketing == y.same_bracketing);
  CHECK(x.keeps_blocks == y.keeps_blocks);
  CHECK(x.messages == y.messages);
  CHECK(x.blocks_moved == y.blocks_moved);
  const Counterexample &c = x.counterexample, &e = y.counterexample;
  CHECK(c.kind == e.kind);
  CHECK(c.rank == e.rank);
  CHECK(c.round == e.round);
  CHECK(c.block == e.block);
  CHECK(c.peer == e.peer);
  CHECK(c.missing_ranks == e.missing_ranks);
  CHECK(c.doubled_ranks == e.doubled_ranks);
  CHECK(c.write_round == e.write_round);
  CHECK(c.message == e.message);
  CHECK(all_text(a) == all_text(b));
  if (kind) *kind = c.kind;
  return x.ok;
}

bool vector_collective(Collective c) { return !collective_has_rank_blocks(c); }

}  // namespace

TEST_CASE("[classes] library and mutations: block classes give what one state per block gives") {
  int checked = 0;
  for (const ScheduleDecl& s : library().schedules) {
    if (!vector_collective(s.collective)) continue;
    for (int64_t p : {1, 2, 3, 5, 8, 12})
      for (int64_t root : {int64_t(0), p / 2}) {
        Schedule sch;
        DiagnosticSink d;
        if (instantiate(library(), s, {p, root, default_commutative(s)}, sch, d) != InstStatus::ok) continue;
        CHECK(same_both_ways(sch));
        ++checked;
      }
  }
  int failing = 0;
  for (const auto& f : std::filesystem::directory_iterator(BINE_SOURCE_DIR "/tests/mutations")) {
    if (f.path().extension() != ".bine") continue;
    Program prog;
    DiagnosticSink d;
    if (!load_program({f.path().string()}, prog, d)) continue;
    for (const ScheduleDecl& s : prog.schedules) {
      if (!vector_collective(s.collective)) continue;
      for (int64_t p = 1; p <= 12; ++p) {
        Schedule sch;
        DiagnosticSink di;
        if (instantiate(prog, s, {p, collective_is_rooted(s.collective) ? p - 1 : 0, default_commutative(s)}, sch, di) !=
            InstStatus::ok)
          continue;
        failing += !same_both_ways(sch);
        ++checked;
      }
    }
  }
  MESSAGE(checked << " instances compared, " << failing << " of them failing");
  CHECK(checked > 1000);
  CHECK(failing > 100);
}

TEST_CASE("[classes] random vector schedules with scratch buffers: the same both ways") {
  std::mt19937_64 rng(47);
  int ok = 0, failed = 0, compressed = 0;
  std::map<Counterexample::Kind, int> kinds;
  for (int trial = 0; trial < 1500; ++trial) {
    Schedule s;
    s.name = "random";
    s.collective = trial % 3 == 0 ? Collective::bcast : trial % 3 == 1 ? Collective::allreduce : Collective::scan;
    s.p = trial % 2 ? 2 : 2 + int64_t(rng() % 5);
    s.blocks = 2 + int64_t(rng() % 40);
    s.scratch = int64_t(rng() % 2);
    s.num_rounds = 1 + int64_t(rng() % 3);
    const int64_t B = s.blocks, S = B * (s.scratch + 1);
    // Cut points: a few, so that sets are unions of a few runs of blocks.
    std::vector<int64_t> cuts{0, B};
    for (int k = int(rng() % 4); k > 0; --k) cuts.push_back(int64_t(rng() % uint64_t(B)));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    compressed += int64_t(cuts.size()) - 1 < B;
    auto runs = [&](int64_t buffer) {  // a union of runs in one buffer
      BlockSet out;
      for (size_t i = 0; i + 1 < cuts.size(); ++i)
        if (rng() % 2) out = out | BlockSet::range(buffer * B + cuts[i], buffer * B + cuts[i + 1], S);
      if (out.empty()) out = BlockSet::range(buffer * B + cuts[0], buffer * B + cuts[1], S);
      return out;
    };
    std::vector<std::vector<RoundOps>> built(size_t(s.p), std::vector<RoundOps>(size_t(s.num_rounds)));
    for (int64_t t = 0; t < s.num_rounds; ++t) {
      // A random pairing of the ranks: each pair exchanges one set (matched, equal sizes),
      // sometimes from a scratch buffer into the vector; now and then a wrong set.
      std::vector<int64_t> order(size_t(s.p));
      for (int64_t x = 0; x < s.p; ++x) order[size_t(x)] = x;
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t i = 0; i + 1 < order.size(); i += 2) {
        const int64_t a = order[i], b = order[i + 1];
        const BlockSet in = rng() % 3 == 0 ? BlockSet::range(0, B, S) : runs(0);
        const bool from_scratch = s.scratch > 0 && rng() % 3 == 0;
        BlockSet out = in;
        if (from_scratch) {
          BlockSet shifted;
          for (const auto& [lo, hi] : in.ranges()) shifted = shifted | BlockSet::range(lo + B, hi + B, S);
          out = shifted;
        }
        if (rng() % 10 == 0) out = runs(0);  // a size mismatch, usually
        const bool reduce = s.collective != Collective::bcast && rng() % 4 != 0;
        built[size_t(a)][size_t(t)].push_back(SendOp{b, out, {}});
        built[size_t(b)][size_t(t)].push_back(RecvOp{a, in, reduce, {}});
        built[size_t(b)][size_t(t)].push_back(SendOp{a, out, {}});
        built[size_t(a)][size_t(t)].push_back(RecvOp{b, in, reduce, {}});
      }
      if (s.scratch > 0 && rng() % 2) {  // a local copy or reduce between the buffers
        const int64_t x = int64_t(rng() % uint64_t(s.p));
        const BlockSet v = runs(0);
        BlockSet w;
        for (const auto& [lo, hi] : v.ranges()) w = w | BlockSet::range(lo + B, hi + B, S);
        if (rng() % 2) built[size_t(x)][size_t(t)].push_back(LocalOp{v, w, false, {}});
        else built[size_t(x)][size_t(t)].push_back(LocalOp{w, v, s.collective != Collective::bcast, {}});
      }
    }
    for (auto& r : built) s.ranks.push_back(RankRounds(std::move(r)));
    CAPTURE(trial);
    Counterexample::Kind kind;
    if (same_both_ways(s, &kind)) ++ok;
    else ++failed;
    ++kinds[kind];
  }
  MESSAGE(ok << " verified, " << failed << " failing, " << compressed << " with fewer classes than blocks");
  for (const auto& [k, n] : kinds) MESSAGE(n << " " << (k == Counterexample::Kind::none ? std::string("verified") : std::string(counterexample_kind_name(k))));
  CHECK(compressed > 500);
  // The data flow is compared through every kind of its failures, and through instances
  // that hold.
  for (Counterexample::Kind k : {Counterexample::Kind::none, Counterexample::Kind::no_data, Counterexample::Kind::double_count,
                                 Counterexample::Kind::missing, Counterexample::Kind::size_mismatch})
    CHECK(kinds[k] >= 10);
}

TEST_CASE("[classes] an allreduce on 2^24 blocks costs what it costs on 1") {
  const char* text =
      "schedule big implements allreduce {\n  blocks 16777216\n  exchange all / all with 1 - r reduce\n}\n"
      "schedule one implements allreduce {\n  blocks 1\n  exchange all / all with 1 - r reduce\n}\n";
  Program prog;
  DiagnosticSink d;
  REQUIRE(load_program_text("big.bine", text, prog, d));
  uint64_t bytes[2];
  for (int i = 0; i < 2; ++i) {
    Schedule sch;
    REQUIRE(instantiate(prog, prog.schedules[size_t(i)], {2, 0, false}, sch, d) == InstStatus::ok);
    const VerifyResult v = verify(sch, d);
    CHECK(v.ok);
    bytes[i] = v.accounted_bytes;
  }
  MESSAGE("accounted: " << bytes[0] << " bytes at 2^24 blocks, " << bytes[1] << " at 1");
  CHECK(bytes[0] < 2 * bytes[1] + 4096);
  CHECK(d.all().empty());
}

TEST_CASE("[memory] the account refuses what exceeds the budget") {
  set_memory_budget(1000);
  MemoryAccount a("x at p=4");
  a.add(600, "the first part");
  CHECK(a.total() == 600);
  const auto what = [] { return std::string("a transient part"); };
  CHECK_NOTHROW(a.check(400, what));
  CHECK_THROWS_AS(a.check(401, what), ResourceLimit);
  try {
    a.add(500, "the second part", ResourceLimit::Lever::blocks);
    FAIL("not refused");
  } catch (const ResourceLimit& e) {
    CAPTURE(e.what());
    CHECK(std::string(e.what()).find("x at p=4: the second part would take 500 bytes (1.1 KiB with the rest of the instance)") == 0);
    CHECK(e.lever() == ResourceLimit::Lever::blocks);
  }
  // An instance above the budget stops instantiation with the error, before its ranks run.
  Schedule sch;
  DiagnosticSink d;
  set_memory_budget(64 << 10);
  CHECK_THROWS_AS(instantiate(library(), sched("ring_allreduce"), {256, 0, false}, sch, d), ResourceLimit);
  set_memory_budget(0);
  CHECK(instantiate(library(), sched("ring_allreduce"), {256, 0, false}, sch, d) == InstStatus::ok);
  CHECK(sch.accounted_bytes > (64 << 10));
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(3ull << 30) == "3.0 GiB");
}

}  // namespace bine::test
