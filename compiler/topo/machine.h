// Machine models and rank maps (docs/topology.md): where every rank of a job runs, as ids
// at the levels node, switch (router, leaf switch) and group (dragonfly group, fat-tree
// pod, torus plane), built from one spec string: a regular topology (`ppn=K`,
// `dragonfly:G,R,N`, `fattree:K`, `torus:X,Y,Z`) or a real allocation (a host list in rank
// order plus a node map such as Leonardo's).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace bine {

/// Where one rank runs. Ids are dense from 0 in order of first appearance in rank order;
/// a missing level coincides with the level below (e.g. `ppn=K`: switch = group = node).
struct Location {
  int64_t node = 0;
  int64_t sw = 0;     ///< switch / router the node hangs from
  int64_t group = 0;  ///< dragonfly group, fat-tree pod, torus z-plane, Leonardo cell
};

/// The link class a message between two ranks uses (the Bine trees paper, Sec. 2.4 and
/// Sec. 5: global links connect different dragonfly groups).
enum class LinkClass { intra_node = 0, intra_group = 1, global = 2 };
constexpr int kLinkClasses = 3;
/// "intra_node", "intra_group", "global".
const char* link_class_name(LinkClass c);

/// A rank -> location map for exactly `loc.size()` ranks.
struct RankMap {
  std::string spec;         ///< the spec it was built from
  std::string kind;         ///< ppn, dragonfly, fattree, torus, hosts
  std::vector<Location> loc;  ///< [rank]
  int64_t nodes = 0, switches = 0, groups = 0;  ///< distinct ids used by the ranks
  int64_t p() const { return int64_t(loc.size()); }
  /// The class of a message from rank a to rank b (both in [0, p)).
  LinkClass link_class(int64_t a, int64_t b) const {
    const Location &x = loc[size_t(a)], &y = loc[size_t(b)];
    if (x.node == y.node) return LinkClass::intra_node;
    return x.group == y.group ? LinkClass::intra_group : LinkClass::global;
  }
  /// "dragonfly:4,2,2: 8 ranks on 8 nodes, 4 switches, 2 groups".
  std::string describe() const;
};

/// Builds the rank map of `p` ranks (p >= 1) from `spec` (grammar in docs/topology.md).
/// Regular topologies place rank r in slot r (ppn consecutive ranks per node, nodes
/// filling switches, switches filling groups) and need p <= capacity; an allocation
/// (`hosts:` / `leonardo:`) needs p == hosts * ppn. Returns false with `err` set on any bad
/// input: an unparsable spec ("machine spec 'S': ..."), an unreadable file, an unknown host
/// or a malformed map line ("FILE:LINE: ..."), p not matching. Never throws.
bool build_rank_map(const std::string& spec, int64_t p, RankMap& out, std::string& err);

/// The same from texts instead of files (tests): `hosts` in rank order, one per line, and
/// the node map; `hosts_name`/`map_name` name them in errors.
bool rank_map_from_allocation(const std::string& hosts_name, const std::string& hosts, const std::string& map_name,
                              const std::string& map, int64_t ppn, int64_t p, RankMap& out, std::string& err);

}  // namespace bine
