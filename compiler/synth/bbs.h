// Broadcast by Balanced Saturation (BBS) synthesis and the step simulators of its paper:
// Lu, Hwang, Tenreiro, Tripti, Hamilton, Deng, "A New Broadcast Model for Several Network
// Topologies" (seeds/bbs-broadcast.txt). Model (Sec. 2.1, Eq. 2-3): synchronous steps; in
// each step every node sends or receives at most one packet, over one edge of the
// undirected topology G; the root starts with packets 0..N-1 and the broadcast ends when
// every node holds all N. docs/bbs.md documents the choices where the paper is ambiguous.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"

namespace bine::synth {

/// One transfer of a step: `from` sends packet `packet` to its neighbour `to`.
struct Transfer {
  int from = 0, to = 0, packet = 0;
};
using Step = std::vector<Transfer>;

/// Which nodes Eq. 14 balances. `paper`: every node, root included, as Eq. 14 is printed
/// ("for all i"); this is what the paper's T = 2N + K implies (T_S = NP / sum O, Eq. 17).
/// `non_root`: every node but the root (the sentence before Eq. 14); the root receives
/// nothing and the optimum is C = floor(P/2) / (P-1) where a perfect matching exists.
enum class Balance { paper, non_root };

/// The balanced LP (Eq. 6, 7, 8, 14: maximise C) solved with GLPK's exact rational
/// simplex (glp_exact), occupancies recovered as exact rationals over a common
/// denominator and re-checked exactly against every constraint.
struct LpSolution {
  std::vector<int> from, to;  ///< directed edges (arcs) with O > 0
  std::vector<int64_t> k;     ///< O(from -> to) = k / lcm: the multigraph multiplicities
  int64_t lcm = 1;            ///< l: the least common multiple of the denominators
  int64_t c_num = 0, c_den = 1;  ///< the optimum C = c_num / c_den (incoming occupancy)
  int vars = 0, rows = 0;
};
/// Returns false with `err` set when GLPK fails or the rational recovery does not satisfy
/// the constraints exactly (denominators above 2^20 are not recovered).
bool solve_balanced_lp(const Graph& g, int root, Balance bal, LpSolution& out, std::string& err);

/// A frame: the arcs active in one step of the cycle, a matching of G (each node in at
/// most one arc).
using Frame = std::vector<std::pair<int, int>>;  // (sender, receiver)

/// How a frame's edges get their direction. `bfs`: toward the node farther from the root
/// (paper Sec. 2.3; ties keep the LP's direction); `lp`: the direction of the LP arc the
/// multigraph copy came from (our variant: keeps every node's balanced in-rate).
/// `alternate` (ours, bipartite graphs; others fall back to `bfs`): step q sends from the
/// nodes at even hop distance when q is even, from the odd ones otherwise, over 2F steps.
enum class Orient { bfs, lp, alternate };

struct SynthOptions {
  int root = 0;
  int packets = 100;  ///< N, >= 1 (the frame order is tuned with it)
  Balance balance = Balance::paper;
  Orient orient = Orient::bfs;
  uint64_t colour_seed = 0;  ///< 0: copies coloured in arc order; else a shuffled order (another valid colouring)
  const LpSolution* lp = nullptr;   ///< when set, this LP solution instead of solving again
};

struct Synthesis {
  LpSolution lp;
  int64_t max_degree = 0;  ///< d_m: the multigraph's maximum degree
  int colours = 0;         ///< colours used by the edge colouring (= d_m when bipartite)
  bool rounded = false;    ///< l > 64: occupancies rounded down to multiples of 1/64 (lp.k, lp.lcm)
  bool bipartite = false;
  std::vector<Frame> frames;  ///< in cycle order (empty colour classes dropped)
  double lp_seconds = 0, colour_seconds = 0, order_seconds = 0;
};

/// Synthesises the BBS frames of `g` (Sec. 2.3): LP -> integer multigraph by the LCM ->
/// edge colouring (Koenig: d_m colours for bipartite multigraphs; otherwise alternating
/// paths with a fallback to the least colour free at both ends, at most 2 d_m - 1) ->
/// orientation -> greedy frame order. Errors: root outside 0..P-1, P = 1, LP failure.
bool synthesize_bbs(const Graph& g, const SynthOptions& opt, Synthesis& out, std::string& err);

/// Packet choice of a transfer u -> v.
enum class Choice {
  forward_potential,  ///< Algorithm 1: the packet u has and v lacks that most of v's
                      ///< neighbours lack; ties: the lowest packet id
  lowest,             ///< the lowest packet id u has and v lacks
  rarest              ///< ours: Algorithm 1 with ties broken by the fewest holders in the
                      ///< whole network (then the lowest id), BitTorrent's rarest first
};

/// The result of running a broadcast in the model.
struct Run {
  std::string algorithm;
  int64_t steps = 0;            ///< T
  int64_t transfers = 0;        ///< packets moved (useful ones: every baseline moves a packet only to a node lacking it)
  std::vector<int> active;      ///< active edges per step
  std::vector<Step> trace;      ///< every transfer, when asked for
  double ae() const { return steps ? double(transfers) / double(steps) : 0; }  ///< mean active edges
};

/// What a step adds to its frame's transfers (our hybrids; `none` is the paper's BBS).
enum class Fill {
  none,
  greedy,  ///< transfers on free edges, nodes in BFS order (as run_greedy)
  maximum  ///< then grown to a maximum matching of the useful edges (Edmonds, Boost.Graph)
};

/// Replays `frames` cyclically (step t uses frame t mod F) with packet choice `choice`;
/// `fill` adds transfers on the edges the frame leaves idle.
/// Stops when every node holds all N packets. Returns false (err set) when a whole cycle
/// moves nothing before the end (frames that cannot finish).
bool run_frames(const Graph& g, int root, int packets, const std::vector<Frame>& frames, Choice choice, Fill fill,
                bool keep_trace, Run& out, std::string& err);

/// Our hybrid: the best (least T, then the first) of ten runs, all with rarest-first packet
/// choice. Four replay frames: {BFS-oriented, alternately oriented frames} x {greedy fill,
/// maximum fill}. Six use no frames, the *parity matching* (docs/bbs.md): in step t the nodes
/// at even hop distance from the root send when t is even, the odd ones when t is odd (on a
/// non-bipartite graph: two balanced sides with a large cut that still connects the graph),
/// and the step is a maximum matching of the useful sender -> receiver arcs (a greedy seed,
/// then augmenting paths), for three seed orders x {no fill, greedy fill of the idle pairs}. Its
/// `algorithm` names the winner, e.g. "Hybrid(alternate+max)" or "Hybrid(parity/tight+fill)".
/// A portfolio is legitimate here because synthesis is offline and the model is exact: the
/// chosen run is the schedule.
bool run_hybrid(const Graph& g, int root, int packets, const std::vector<Frame>& bfs_frames,
                const std::vector<Frame>& alternate_frames, bool keep_trace, Run& out, std::string& err);

/// One run of the parity-matching family (ours; docs/bbs.md "Our hybrid"). Step t: the
/// senders are the nodes on side t mod 2, the receivers the others; on a bipartite graph the
/// sides are the hop-distance parities from the root (every node alternates sending and
/// receiving, the rhythm that carries a packet one hop per step), otherwise two balanced
/// sides whose cut edges connect the graph (a local search; the distance parities when it
/// fails). The step's transfers are a maximum matching of the useful arcs sender -> receiver
/// (the sender holds a packet the receiver lacks): a greedy seed in `seed` order, then
/// augmenting paths (Kuhn) until none is left; with `fill`, the pairs left idle then get
/// greedy transfers in any direction (as run_greedy). Packets: rarest first (Choice::rarest).
enum class Seed {
  deficit,  ///< receivers holding the fewest packets first (ties: farther from the root); sender: the one holding the most
  tight,    ///< receivers with the fewest useful senders first (ties: fewest packets); sender: the one holding the most
  scarce    ///< receivers as `deficit`; sender: the one useful to the fewest receivers
};
bool run_parity(const Graph& g, int root, int packets, Seed seed, bool fill, bool keep_trace, Run& out, std::string& err);

/// Streams (ours, docs/bbs.md "Streams"): the frames' arcs split into K arc-disjoint
/// spanning arborescences of the slot multigraph (one arc per (frame, arc) pair: capacity
/// 1/F of a step), K the least root -> node connectivity of that multigraph (Edmonds'
/// branching theorem: K such arborescences exist). Packet q travels down arborescence
/// q mod K, so the broadcast runs at K packets per cycle of F steps whatever the greedy
/// packet rules do (the paper's BFS-oriented frames have K/F = 1/4 on the 2D grids; the
/// LP-oriented ones 1/2, the model's bound). Built by Lovasz's proof of the theorem: each
/// arborescence grows arc by arc in order of arrival time (the earliest step its packets can
/// reach the arc's head through the cycle), an arc kept only if every node is still
/// K-1-j arc-connected from the root without it (checked at the arc's head alone: a cut
/// that the removal breaks contains it). Arcs into the root are never used.
struct Streams {
  int count = 0;                       ///< K (0: some node is unreachable)
  std::vector<std::vector<int>> tag;   ///< [frame][arc] its stream, -1 when unused
  int64_t depth = 0;                   ///< the latest first-arrival step over streams and nodes
  int64_t checks = 0;                  ///< connectivity checks made (the cost of the packing)
  int64_t work = 0;                    ///< node visits of the local search (its cost)
  int64_t steps = 0;                   ///< T for the `packets` it was tuned for (max over streams of F (n_j - 1) + depth_j)
};
/// Errors: root outside 0..P-1, no frames, a node that no cycle reaches (K = 0), more than
/// `max_checks` connectivity checks (each costs O(K * arcs)), an estimated packing cost above
/// 3e9 arc visits (2 P K^2 / 2 * arcs: refused, not run).
/// `packets` (N) weighs the local search's objective, T = max over streams j of F (n_j - 1) +
/// depth_j with n_j the packets of stream j; `work_budget` caps it (node visits).
bool pack_streams(const Graph& g, int root, int packets, const std::vector<Frame>& frames, Streams& out,
                  std::string& err, int64_t work_budget = int64_t(1e8), int64_t max_checks = 200000,
                  const Streams* start = nullptr);  ///< start: a packing of the same arcs (frames reordered): only the search runs

/// Another optimum of the balanced LP with denominator `l` (ours, docs/bbs.md "Streams"):
/// x = l O rounded to y in {floor(x), ceil(x)} per arc with every node's in-degree C l kept
/// exactly and its out-degree at most l - C l (a bipartite flow, Boost.Graph's edmonds_karp_max_flow; the
/// fractional x - floor(x) is such a flow, so an integral one exists). O' = y / l then meets
/// Eq. 6-8 and 14 with the same C. Errors: C l not an integer; `lp` breaking Eq. 7 or 14.
/// `seed` != 0 shuffles the order the flow sees the arcs in: another rounding.
bool round_lp(const Graph& g, const LpSolution& lp, int64_t l, LpSolution& out, std::string& err, uint64_t seed = 0);

/// The streams schedule (ours, docs/bbs.md "Streams"): the LP's frames oriented as the LP
/// directs (`Orient::lp`: every node's in-rate C = 1/2 on the grids, every node reachable at
/// that rate), packed into streams; a portfolio of 8 colourings of the multigraph (seed 0:
/// synthesize_bbs's; up to 64 while the search stays cheap) x 6 cyclic frame orders, the least T for `opt.packets` kept. The LP is
/// solved once; when its cycle exceeds 12 frames (the 3D grids 4x8x16, 8x8x8, 8x8x16: l =
/// 18 or more) it is rounded (round_lp) to l = the maximum degree rounded up to even.
/// Errors: those of synthesize_bbs and pack_streams; a cycle still above 12 frames.
struct StreamSynthesis {
  Synthesis syn;        ///< the LP, and the chosen frames in cycle order
  Streams streams;
  int trials = 0;
  uint64_t colour_seed = 0;
  std::vector<int> order;  ///< the chosen cycle order of the seed's frames
  double seconds = 0;      ///< the whole search, LP included
};
bool synthesize_streams(const Graph& g, const SynthOptions& opt, StreamSynthesis& out, std::string& err);

/// Replays `frames` cyclically with the stream rule: an arc of stream j carries the lowest
/// packet q = j (mod K) its sender holds and its receiver lacks (down an arborescence every
/// node holds a prefix of each stream, so this is O(1) per arc). Unused arcs stay idle.
/// Fails (err) when a whole cycle moves nothing before the end.
bool run_streams(const Graph& g, int root, int packets, const std::vector<Frame>& frames, const Streams& s,
                 bool keep_trace, Run& out, std::string& err);

/// Baselines of Sec. 3.1 in the same model (docs/bbs.md gives the exact rules chosen):
/// Greedy (each step a maximal matching built in BFS order: a free node holding data sends
/// to its farthest free neighbour lacking some of it, the lowest packet id it lacks);
/// Binary Tree (pipelined broadcast down the BFS tree, parent = the lowest-id neighbour one
/// hop closer to the root: 2 children at most on 2D grids, 3 on 3D grids; a periodic
/// schedule of period c + 1, c the most children, so T = (c + 1) N + O(depth)).
bool run_greedy(const Graph& g, int root, int packets, bool keep_trace, Run& out, std::string& err);
bool run_tree(const Graph& g, int root, int packets, bool keep_trace, Run& out, std::string& err);

/// SRDA (Sec. 3.1, "Scatter Recursive Doubling Allgather"; our reading, docs/bbs.md): phase
/// 1 scatters segment i = packets [floor(iN/P), floor((i+1)N/P)) to node i, pipelined down
/// the BFS tree of run_tree (each step a matching built the deepest nodes first, the root last:
/// a node forwards to its free child with the smallest backlog the packet with the deepest
/// destination; nodes on the way keep a copy); phase 2, once every node holds its segment,
/// is the allgather among neighbours: each step the greedy matching of run_greedy, until
/// every node holds all N. Moves exactly (P-1) N packets.
bool run_srda(const Graph& g, int root, int packets, bool keep_trace, Run& out, std::string& err);

/// The independent checker: replays `trace` against the model's rules (every transfer on
/// an edge of G, each node in at most one transfer per step, the sender holds the packet
/// at the start of the step) and the broadcast postcondition (every node ends with all N
/// packets). Returns "" when all hold, else the first violation ("step S: ...").
std::string check_trace(const Graph& g, int root, int packets, const std::vector<Step>& trace);

}  // namespace bine::synth
