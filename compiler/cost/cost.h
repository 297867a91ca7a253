// The cost model: an event-driven alpha-beta-gamma simulation of one Schedule instance
// (docs/cost.md). Each rank runs its rounds in order; a message of m bytes costs
// alpha + m*beta and starts once both endpoints are in its round and their ports are free;
// a round ends when its messages are done, then its reductions cost gamma per element.
// The result carries the makespan, the critical path (the chain of messages and reductions
// that determines the makespan) decomposed into alpha/beta/gamma coefficients, and
// per-rank totals.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "schedule.h"

namespace bine {

/// Machine parameters. Times are in any unit (the makespan is in the same unit).
struct CostParams {
  double alpha = 0;  ///< latency of a message between ranks on different nodes
  double beta = 0;   ///< time per byte between ranks on different nodes
  double gamma = 0;  ///< time per element reduced (the papers' gamma is per byte: pass
                     ///< gamma_per_byte * elem_size, or elem_size 1)
  /// MPICH refinement (Thakur et al., Fig. 6): alpha and beta are the costs of a
  /// bidirectional exchange; a message whose pair of ranks carries no message in the other
  /// direction in the same round costs f_alpha*alpha + f_beta*m*beta. 1 = plain model.
  double f_alpha = 1, f_beta = 1;
  /// Ports per rank and direction (docs/cost.md, "Ports"): up to `ports` sends and `ports`
  /// receives of a rank progress at the same time, each at alpha + m*beta (a multi-NIC node,
  /// e.g. Fugaku's six TNIs, Bine trees paper Sec. 5.4.1); 1 = the papers' 1-ported model.
  /// Must be >= 1, else simulate_cost fails.
  int64_t ports = 1;
  /// Ranks per node (ranks r and q share a node when r / ppn == q / ppn); 0: flat network,
  /// every message uses alpha and beta.
  int64_t ppn = 0;
  double alpha_local = 0, beta_local = 0;  ///< used for messages within a node (region)
  /// Locality regions (the locality-aware Bruck seed, Eq. 2-3: alpha_local/beta_local for
  /// messages within a region, alpha/beta between regions): [rank] region id, e.g. the
  /// node, switch or group of a rank map (compiler/topo/machine.h). When non-empty it
  /// replaces `ppn` and must have one entry per rank (else simulate_cost fails).
  std::vector<int64_t> region;
  /// True when ranks r and q (in [0, p)) are in one region: same `region` entry, else the
  /// same node of `ppn`; false on a flat network.
  bool local(int64_t r, int64_t q) const {
    if (!region.empty()) return region[size_t(r)] == region[size_t(q)];
    return ppn > 0 && r / ppn == q / ppn;
  }
  /// True when some messages may be local (ppn or regions given).
  bool has_locality() const { return ppn > 0 || !region.empty(); }
  /// A third link class between local and global (traffic's intra_group, docs/cost.md,
  /// "Three link classes"): [rank] group id (the dragonfly group, fat-tree pod, torus
  /// z-plane or Leonardo cell of a rank map). When non-empty, a message between different
  /// regions of one group costs alpha_group + m*beta_group, and alpha/beta price only the
  /// messages between groups (the Bine trees paper's global links, Sec. 2.4). One entry
  /// per rank, else simulate_cost fails. Empty: two classes.
  std::vector<int64_t> group;
  double alpha_group = 0, beta_group = 0;
  /// The class of a message from rank r to rank q: 0 local (alpha_local, beta_local), 1
  /// within a group (alpha_group, beta_group), 2 otherwise (alpha, beta).
  int link(int64_t r, int64_t q) const {
    if (local(r, q)) return 0;
    return !group.empty() && group[size_t(r)] == group[size_t(q)] ? 1 : 2;
  }
  double alpha_of(int link_class) const { return link_class == 0 ? alpha_local : link_class == 1 ? alpha_group : alpha; }
  double beta_of(int link_class) const { return link_class == 0 ? beta_local : link_class == 1 ? beta_group : beta; }
};

/// The size of the reduced / transferred vector.
struct CostVector {
  uint64_t elements = 0;   ///< n: the vector's element count, split into Schedule::blocks blocks
  uint64_t elem_size = 1;  ///< bytes per element
  /// Irregular blocks (the `_v` forms, issue 21): when non-empty, block b holds counts[b]
  /// elements instead of a balanced share of `elements` (one entry per block of the
  /// instance, Schedule::blocks, e.g. p for the rank-indexed collectives; `elements` must
  /// be their sum, else simulate_cost fails). Scratch buffers repeat the layout.
  std::vector<uint64_t> counts = {};
};

enum class StepKind { message, reduction };

/// One link of the critical path.
struct CostStep {
  StepKind kind = StepKind::message;
  int64_t rank = 0;         ///< message: the sender; reduction: the reducing rank
  int64_t peer = -1;        ///< message: the receiver
  int64_t round = 0;
  uint64_t bytes = 0;       ///< message size
  uint64_t pieces = 1;      ///< message: segments of the round's `segment` size (alpha each)
  uint64_t elements = 0;    ///< message: elements carried; reduction: elements reduced
  bool bidirectional = true;  ///< message: the pair exchanges in this round (no f factors)
  bool local = false;         ///< message: both ranks on one node (alpha_local, beta_local)
  bool group = false;         ///< message: not local, both ranks in one group (alpha_group, beta_group)
  double start = 0, end = 0;
};

/// The critical path and its decomposition: makespan = coef_alpha*alpha + coef_beta*beta +
/// coef_alpha_local*alpha_local + coef_beta_local*beta_local + coef_alpha_group*alpha_group +
/// coef_beta_group*beta_group + coef_gamma*gamma.
struct CriticalPath {
  std::vector<CostStep> steps;   ///< in time order; contiguous from 0 to the makespan
  int64_t messages = 0;
  int64_t rounds = 0;            ///< distinct rounds its messages belong to
  uint64_t bytes = 0;            ///< bytes of its messages
  uint64_t reduced_elements = 0; ///< elements of its reductions
  double coef_alpha = 0, coef_beta = 0, coef_alpha_local = 0, coef_beta_local = 0, coef_gamma = 0;
  double coef_alpha_group = 0, coef_beta_group = 0;
};

struct RankCost {
  int64_t messages_sent = 0, messages_received = 0;
  uint64_t bytes_sent = 0, bytes_received = 0, elements_reduced = 0;
  double finish = 0;  ///< end of the rank's last round
};

struct CostResult {
  bool ok = false;
  std::string error;             ///< why the schedule could not be simulated
  double makespan = 0;
  int64_t rounds = 0;            ///< Schedule::num_rounds
  int64_t messages = 0;          ///< all ranks
  uint64_t bytes = 0;            ///< all ranks
  int64_t last_rank = 0;         ///< the rank that finishes last (lowest on ties)
  CriticalPath critical;
  std::vector<RankCost> ranks;
};

/// Simulates `s` for the vector `v` under `params`. Fails (ok = false, error set) on
/// invalid parameters, unmatched messages, message size mismatches and deadlocks; a
/// schedule that passes the verifier never fails.
CostResult simulate_cost(const Schedule& s, const CostVector& v, const CostParams& params);

/// Elements of block set `b` when n elements are split into B balanced blocks.
uint64_t block_elements(const BlockSet& b, uint64_t n, int64_t B);
/// The block offsets of v.counts: [0, c0, c0 + c1, ..., sum] (empty without counts).
std::vector<uint64_t> count_offsets(const CostVector& v);
/// Elements of block set `b` of the vector `v` over B blocks: the irregular layout when
/// `offsets` (count_offsets(v)) is non-empty (block k is counts[k % B], buffer k / B), else
/// the balanced split of v.elements. O(ranges of b).
uint64_t block_elements(const BlockSet& b, const CostVector& v, int64_t B, const std::vector<uint64_t>& offsets);

/// Readable report: parameters, makespan, critical path with its steps, per-rank table.
std::string cost_text(const Schedule& s, const CostVector& v, const CostParams& params, const CostResult& r);
/// The same as JSON; deterministic.
std::string cost_json(const Schedule& s, const CostVector& v, const CostParams& params, const CostResult& r);

}  // namespace bine
