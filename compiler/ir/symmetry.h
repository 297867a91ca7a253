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

/// The result of translation_symmetry().
struct TranslationSymmetry {
  bool proved = false;
  /// Block sets rotate with the ranks (rank-indexed blocks, or vector blocks with B = p
  /// that the program indexes by rank, as the ring allreduce does); else they are equal.
  bool rotate_blocks = false;
  std::string reason;  ///< why not proved ("" when proved)
  Span at;             ///< the construct (invalid when there is none)
};

/// Proves, for every p, every shift d in 0..p-1 and both values of `commutative`, that
/// rank (x + d) mod p runs the program as rank x does, relabelled: the same control flow
/// (`requires` outcome, domain errors, loop and step counts, rounds), peers shifted by d
/// modulo p, and block sets equal or (rotate_blocks, B = p) rotated by d modulo p. So an
/// instance is rank 0's rounds shifted to every rank (issue 47, item 3; docs/verifier.md,
/// "Translation symmetry"). The analysis of root_symmetry() with `r` shifted and `root`
/// equal (0: unrooted collectives only), where the shift of one pair of runs is the
/// constant r_B - r_A, so `r` is exactly shifted: `wrap [r, r + k)` rotates. Not proved:
/// rooted collectives, folds (they set fixed ranks aside), frames, sub-groups, region
/// built-ins of `r`, rank-dependent `+ - *` that may wrap around 2^64.
///
/// With rotated rank-indexed blocks the relabelled instance pairs a message's k-th sent
/// block with its k-th received block only where pairing_for_every_root() (rotation.h)
/// holds for the instance. Sound, not complete.
TranslationSymmetry translation_symmetry(const RankProgram& rp);

}  // namespace bine
