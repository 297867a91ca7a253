// The verifier's structured counterexample against the hand-derived expectations of
// tests/mutations (their EXPECT and NOTE headers), and draw_svg() basics.
#include <doctest/doctest.h>

#include "draw.h"
#include "library.h"
#include "verify.h"

namespace bine::test {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

/// Verifies an instance of a mutation (tests/mutations/NAME.bine); the counterexample's
/// message must be the diagnostic's.
Counterexample failing(const std::string& name, int64_t p) {
  const Schedule s = inst(library_with("tests/mutations/" + name + ".bine"), name, p);
  DiagnosticSink d;
  const VerifyResult v = verify(s, d);
  REQUIRE_FALSE(v.ok);
  REQUIRE(d.all().size() >= 1);
  CHECK(v.counterexample.message == d.all().front().message);
  return v.counterexample;
}

}  // namespace

TEST_CASE("verify: a deadlock's counterexample names the rank, round, block and the wait-for cycle") {
  // mut_bar_wrong_partner: p = 4, rank 0, round 1, block 1; every rank waits for r + 1.
  const Counterexample c = failing("mut_bar_wrong_partner", 4);
  CHECK(c.kind == Counterexample::Kind::deadlock);
  CHECK(std::string(counterexample_kind_name(c.kind)) == "deadlock");
  CHECK(c.rank == 0);
  CHECK(c.round == 1);
  CHECK(c.block == 1);
  CHECK(c.peer == 1);
  CHECK_FALSE(c.peer_is_sender);
  CHECK(c.wait_for == std::vector<int64_t>{0, 1, 2, 3, 0});
  CHECK(c.wait_rounds == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(c.cycle);
  CHECK(c.match_round == 2);  // "rank 1 posts the matching receive in round 2"
}

TEST_CASE("verify: a race's counterexample names the two receives") {
  // mut_ring_two_recvs: p = 2, rank 0 copies block 0 twice from rank 1 in round 1.
  const Counterexample c = failing("mut_ring_two_recvs", 2);
  CHECK(c.kind == Counterexample::Kind::race);
  CHECK(c.rank == 0);
  CHECK(c.round == 1);
  CHECK(c.block == 0);
  CHECK(format_blocks(c.blocks) == "{0}");
  CHECK(c.race_peers[0] == 1);
  CHECK(c.race_peers[1] == 1);
}

TEST_CASE("verify: a double count names the sender and the doubled ranks") {
  // mut_babe_twice: p = 2, the contribution of ranks {0, 1} reaches rank 0 twice in round 2.
  const Counterexample c = failing("mut_babe_twice", 2);
  CHECK(c.kind == Counterexample::Kind::double_count);
  CHECK(c.rank == 0);
  CHECK(c.round == 2);
  CHECK(c.block == 0);
  CHECK(c.peer == 1);
  CHECK(c.peer_is_sender);
  CHECK(c.doubled_ranks == std::vector<int64_t>{0, 1});
}

TEST_CASE("verify: an instance that holds has no counterexample") {
  DiagnosticSink d;
  const VerifyResult v = verify(inst("bine_bcast_lat", 8), d);
  CHECK(v.ok);
  CHECK(v.counterexample.kind == Counterexample::Kind::none);
}

TEST_CASE("draw: one arrow per send, deterministic, heat map above p = 64") {
  const Schedule s = inst("bine_allreduce_bdw", 6);
  int64_t sends = 0;
  for (const auto& rank : s.ranks)
    for (const Round& rd : rank)
      for (const Op& op : rd) sends += std::holds_alternative<SendOp>(op);
  const std::string svg = draw_svg(s);
  CHECK(int64_t(count(svg, "<g class=\"transfer ")) == sends);
  CHECK(svg == draw_svg(s));
  CHECK(count(svg, "class=\"rank helper\"") == 2);  // ranks 1 and 3 sit the body out
  CHECK(count(svg, "class=\"round mirror\"") == 2);
  CHECK(count(svg, "class=\"round fold\"") == 2);
  CHECK_FALSE(draw_uses_heat_map(inst("bine_bcast_lat", 64), {}));
  const Schedule big = inst("bine_bcast_lat", 65);
  CHECK(draw_uses_heat_map(big, {}));
  const std::string hm = draw_svg(big);
  CHECK(count(hm, "class=\"heatmap\"") == 1);
  CHECK(count(hm, "<g class=\"transfer ") == 0);
}

}  // namespace bine::test
