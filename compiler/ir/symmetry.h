// Root symmetry: a static proof, on the lowered program, that a rooted schedule treats every
// root alike, so that for every p the instance for root R is the root-0 instance relabelled
// by r -> (r + R) mod p (the relation rotation.h checks instance by instance), and the
// root-0 proof covers every root without building their instances
// (docs/verifier.md, "Every root: rotation").
#pragma once
#include <string>

#include "lower.h"

namespace bine {

/// The result of root_symmetry().
struct RootSymmetry {
  bool proved = false;
  /// Rank-indexed blocks (gather, scatter): the sets rotate with the ranks, and the proof
  /// holds at a given p only where every message and local statement of the root-0 instance
  /// keeps its block pairing under every rotation (rotation.h: pairing_for_every_root()).
  bool rank_blocks = false;
  /// Why the program is not proved symmetric ("" when it is): the first construct whose
  /// value or effect may depend on the root other than by the rotation, and where it is.
  std::string reason;
  Span at;  ///< the construct (invalid when there is none, e.g. an unrooted collective)
};

/// Proves, for every p, every root R and both values of `commutative`, that running the
/// program on rank (x + R) mod p with root R does what running it on rank x with root 0
/// does, relabelled: the same control flow (so the same `requires` outcome, domain errors,
/// loop and step counts, rounds), peers rotated by R, and block sets equal (vector blocks:
/// bcast, reduce) or rotated by R (rank-indexed blocks: gather, scatter, with `blocks p`).
///
/// An abstract interpretation over the relation between each value in the two runs
/// (docs/verifier.md, "Root symmetry"): equal; congruent modulo p; shifted by R modulo p
/// (exactly R, and/or both in [0, p)); unknown. `r` and `root` are shifted, `p` and
/// `commutative` equal. Branch conditions, loop bounds, arguments of partial operations
/// (those with domain errors) and `requires` must be equal in both runs; a peer must be
/// shifted; a block set equal or rotated as above. Under a `fold` (not `fold ring` with
/// rank-indexed blocks) the body sees root-relative ranks and root 0, so every value of the
/// body is equal and the fold's own mapping to real ranks is the rotation: proved at once.
/// Composition on sub-groups without a fold (regions are fixed sets of real ranks) and
/// `frames` with rank-indexed blocks are not proved. `+ - *` wrap around 2^64, which breaks
/// congruence modulo p: every value is also bounded by an interval (p in 1..2^31-1, r and
/// root in 0..p-1, loop variables by their bounds, literals exact), and a root-dependent
/// `+ - *` (or unary `-`) whose bound may leave the signed 64-bit range is not proved
/// ("root-dependent arithmetic ('+') that may wrap around 2^64").
///
/// Sound, not complete: a program it does not prove may still be symmetric; check then
/// compares instances (rotation_mismatch()).
RootSymmetry root_symmetry(const RankProgram& rp);

}  // namespace bine
