// The verifier: proves one Schedule instance correct or returns a counterexample
// (docs/verifier.md). Checks, in order: message matching and deadlock freedom under zero
// buffering, races within a round, data flow with exact contribution tracking, the
// collective's postcondition, and infers reduction order and bracketing.
#pragma once
#include "schedule.h"

namespace bine {

/// What went wrong in a failing instance, as data (for `check --draw` and other tools); the
/// diagnostic in the sink says the same in words. Ranks, rounds and blocks are the
/// instance's (real ranks, rounds counted from 0 including fold rounds, blocks of the
/// rank's buffers); -1 where the failure names none.
struct Counterexample {
  enum class Kind {
    none,           ///< the instance verified
    self_transfer,  ///< a rank sends to or receives from itself
    deadlock,       ///< a transfer is never matched under zero buffering
    size_mismatch,  ///< matched send and receive disagree on the blocks
    race,           ///< two receives of one round write one block
    no_data,        ///< a rank sends, reads or reduces into a block it holds no data for
    double_count,   ///< a contribution reaches a block twice
    missing,        ///< postcondition: contributions or blocks never arrive
    wrong_data,     ///< postcondition: a block holds the wrong data
    local,          ///< a local reduce/copy is malformed (overlap, sizes)
    topology,       ///< a frames schedule's transfer off the topology's links, or a rank in two transfers of a round
    other,          ///< no rank to name (e.g. the block count)
  };
  Kind kind = Kind::none;
  int64_t rank = -1;   ///< the rank of the error (the first number of the message)
  int64_t round = -1;  ///< the round of the error (-1: before any round)
  int64_t block = -1;  ///< the first block named by the error
  BlockSet blocks;     ///< every block the error names (a race's overlap), else {block}
  /// The rank at the other end of the offending transfer: the peer the deadlocked op waits
  /// for, the receiver of a size mismatch or of a send without data, the sender of a
  /// double-counted contribution or of a reduction into an empty block.
  int64_t peer = -1;
  bool peer_is_sender = false;  ///< peer sends to rank (else rank sends to peer)
  /// Deadlock: the wait-for chain, wait_for[i] waits in round wait_rounds[i] for
  /// wait_for[i + 1] (the first two are rank and peer); `cycle` when the last one closes
  /// a cycle (it appears earlier in the list).
  std::vector<int64_t> wait_for, wait_rounds;
  bool cycle = false;
  /// Deadlock: the rank whose peer is wrong in the deadlocked round (-1: not found): y when
  /// the peer y posts its op to another rank that does not answer, the rank itself when
  /// another rank expects its op.
  int64_t wrong_peer_rank = -1;
  /// Deadlock: the round in which the peer posts the matching op instead (-1: none).
  int64_t match_round = -1;
  /// Race: the senders of the two receives that write `blocks` on `rank` in `round`.
  int64_t race_peers[2] = {-1, -1};
  /// Contribution errors: the ranks whose contribution is missing or counted twice.
  std::vector<int64_t> missing_ranks, doubled_ranks;
  /// Postcondition errors: the round that last wrote the block (-1: never written).
  int64_t write_round = -1;
  std::string message;  ///< the error's message, as in the diagnostic
};

/// "deadlock", "race", "double-count", ... (the kinds of tests/mutations), "" for none.
const char* counterexample_kind_name(Counterexample::Kind k);

/// Why a verified reducing instance is not order-preserving (the first final term, in the
/// order the postcondition checks them, whose leaves are not in rank order) or not
/// bracketed alike (the first block two ranks hold as different trees). Bracketings are
/// written with leaves x<rank> and reductions (a + b), `+` standing for the operator, and
/// x{lo-hi} for a subterm shown by its ranks only (in rank order for the order witness;
/// beyond the text's budget otherwise).
struct ReductionWitness {
  int64_t rank = -1, other_rank = -1;  ///< the rank (and, for bracketing, the rank it differs from)
  int64_t block = -1;
  std::string bracketing, other_bracketing;  ///< the rank's (and the other rank's) term
  /// Order: the reduction out of rank order and why; bracketing: the first subterms that differ.
  std::string reason;
  bool found() const { return block >= 0; }
};

struct VerifyResult {
  bool ok = false;
  Counterexample counterexample;  ///< kind none when ok
  /// Every final reduction combines contributions in rank order 0..p-1 (valid for
  /// non-commutative operators). True for collectives that do not reduce.
  bool order_preserving = true;
  /// All ranks that hold a final reduction of a block hold the same bracketing.
  bool same_bracketing = true;
  /// Where order_preserving / same_bracketing is false: the first instance of it.
  ReductionWitness order_witness, bracketing_witness;
  /// Every message lands in the blocks it was sent from (each received set equals its
  /// matched sent set) and no rank copies, reduces or permutes blocks locally: each block
  /// keeps its index from its owner to every destination, so the proof holds for any block
  /// sizes (the irregular `v` forms, docs/verifier.md).
  bool keeps_blocks = true;
  /// Alltoall: every message carries exactly one block, the item from its sender to its
  /// receiver (no item is forwarded), so the schedule's messages are the items themselves
  /// and any item sizes are served by sending each from and receiving it into the caller's
  /// buffers (the alltoallv form, docs/verifier.md). False for other collectives.
  bool direct = false;
  int64_t messages = 0;        ///< point-to-point messages, all ranks
  int64_t blocks_moved = 0;    ///< sum of |blocks| over messages
  /// Accounted memory (resource.h, docs/verifier.md "Memory"): the instance's
  /// (Schedule::accounted_bytes) and, in accounted_bytes, the verifier's added to it.
  uint64_t instance_bytes = 0, accounted_bytes = 0;
};

/// Verifier settings. Contribution sets are exact at every p (interned interval sets,
/// docs/verifier.md#data-flow-exact-contribution-tracking); no setting trades exactness
/// for speed.
struct VerifyOptions {
  /// The data flow on classes of blocks that every operation treats alike (vector
  /// collectives; docs/verifier.md, "Memory"); false: one state per block, the reference
  /// the unit tests compare it with. Results and diagnostics are the same either way.
  bool block_classes = true;
};

/// Verifies `s`; every failure is an error in `diags` naming p, root, rank, round, block
/// and pointing at the DSL statement, with notes for the other ranks involved.
VerifyResult verify(const Schedule& s, DiagnosticSink& diags, const VerifyOptions& opt = {});

}  // namespace bine
