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
  std::array<int64_t, 3> coord{{-1, -1, -1}};  ///< torus node coordinates (x, y, z); -1: not on a torus
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
  /// Torus ring sizes (X, Y, Z) when the machine is a torus (`torus:X,Y,Z`, or an
  /// allocation with `torus=XxYxZ` and X/Y/Z coordinates in its map); {0, 0, 0} otherwise.
  std::array<int64_t, 3> torus{{0, 0, 0}};
  int64_t p() const { return int64_t(loc.size()); }
  /// Links a message from rank a to rank b crosses on a torus with minimal routing,
  /// dimension by dimension (SimGrid's TORUS routing; ties of half a ring cross as many
  /// links either way): the sum over x, y, z of min(|d|, L - |d|); 0 on one node; -1 when
  /// the machine is not a torus.
  int64_t hops(int64_t a, int64_t b) const {
    if (torus[0] == 0) return -1;
    const Location &x = loc[size_t(a)], &y = loc[size_t(b)];
    int64_t h = 0;
    for (size_t d = 0; d < 3; ++d) {
      const int64_t diff = x.coord[d] > y.coord[d] ? x.coord[d] - y.coord[d] : y.coord[d] - x.coord[d];
      h += diff < torus[d] - diff ? diff : torus[d] - diff;
    }
    return h;
  }
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
/// the node map; `hosts_name`/`map_name` name them in errors. `torus` (ring sizes, or
/// zeros): place the nodes on a torus by their map lines' X, Y, Z keys (each node of the
/// allocation needs them, inside the rings). A host matches a node by name, after its
/// domain suffix is dropped (from the first '.': `lrdn0155.leonardo.local` is `lrdn0155`);
/// else, when it is `prefix` followed by digits only (`lrdn0042`), the node whose NODE is
/// those digits' number (`0042`); anything else is an unknown host (docs/topology.md).
bool rank_map_from_allocation(const std::string& hosts_name, const std::string& hosts, const std::string& map_name,
                              const std::string& map, int64_t ppn, int64_t p, RankMap& out, std::string& err,
                              const std::array<int64_t, 3>& torus = {{0, 0, 0}}, const std::string& prefix = "lrdn");

}  // namespace bine
