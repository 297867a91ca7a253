// Building the table of a `frames` schedule: the frames' packet rule run in the BBS model
// (Lu et al., "A New Broadcast Model for Several Network Topologies", Sec. 2.1-2.3; the
// rules in docs/language.md, "frames"), compressed into bine/frames.hpp's FramesTable.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ast.h"
#include "bine/frames.hpp"

namespace bine {

/// The first `frames` statement of `b` (nested bodies included), or null.
const Stmt* find_frames(const Block& b);

/// The condition a frames schedule puts on p, as `check` and generated code report it:
/// "p == P (the node count of the frames' topology)".
std::string frames_condition(const FramesData& f);

/// A frames table with its storage. `view()` is valid while the object lives unmoved.
struct FramesTableData {
  int64_t nodes = 0, frames = 0, steps = 0, packets = 0;
  std::vector<int32_t> slot;   ///< [nodes * frames]
  std::vector<int32_t> entry;  ///< [4 * entries]
  std::vector<int32_t> run;    ///< [4 * runs]
  int64_t transfers = 0;       ///< packets moved in all (= (nodes - 1) * packets)
  FramesTable view() const { return FramesTable{nodes, frames, steps, slot.data(), entry.data(), run.data()}; }
};

/// Why a frames table could not be built: the step where the broadcast stalled (a whole
/// cycle of F steps moved no packet) or hit the step limit, and a node still lacking a
/// packet there.
struct FramesStall {
  int64_t step = 0, node = 0, packet = 0;
};

/// The most steps a frames schedule may take (the instance's round limit).
constexpr int64_t kMaxFrameSteps = 1 << 20;

/// Runs `f` for `packets` (N >= 1) packets from node f.root: step t uses frame t mod F; each
/// arc u>v whose sender holds a packet the receiver lacks (at the start of the step)
/// carries the packet the rule picks; the run ends after the first step at which every
/// node holds all N. Time O(T * (arcs per frame) * N / 64) for `lowest`, times the
/// receiver's degree * 64 for `potential`; memory O(P * N / 8 + T * P / F * 4) bytes while
/// building. Returns false with `err` (and `stall`) set when a cycle moves nothing before
/// the end or T would exceed kMaxFrameSteps; `f` must have passed sema (ids in range, frames
/// matchings of links).
bool build_frames_table(const FramesData& f, int64_t packets, FramesTableData& out, std::string& err,
                        FramesStall* stall = nullptr);

}  // namespace bine
