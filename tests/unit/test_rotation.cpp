// rotation_mismatch() (compiler/verify/rotation.h): the root-R instance against the root-0
// instance relabelled by r -> (r + R) mod p. Oracles: the library's binomial trees are
// written relative to the root (v = r - root), so every root is a rotation; the mutation
// mut_rot_bcast_roots treats roots 2..p/2-1 differently at p = 65..128; a hand-built gather
// message whose block pairing changes under the rotation.
#include <doctest/doctest.h>

#include "library.h"
#include "rotation.h"

namespace bine::test {

TEST_CASE("rotation: library trees written relative to the root are rotations of root 0") {
  for (const char* name : {"binomial_bcast_doubling", "binomial_gather", "binomial_scatter", "bine_bcast_lat"})
    for (int64_t p : {5, 8, 13})
      for (int64_t R = 1; R < p; ++R) {
        CAPTURE(name);
        CAPTURE(p);
        CAPTURE(R);
        CHECK(rotation_mismatch(inst(name, p, 0), inst(name, p, R)) == "");
      }
}

TEST_CASE("rotation: a schedule that treats some roots differently is no rotation") {
  const Program& prog = library_with("tests/mutations/mut_rot_bcast_roots.bine");
  const Schedule base = inst(prog, "mut_rot_bcast_roots", 65, 0);
  CHECK(rotation_mismatch(base, inst(prog, "mut_rot_bcast_roots", 65, 1)) == "");
  CHECK(rotation_mismatch(base, inst(prog, "mut_rot_bcast_roots", 65, 32)) == "");
  // Root 2: v = r - root + 1, so rank 1 (v = 0) sends to rank 2 in round 0 and rank 2
  // (v = 1) receives, where root 0's rank 0, rotated to rank 2, sends.
  CHECK(rotation_mismatch(base, inst(prog, "mut_rot_bcast_roots", 65, 2)) ==
        "rank 2, round 0: operation 0 is of another kind (rank 0 for root 0)");
}

namespace {
Schedule gather4(int64_t root, BlockSet sent, BlockSet received, int64_t from, int64_t to) {
  Schedule s;
  s.collective = Collective::gather;
  s.p = 4;
  s.root = root;
  s.blocks = 4;
  s.num_rounds = 1;
  s.ranks.assign(4, RankRounds(std::vector<RoundOps>(1)));
  s.ranks[size_t(from)].add(0, SendOp{to, sent, {}});
  s.ranks[size_t(to)].add(0, RecvOp{from, received, false, {}});
  return s;
}
}  // namespace

TEST_CASE("rotation: rank-indexed blocks rotate with the ranks and must keep their pairing") {
  // Root 0: rank 1 sends blocks {0, 1} into rank 0's blocks {2, 3} (0 -> 2, 1 -> 3).
  const Schedule base = gather4(0, BlockSet::range(0, 2, 4), BlockSet::range(2, 4, 4), 1, 0);
  // Rotated by 1 as sets: rank 2 sends {1, 2} into rank 1's {3, 0}; sorted, {0, 3} pairs
  // 1 -> 0 and 2 -> 3, i.e. root 0's 0 -> 3 and 1 -> 2: another message.
  const std::string why = rotation_mismatch(base, gather4(1, BlockSet::range(1, 3, 4), BlockSet::wrap(3, 5, 4), 2, 1));
  CHECK(why.find("pairs other blocks") != std::string::npos);
  // Blocks not rotated at all: a plain mismatch.
  CHECK(rotation_mismatch(base, gather4(1, BlockSet::range(0, 2, 4), BlockSet::range(2, 4, 4), 2, 1))
            .find("receives blocks {2-3}") != std::string::npos);
  // One block pairs with one block whatever wraps: {3} into {1} rotated by 2.
  const Schedule b2 = gather4(0, BlockSet::block(3, 4), BlockSet::block(1, 4), 1, 0);
  CHECK(rotation_mismatch(b2, gather4(2, BlockSet::block(1, 4), BlockSet::block(3, 4), 3, 2)) == "");
}

}  // namespace bine::test
