// The table of a `frames` schedule (BBS broadcast, docs/language.md "frames"): which packet
// each node sends or receives in each step, stored per node and frame slot as arithmetic
// runs over the frame cycles, so its size grows with the frames, not with the steps.
//
// The compiler builds it (compiler/ir/frames.h, build_frames_table) by running the frames'
// packet rule in the BBS model (Lu et al., "A New Broadcast Model for Several Network
// Topologies", Sec. 2.1-2.3: synchronous steps, step t runs frame t mod F, each node in at
// most one transfer a step); the interpreter that the verifier checks and the generated
// code both read it through frames_op() below, so what is verified is what runs.
#pragma once
#include <cstdint>

namespace bine {

/// A read-only view of a frames table (arrays owned by the compiler or by generated code).
struct FramesTable {
  int64_t nodes = 0;   ///< P
  int64_t frames = 0;  ///< F: the cycle length in steps
  int64_t steps = 0;   ///< T: steps until every node holds every packet
  /// [node * F + f] the node's entry for frame slot f (its one arc in frame f), or -1.
  const int32_t* slot = nullptr;
  /// [4 * e] an entry: {peer node, 1 = send / 0 = receive, first run, end of runs}.
  const int32_t* entry = nullptr;
  /// [4 * j] a run: {first cycle c0, cycles n, packet at c0, packet step d}: in cycle
  /// c0 + i (i < n) the entry's arc carries packet (at c0) + i * d; other cycles: idle.
  const int32_t* run = nullptr;
};

/// One transfer of a node in one step.
struct FramesOp {
  int64_t peer = -1;   ///< the other node
  bool send = false;   ///< true: the node sends `packet` to `peer`; false: receives it
  int64_t packet = 0;  ///< the packet (block) index, in [0, N)
};

/// The transfer of `node` in step `t` (0 <= t < steps): false when the node is idle.
/// O(runs of the entry), a handful for every frames table the compiler builds.
inline bool frames_op(const FramesTable& tab, int64_t node, int64_t t, FramesOp& op) {
  const int32_t e = tab.slot[node * tab.frames + t % tab.frames];
  if (e < 0) return false;
  const int64_t c = t / tab.frames;
  const int32_t* en = tab.entry + 4 * int64_t(e);
  for (int32_t j = en[2]; j < en[3]; ++j) {
    const int32_t* u = tab.run + 4 * int64_t(j);
    if (c < u[0]) return false;  // runs are in cycle order
    if (c < int64_t(u[0]) + u[1]) {
      op.peer = en[0];
      op.send = en[1] != 0;
      op.packet = u[2] + (c - u[0]) * int64_t(u[3]);
      return true;
    }
  }
  return false;
}

}  // namespace bine
