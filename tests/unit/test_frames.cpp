// `frames` schedules (docs/language.md "frames", compiler/ir/frames.h, bine/frames.hpp).
// Oracles: the BBS step simulator of compiler/synth (run_frames: its own implementation of
// the frames' rules, written for the paper's tables) and its independent trace checker
// (check_trace); the verifier's topology checks against sabotaged instances.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bbs.h"
#include "frames.h"
#include "library.h"
#include "verify.h"

namespace {

using namespace bine;

FramesData frames_of(const synth::Graph& g, int root, const std::vector<synth::Frame>& frames, PacketRule rule) {
  FramesData f;
  f.nodes = g.n;
  f.root = root;
  f.rule = rule;
  for (auto [u, v] : g.edges) f.links.emplace_back(u, v);
  for (const synth::Frame& fr : frames) {
    f.frames.emplace_back();
    for (auto [u, v] : fr) f.frames.back().emplace_back(u, v);
  }
  return f;
}

using Transfers = std::set<std::tuple<int, int, int>>;  // (from, to, packet)

}  // namespace

TEST_CASE("frames table: the same run as the synth simulator, and a valid broadcast") {
  for (const char* spec : {"grid:4x4", "grid:2x2x4", "grid:3x5", "torus:4x4", "hypercube:4", "16k3", "dragonfly:2,1"}) {
    synth::Graph g;
    std::string err;
    REQUIRE(synth::build_topology(spec, g, err));
    for (synth::Orient orient : {synth::Orient::bfs, synth::Orient::alternate}) {
      synth::SynthOptions o;
      o.orient = orient;
      synth::Synthesis syn;
      REQUIRE(synth::synthesize_bbs(g, o, syn, err));
      for (PacketRule rule : {PacketRule::lowest, PacketRule::potential})
        for (int N : {1, 7, 60}) {
          INFO(spec << (orient == synth::Orient::bfs ? " bfs" : " alternate") << " rule " << packet_rule_name(rule) << " N = " << N);
          const FramesData f = frames_of(g, 0, syn.frames, rule);
          FramesTableData tab;
          REQUIRE(build_frames_table(f, N, tab, err));
          synth::Run run;
          REQUIRE(synth::run_frames(g, 0, N, syn.frames,
                                    rule == PacketRule::lowest ? synth::Choice::lowest : synth::Choice::forward_potential,
                                    synth::Fill::none, true, run, err));
          CHECK(tab.steps == run.steps);
          CHECK(tab.transfers == int64_t(g.n - 1) * N);
          // The table, read back through frames_op (as generated code reads it): each step's
          // sends equal the simulator's transfers, and every send has its receive.
          const FramesTable view = tab.view();
          std::vector<synth::Step> trace(size_t(view.steps));
          int64_t mismatched = 0;
          for (int64_t t = 0; t < view.steps; ++t) {
            Transfers sends, recvs;
            for (int64_t x = 0; x < view.nodes; ++x) {
              FramesOp op;
              if (!frames_op(view, x, t, op)) continue;
              if (op.send) sends.emplace(int(x), int(op.peer), int(op.packet));
              else recvs.emplace(int(op.peer), int(x), int(op.packet));
            }
            Transfers sim;
            if (size_t(t) < run.trace.size())
              for (const synth::Transfer& tr : run.trace[size_t(t)]) sim.emplace(tr.from, tr.to, tr.packet);
            mismatched += sends != sim || sends != recvs;
            for (auto [a, b, k] : sends) trace[size_t(t)].push_back({a, b, k});
          }
          CHECK(mismatched == 0);
          CHECK(synth::check_trace(g, 0, N, trace) == "");
        }
    }
  }
}

TEST_CASE("frames table: lowest keeps every node's packets in order, so the table stays small") {
  // With `lowest`, node v always receives packet (packets v holds): per entry, the packets
  // over the cycles rise steadily, a few arithmetic runs each. 16x16: 256 nodes, N = 500.
  synth::Graph g;
  std::string err;
  REQUIRE(synth::build_topology("grid:16x16", g, err));
  synth::Synthesis syn;
  REQUIRE(synth::synthesize_bbs(g, synth::SynthOptions{}, syn, err));
  FramesTableData tab;
  REQUIRE(build_frames_table(frames_of(g, 0, syn.frames, PacketRule::lowest), 500, tab, err));
  const int64_t entries = int64_t(tab.entry.size() / 4), runs = int64_t(tab.run.size() / 4);
  INFO("T = " << tab.steps << ", entries " << entries << ", runs " << runs);
  CHECK(runs <= 4 * entries);              // O(frames) per node, not O(steps)
  CHECK(runs * 8 < tab.steps * g.n / 4);   // far below a per-step table
}

TEST_CASE("frames table: frames that cannot finish are an error naming the node and packet") {
  FramesData f;
  f.nodes = 4;
  f.links = {{0, 1}, {1, 2}, {2, 3}};
  f.frames = {{{0, 1}}, {{1, 2}}};  // the link 2-3 is never used
  FramesTableData tab;
  std::string err;
  FramesStall stall;
  CHECK_FALSE(build_frames_table(f, 3, tab, err, &stall));
  CHECK(err.find("cannot finish") != std::string::npos);
  CHECK(stall.node == 3);
  CHECK(stall.packet == 0);
}

TEST_CASE("frames schedules: verified instances, p fixed, the verifier's topology checks") {
  const Program& prog = test::library_with("examples/bbs/bbs_grid_4x4.bine");
  const ScheduleDecl* decl = nullptr;
  for (const ScheduleDecl& d : prog.schedules)
    if (d.name == "bbs_grid_4x4") decl = &d;
  REQUIRE(decl);
  {
    Schedule s;
    DiagnosticSink d;
    std::string unmet;
    CHECK(instantiate(prog, *decl, {15, 0, false}, s, d, &unmet) == InstStatus::not_applicable);
    CHECK(unmet.find("p == 16") == 0);
  }
  for (int64_t root : {0, 5, 15}) {
    Schedule s = test::inst(prog, "bbs_grid_4x4", 16, root);
    DiagnosticSink d;
    CHECK(verify(s, d).ok);
    CHECK(s.one_port);
    CHECK(s.links.size() == 24);
    // Rank `root` plays node 0: in step 0 it sends packet 0 (frame 0's arc 0>1 is to rank root + 1).
    REQUIRE(!s.ranks[size_t(root)][0].empty());
    const Op& op = s.ranks[size_t(root)][0].front();
    CHECK(std::holds_alternative<SendOp>(op));
    CHECK(peer_of(op) == (root + 1) % 16);
  }
  Schedule good = test::inst(prog, "bbs_grid_4x4", 16, 0);
  SUBCASE("a transfer off the links") {
    Schedule s = good;
    s.links.erase(std::find(s.links.begin(), s.links.end(), std::pair<int64_t, int64_t>(0, 1)));
    DiagnosticSink d;
    const VerifyResult r = verify(s, d);
    CHECK_FALSE(r.ok);
    CHECK(r.counterexample.kind == Counterexample::Kind::topology);
    CHECK(r.counterexample.message.find("not a neighbour") != std::string::npos);
    CHECK(r.counterexample.round == 0);
  }
  SUBCASE("a rank in two transfers of a step") {
    Schedule s = good;
    // Round 0: rank 0 sends packet 0 to rank 1; add a send of it to rank 4 (a link) too.
    s.ranks[0].add(0, SendOp{4, BlockSet::block(0, s.blocks), {}});
    s.ranks[4].add(0, RecvOp{0, BlockSet::block(0, s.blocks), false, {}});
    DiagnosticSink d;
    const VerifyResult r = verify(s, d);
    CHECK_FALSE(r.ok);
    CHECK(r.counterexample.kind == Counterexample::Kind::topology);
    CHECK(r.counterexample.message.find("two transfers of one step") != std::string::npos);
    CHECK(r.counterexample.rank == 0);
    // Without the frames' model the same schedule is a valid (two-port) broadcast.
    s.one_port = false;
    s.links.clear();
    DiagnosticSink d2;
    CHECK(verify(s, d2).ok);
  }
}
