// Static landing layout for one-sided targets (uTofu): which transfers of a schedule may
// put their data straight into the receiver's vector, at the offsets of the blocks the
// sender sends, instead of into the receiver's staging area (docs/utofu.md, "Static
// landing layout"). A put lands where the SENDER computes, whether or not the receiver is
// ready for it; the layout is safe only if the verifier proves, per instance:
//
//   notices     for every receiver and round, the direct puts addressed to it (counted
//               on the senders' side) are the direct receives it posts (counted on its
//               own): both sides agree on which transfers land directly, so the RMT_PUT
//               notices the receiver counts per step are the puts sent to it;
//   copy        a direct receive copies (does not reduce), into the vector (buffer 0, not
//               a scratch buffer), exactly the block set the sender sends (the sender
//               computes the remote offsets from its own block indices);
//   overlap     no two direct puts that can be in flight at once write the same block of
//               one rank: of two that do, the first lands (the receiver finishes its
//               round) before the second is posted, through a chain of messages (below);
//   early       nothing is overwritten before the receiver has consumed it: every
//               operation of the receiver on those blocks before the receive (a send that
//               reads them, a receive or local operation that writes or reads them, a
//               permutation) happens before the sender posts the put, through a chain of
//               the instance's messages (below); and the receiver does nothing else with
//               those blocks in the round of the receive (its sends of the round read
//               while the put may land). The Fugaku implementation's fast-sender hazard.
//
// Happens-before, the round pipeline's execution model (bine/mpi_runtime.hpp,
// run_round()): a rank posts a round's sends and receives, waits for all of them (a send
// has completed when its data has been read), applies the round's local operations, and
// only then posts the next round. So rank x finishing round w happens before rank y posts
// round u when x = y and w < u, or when some message x' -> y in a round v < u was posted
// after x finished w. Across calls the runtime must add a rendezvous (the receiver tells
// each direct source that it has entered the call) because MPI lets the user read the
// result between two calls; that is not part of an instance.
//
// The layout is a property of the program, not of one instance: it names the statements
// (origins: statement and derivation, e.g. a mirror's replay) whose sends, and whose
// receives, land directly; the runtime decides per operation from its origin alone. A
// schedule's layout starts with every origin direct and loses the origins of every
// violation found in any checked instance, until every instance is proved with it.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "schedule.h"

namespace bine {

/// The origins (interned: their addresses are stable) whose operations do NOT land
/// directly: a send whose origin is in `staged_sends`, a receive whose origin is in
/// `staged_recvs`, goes through the receiver's staging area. Everything else is direct.
struct LandingLayout {
  std::set<const Origin*> staged_sends, staged_recvs;
  bool direct_send(const SendOp& s) const { return !staged_sends.count(&s.origin.get()); }
  bool direct_recv(const RecvOp& r) const { return !staged_recvs.count(&r.origin.get()); }
};

/// One violated obligation, with the transfer it concerns: the receiver `rank`, its
/// `round`, the sender `peer`, a `block` (-1 where none applies), and for `overlap` /
/// `early` the other operation's round and peer; `send` / `recv` the origins involved.
struct LandingViolation {
  enum Kind { notices, copy, overlap, early } kind = notices;
  int64_t rank = -1, round = -1, peer = -1, block = -1;
  int64_t other_round = -1, other_peer = -1;
  const Origin* send = nullptr;
  const Origin* recv = nullptr;
  std::string message;  ///< in words, with source lines: "rank 3, round 2: ..."
};

/// Checks every obligation above for `layout` on the verified instance `sch`. Returns the
/// violations (at most `max`; empty: the layout is proved for this instance). Cost: the
/// instance's operations and blocks, plus p^2 per round when some direct receive has an
/// earlier operation on its blocks (happens-before by vector clocks); instances with p
/// above kLandingMaxRanks are not analysed (throws std::length_error).
std::vector<LandingViolation> check_landing(const Schedule& sch, const LandingLayout& layout, size_t max = 16);

/// The largest p whose instances check_landing() analyses (the clocks are p^2 integers).
inline constexpr int64_t kLandingMaxRanks = 2048;

/// Transfers of `sch` that land directly under `layout` (matched pairs), and all of them.
struct LandingCount {
  int64_t direct = 0, transfers = 0;
};
LandingCount count_landing(const Schedule& sch, const LandingLayout& layout);

/// "line 12" (or "line 12, mirror of phase 'rs'") for an origin, "" for none.
std::string origin_words(const Origin* o);

}  // namespace bine
