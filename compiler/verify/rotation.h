// Root rotation: proves that the instance of a rooted schedule for root R is the root-0
// instance relabelled by r -> (r + R) mod p, so that a proof of the root-0 instance covers
// root R (docs/verifier.md#every-root-rotation).
#pragma once
#include <string>

#include "schedule.h"

namespace bine {

/// Compares `inst` (root R = inst.root) with `base` (root 0) relabelled by
/// rho(x) = (x + R) mod p: for every rank x and round t, the ops of rank rho(x) in `inst`
/// are the ops of rank x in `base`, in the same order, of the same kind (send, receive,
/// reduce flag, local copy/reduce, permute), with peer rho(peer) and the same block sets;
/// in the rank-indexed collectives (gather, scatter) block b is rank b's block, so it
/// becomes block rho(b), and a message (or local statement) must keep pairing its k-th
/// source block with its k-th destination block after re-sorting, which holds exactly when
/// both sides have as many blocks in [p - R, p) (the blocks that wrap to the front),
/// modulo the message's block count.
/// Returns "" when `inst` is the rotation, else the first difference in words ("rank 5,
/// round 2: ..."). Both must have the same schedule, p and commutative value.
///
/// Why it suffices: every check of verify() (peers, matching under zero buffering, sizes,
/// races, data flow, exact contribution sets, the postcondition for root R) is invariant
/// under relabelling ranks, and the rank-indexed block relabelling maps rank b's block to
/// rank rho(b)'s. Not invariant: the reduction order (the lower real rank's data is the
/// left operand), so order-preserving is only known for fully verified roots.
std::string rotation_mismatch(const Schedule& base, const Schedule& inst);

/// For rank-indexed blocks (gather, scatter): whether every message and local statement of
/// `base` (root 0) keeps its k-th-to-k-th block pairing under EVERY rotation R = 1..p-1,
/// so that rotated block sets (root_symmetry() proved the rest for all roots) pair the same
/// blocks. Rotating by R shifts a set's ascending order by its blocks in [p - R, p); the
/// two sides' counts there must agree modulo the size n for every R. They change by at most
/// one per step of R and start and end at n, so for n >= 2 that holds exactly when both
/// sides are the same set (n = 1: always; sets of different sizes never pair). Returns "" or the first offender in words.
std::string pairing_for_every_root(const Schedule& base);

}  // namespace bine
