// Undirected network topologies for schedule synthesis (docs/bbs.md): the graph G of the BBS
// paper (Lu et al., "A New Broadcast Model for Several Network Topologies", Sec. 2.1), built
// from one spec string: grid:AxB[xC...], torus:AxB[xC...], hypercube:D, 16k3,
// dragonfly:A,H, edges:FILE.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bine::synth {

/// A connected, undirected, unweighted simple graph on nodes 0..n-1.
struct Graph {
  std::string spec;                       ///< the spec it was built from
  int n = 0;                              ///< number of nodes P
  std::vector<std::pair<int, int>> edges;  ///< undirected edges (u < v), sorted
  std::vector<std::vector<int>> adj;       ///< [node] neighbours, ascending
  /// Hop distance from `root` to every node (-1: unreachable).
  std::vector<int> bfs_dist(int root) const;
  /// True when the nodes 2-colour (grids, even tori, hypercubes).
  bool bipartite() const;
  int max_degree() const;
};

/// Builds `g` from `spec`:
///   grid:AxB[xC...]   mesh, node id row-major (last coordinate fastest); node 0 a corner
///   torus:AxB[xC...]  the same with wrap-around links (a dimension of 2 gets one link)
///   hypercube:D       2^D nodes, i ~ i xor 2^b
///   16k3              the 16-node 3-regular graph of least mean path length used as 16K3
///                     (docs/bbs.md says which)
///   dragonfly:A,H     A routers per group (a clique), H global links per router, A*H+1
///                     groups, one global link between every pair of groups (Kim et al. 2008)
///   edges:FILE        one edge "u v" per line (0-based ids, '#' comments)
/// Returns false with `err` set on a bad spec, a malformed or unreadable edge list
/// ("FILE:LINE: ..."), a self loop, a duplicate edge, or a disconnected graph. Never throws.
bool build_topology(const std::string& spec, Graph& g, std::string& err);

/// The edge-list reader of `edges:FILE` on a text; `name` names it in errors.
bool graph_from_edge_list(const std::string& name, const std::string& text, Graph& g, std::string& err);

}  // namespace bine::synth
