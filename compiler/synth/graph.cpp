#include "graph.h"

#include <algorithm>
#include <fstream>
#include <queue>
#include <set>
#include <sstream>

namespace bine::synth {

std::vector<int> Graph::bfs_dist(int root) const {
  std::vector<int> d(size_t(n), -1);
  if (root < 0 || root >= n) return d;
  std::queue<int> q;
  d[size_t(root)] = 0;
  q.push(root);
  while (!q.empty()) {
    int u = q.front();
    q.pop();
    for (int v : adj[size_t(u)])
      if (d[size_t(v)] < 0) d[size_t(v)] = d[size_t(u)] + 1, q.push(v);
  }
  return d;
}

bool Graph::bipartite() const {
  std::vector<int> side(size_t(n), -1);
  for (int s = 0; s < n; ++s) {
    if (side[size_t(s)] >= 0) continue;
    side[size_t(s)] = 0;
    std::queue<int> q;
    q.push(s);
    while (!q.empty()) {
      int u = q.front();
      q.pop();
      for (int v : adj[size_t(u)]) {
        if (side[size_t(v)] < 0) side[size_t(v)] = 1 - side[size_t(u)], q.push(v);
        else if (side[size_t(v)] == side[size_t(u)]) return false;
      }
    }
  }
  return true;
}

int Graph::max_degree() const {
  size_t m = 0;
  for (const auto& a : adj) m = std::max(m, a.size());
  return int(m);
}

namespace {

// Finishes g from an edge set: checks simple + connected, fills adj. `what` prefixes errors.
bool finish(Graph& g, std::set<std::pair<int, int>> es, const std::string& what, std::string& err) {
  if (g.n < 1) return err = what + ": no nodes", false;
  g.edges.assign(es.begin(), es.end());
  g.adj.assign(size_t(g.n), {});
  for (auto [u, v] : g.edges) g.adj[size_t(u)].push_back(v), g.adj[size_t(v)].push_back(u);
  for (auto& a : g.adj) std::sort(a.begin(), a.end());
  std::vector<int> d = g.bfs_dist(0);
  for (int i = 0; i < g.n; ++i)
    if (d[size_t(i)] < 0)
      return err = what + ": the graph is disconnected (node " + std::to_string(i) + " is unreachable from node 0)",
             false;
  return true;
}

bool parse_dims(const std::string& s, char sep, std::vector<int>& dims) {
  dims.clear();
  if (s.empty() || s.back() == sep) return false;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, sep)) {
    if (tok.empty() || tok.size() > 6 || tok.find_first_not_of("0123456789") != std::string::npos) return false;
    int v = std::stoi(tok);
    if (v < 1) return false;
    dims.push_back(v);
  }
  return !dims.empty();
}

bool mesh(const std::vector<int>& dims, bool wrap, Graph& g, const std::string& what, std::string& err) {
  int64_t n = 1;
  for (int d : dims) {
    n *= d;
    if (n > (1 << 20)) return err = what + ": more than 2^20 nodes", false;
  }
  g.n = int(n);
  std::set<std::pair<int, int>> es;
  std::vector<int> c(dims.size(), 0);
  for (int id = 0; id < g.n; ++id) {
    int stride = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      int nb = -1;
      if (c[k] + 1 < dims[k]) nb = id + stride;
      else if (wrap && dims[k] > 2) nb = id - (dims[k] - 1) * stride;
      if (nb >= 0) es.insert({std::min(id, nb), std::max(id, nb)});
      stride *= dims[k];
    }
    for (size_t k = dims.size(); k-- > 0;) {  // increment the row-major counter
      if (++c[k] < dims[k]) break;
      c[k] = 0;
    }
  }
  return finish(g, es, what, err);
}

// 16K3: a 3-regular graph on 16 nodes of mean path length 2.2 (the least possible for
// (16, 3); found by edge-switch search, see docs/bbs.md). The paper's exact graph (its
// ref. [23]) is not given.
const int k16k3[24][2] = {{0, 4}, {0, 8}, {0, 15}, {1, 2}, {1, 10}, {1, 11}, {2, 4}, {2, 14}, {3, 6}, {3, 10}, {3, 12}, {4, 13}, {5, 7}, {5, 8}, {5, 11}, {6, 8}, {6, 14}, {7, 9}, {7, 14}, {9, 12}, {9, 15}, {10, 15}, {11, 13}, {12, 13}};

}  // namespace

bool graph_from_edge_list(const std::string& name, const std::string& text, Graph& g, std::string& err) {
  g = Graph{};
  g.spec = "edges:" + name;
  std::set<std::pair<int, int>> es;
  std::istringstream in(text);
  std::string line;
  int lineno = 0, maxid = -1;
  while (std::getline(in, line)) {
    ++lineno;
    if (size_t h = line.find('#'); h != std::string::npos) line.resize(h);
    std::istringstream ls(line);
    std::string a, b, extra;
    if (!(ls >> a)) continue;
    const std::string at = name + ":" + std::to_string(lineno) + ": ";
    auto num = [](const std::string& s) { return !s.empty() && s.size() <= 7 && s.find_first_not_of("0123456789") == std::string::npos; };
    if (!(ls >> b) || (ls >> extra)) return err = at + "expected two node ids 'u v', got '" + line + "'", false;
    if (!num(a) || !num(b)) return err = at + "node ids are integers 0..9999999, got '" + line + "'", false;
    int u = std::stoi(a), v = std::stoi(b);
    if (u == v) return err = at + "self loop on node " + a, false;
    if (!es.insert({std::min(u, v), std::max(u, v)}).second) return err = at + "duplicate edge " + a + " " + b, false;
    maxid = std::max({maxid, u, v});
  }
  if (es.empty()) return err = name + ": no edges", false;
  g.n = maxid + 1;
  return finish(g, es, "topology '" + g.spec + "'", err);
}

bool build_topology(const std::string& spec, Graph& g, std::string& err) {
  g = Graph{};
  const std::string what = "topology '" + spec + "'";
  size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon), arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  std::vector<int> dims;
  bool ok = false;
  if (kind == "grid" || kind == "torus") {
    if (!parse_dims(arg, 'x', dims)) return err = what + ": expected " + kind + ":AxB[xC...] with sizes >= 1", false;
    ok = mesh(dims, kind == "torus", g, what, err);
  } else if (kind == "hypercube") {
    if (!parse_dims(arg, ',', dims) || dims.size() != 1 || dims[0] > 20)
      return err = what + ": expected hypercube:D with 1 <= D <= 20", false;
    g.n = 1 << dims[0];
    std::set<std::pair<int, int>> es;
    for (int i = 0; i < g.n; ++i)
      for (int b = 0; b < dims[0]; ++b)
        if (!(i >> b & 1)) es.insert({i, i | 1 << b});
    ok = finish(g, es, what, err);
  } else if (kind == "16k3" && colon == std::string::npos) {
    g.n = 16;
    std::set<std::pair<int, int>> es;
    for (auto& e : k16k3) es.insert({e[0], e[1]});
    ok = finish(g, es, what, err);
  } else if (kind == "dragonfly") {
    if (!parse_dims(arg, ',', dims) || dims.size() != 2 || dims[0] * (dims[0] * dims[1] + 1) > (1 << 20))
      return err = what + ": expected dragonfly:A,H (A routers per group, H global links per router)", false;
    const int a = dims[0], h = dims[1], groups = a * h + 1;
    g.n = a * groups;
    std::set<std::pair<int, int>> es;
    for (int gi = 0; gi < groups; ++gi) {
      for (int x = 0; x < a; ++x)
        for (int y = x + 1; y < a; ++y) es.insert({gi * a + x, gi * a + y});
      for (int q = 0; q < a * h; ++q) {  // global port q of group gi -> group gt
        int gt = q < gi ? q : q + 1, qt = gi < gt ? gi : gi - 1;
        int u = gi * a + q / h, v = gt * a + qt / h;
        es.insert({std::min(u, v), std::max(u, v)});
      }
    }
    ok = finish(g, es, what, err);
  } else if (kind == "edges" && !arg.empty()) {
    std::ifstream f(arg);
    if (!f) return err = what + ": cannot read '" + arg + "'", false;
    std::stringstream ss;
    ss << f.rdbuf();
    ok = graph_from_edge_list(arg, ss.str(), g, err);
  } else {
    return err = what + ": unknown topology (grid:AxB[xC], torus:AxB[xC], hypercube:D, 16k3, dragonfly:A,H, edges:FILE)",
           false;
  }
  g.spec = spec;
  return ok;
}

}  // namespace bine::synth
