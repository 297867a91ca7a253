// Traffic per link class (docs/topology.md, "Traffic"): the bytes and messages one
// Schedule instance puts on intra-node, intra-group and global links, per round and in
// total, for a rank map (machine.h). Message sizes follow the cost model's rule
// (cost.h, block_elements: the sender's block set, n elements split into B balanced
// blocks, times the element size); every SendOp is one message (a `segment`ed message
// still counts once).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "cost.h"
#include "machine.h"
#include "schedule.h"

namespace bine {

/// Bytes and messages on one link class.
struct LinkTraffic {
  uint64_t bytes = 0;
  int64_t messages = 0;
};
using ClassTraffic = std::array<LinkTraffic, kLinkClasses>;  ///< indexed by LinkClass

struct TrafficResult {
  std::vector<ClassTraffic> rounds;  ///< [round]
  ClassTraffic total;
  /// On a torus (RankMap::torus): bytes times links crossed and messages times links
  /// crossed (RankMap::hops), in total: the load a simulator puts on all the torus's
  /// links together. Zero elsewhere.
  LinkTraffic hops;
  bool torus = false;
  /// Bytes on global links (total[global].bytes).
  uint64_t global_bytes() const { return total[size_t(LinkClass::global)].bytes; }
};

/// Counts the traffic of `s` for the vector `v` on `m`. Needs m.p() == s.p (else
/// throws std::invalid_argument: a caller bug, the CLI checks p first). Deterministic.
TrafficResult count_traffic(const Schedule& s, const RankMap& m, const CostVector& v);

/// Readable report: the machine, per round and total bytes/messages per link class.
std::string traffic_text(const Schedule& s, const RankMap& m, const CostVector& v, const TrafficResult& t);
/// The same as one JSON object; deterministic.
std::string traffic_json(const Schedule& s, const RankMap& m, const CostVector& v, const TrafficResult& t);

}  // namespace bine
