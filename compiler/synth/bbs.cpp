#include "bbs.h"

#include <glpk.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/max_cardinality_matching.hpp>
#include <boost/graph/edmonds_karp_max_flow.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <random>
#include <tuple>

namespace bine::synth {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best rational approximation of x with denominator <= maxden (continued fractions).
bool to_rational(double x, int64_t maxden, int64_t& num, int64_t& den) {
  if (x < 0 || !std::isfinite(x)) return false;
  int64_t h0 = 0, h1 = 1, k0 = 1, k1 = 0;
  double r = x;
  for (int it = 0; it < 64; ++it) {
    double a = std::floor(r);
    if (a > 1e15) break;
    int64_t ai = int64_t(a);
    int64_t h2 = ai * h1 + h0, k2 = ai * k1 + k0;
    if (k2 > maxden) break;
    h0 = h1, h1 = h2, k0 = k1, k1 = k2;
    if (std::fabs(double(h1) / double(k1) - x) < 1e-12) break;
    if (r - a < 1e-15) break;
    r = 1.0 / (r - a);
  }
  if (k1 == 0 || std::fabs(double(h1) / double(k1) - x) > 1e-9) return false;
  num = h1, den = k1;
  return true;
}

}  // namespace

bool solve_balanced_lp(const Graph& g, int root, Balance bal, LpSolution& out, std::string& err) {
  out = LpSolution{};
  const int P = g.n;
  std::vector<int> af, at;  // arcs
  for (auto [u, v] : g.edges) {
    for (auto [a, b] : {std::pair<int, int>{u, v}, std::pair<int, int>{v, u}}) {
      if (bal == Balance::non_root && b == root) continue;  // the root receives nothing
      af.push_back(a), at.push_back(b);
    }
  }
  const int A = int(af.size()), colC = A + 1;
  std::vector<std::vector<int>> in(static_cast<size_t>(P)), outa(static_cast<size_t>(P));
  for (int a = 0; a < A; ++a) in[size_t(at[size_t(a)])].push_back(a), outa[size_t(af[size_t(a)])].push_back(a);

  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MAX);
  // Column A + 2 is t, the least occupancy of an edge (both directions): the second
  // criterion that picks one optimum among many (Sec. 2.3: "a particular optimizer must be
  // selected"); a vertex optimum of C alone may use a perfect matching only, whose frames
  // cannot spread data. Objective: kWeight * C + t; C is then checked to equal the optimum
  // of C alone.
  const int colT = A + 2;
  glp_add_cols(lp, A + 2);
  for (int c = 1; c <= A + 2; ++c) glp_set_col_bnds(lp, c, GLP_DB, 0.0, 1.0);
  glp_set_obj_coef(lp, colC, 1.0);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  int row = 0;
  auto add_row = [&](int type, double lo, double hi) {
    glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, ++row, type, lo, hi);
  };
  auto put = [&](int col, double v) { ia.push_back(row), ja.push_back(col), ar.push_back(v); };
  // Eq. 6: sum O <= floor(P/2).
  add_row(GLP_UP, 0.0, double(P / 2));
  for (int a = 0; a < A; ++a) put(a + 1, 1.0);
  for (int i = 0; i < P; ++i) {
    // Eq. 7: out + in <= 1.
    add_row(GLP_UP, 0.0, 1.0);
    for (int a : outa[size_t(i)]) put(a + 1, 1.0);
    for (int a : in[size_t(i)]) put(a + 1, 1.0);
    // Eq. 14: in = C (balanced).
    if (bal == Balance::paper || i != root) {
      add_row(GLP_FX, 0.0, 0.0);
      for (int a : in[size_t(i)]) put(a + 1, 1.0);
      put(colC, -1.0);
    }
    // Eq. 8: O(i,j) <= in(i) (the root holds all data from the start; in `paper` mode the
    // equation is applied as printed, to every node).
    if (bal == Balance::paper || i != root)
      for (int a : outa[size_t(i)]) {
        add_row(GLP_UP, 0.0, 0.0);
        put(a + 1, 1.0);
        for (int b : in[size_t(i)]) put(b + 1, -1.0);
      }
  }
  // t <= O(u,v) + O(v,u) for every edge.
  {
    std::vector<std::vector<int>> of_edge(g.edges.size());
    for (int a = 0; a < A; ++a) {
      int u = std::min(af[size_t(a)], at[size_t(a)]), v = std::max(af[size_t(a)], at[size_t(a)]);
      size_t e = size_t(std::lower_bound(g.edges.begin(), g.edges.end(), std::pair<int, int>{u, v}) - g.edges.begin());
      of_edge[e].push_back(a);
    }
    for (const auto& arcs : of_edge) {
      add_row(GLP_LO, 0.0, 0.0);
      for (int a : arcs) put(a + 1, 1.0);
      put(colT, -1.0);
    }
  }
  glp_load_matrix(lp, int(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  out.vars = A + 2, out.rows = row;
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  auto solve = [&](bool exact) {
    int rc = glp_simplex(lp, &parm);
    if (rc == 0 && exact) rc = glp_exact(lp, &parm);  // exact rational simplex from the float basis
    if (rc != 0 || glp_get_status(lp) != GLP_OPT)
      return err = "LP: GLPK found no optimum (glp_simplex/glp_exact code " + std::to_string(rc) + ")", false;
    return true;
  };
  // Stage 1 (C alone) in floating point: only its optimum is kept, as a rational, and
  // stage 2's exact C must equal it.
  if (!solve(false)) return glp_delete_prob(lp), false;
  const double c_alone = glp_get_obj_val(lp);
  const double kWeight = 4.0 * double(P);
  glp_set_obj_coef(lp, colC, kWeight);
  glp_set_obj_coef(lp, colT, 1.0);
  if (!solve(true)) return glp_delete_prob(lp), false;
  std::vector<double> x(size_t(A) + 1);
  for (int c = 1; c <= A + 1; ++c) x[size_t(c - 1)] = glp_get_col_prim(lp, c);
  glp_delete_prob(lp);
  int64_t n1, d1;
  if (!to_rational(c_alone, int64_t(1) << 20, n1, d1)) return err = "LP: the optimum C has no denominator <= 2^20", false;

  // Exact rationals over the LCM of the denominators.
  const int64_t maxden = int64_t(1) << 20;
  std::vector<int64_t> num(size_t(A) + 1), den(size_t(A) + 1);
  int64_t l = 1;
  for (size_t c = 0; c <= size_t(A); ++c) {
    if (!to_rational(x[c], maxden, num[c], den[c]))
      return err = "LP: occupancy " + std::to_string(x[c]) + " has no denominator <= 2^20", false;
    l = std::lcm(l, den[c]);
    if (l > (int64_t(1) << 40)) return err = "LP: the LCM of the occupancies' denominators exceeds 2^40", false;
  }
  std::vector<int64_t> k(static_cast<size_t>(A));
  for (int a = 0; a < A; ++a) k[size_t(a)] = num[size_t(a)] * (l / den[size_t(a)]);
  out.c_num = num[size_t(A)], out.c_den = den[size_t(A)];
  if (__int128(out.c_num) * d1 != __int128(n1) * out.c_den)
    return err = "LP: spreading the occupancies lowered C below its optimum " + std::to_string(n1) + "/" + std::to_string(d1), false;
  // Exact re-check of every constraint, scaled by l.
  int64_t total = 0;
  for (int a = 0; a < A; ++a) total += k[size_t(a)];
  bool ok = total <= int64_t(P / 2) * l;
  for (int i = 0; i < P && ok; ++i) {
    int64_t si = 0, so = 0;
    for (int a : in[size_t(i)]) si += k[size_t(a)];
    for (int a : outa[size_t(i)]) so += k[size_t(a)];
    ok = si + so <= l;
    if (bal == Balance::paper || i != root) {
      ok = ok && __int128(si) * out.c_den == __int128(out.c_num) * l;
      for (int a : outa[size_t(i)]) ok = ok && k[size_t(a)] <= si;
    }
  }
  if (!ok) return err = "LP: the recovered rational occupancies violate a constraint (Eq. 6, 7, 8 or 14)", false;
  out.lcm = l;
  for (int a = 0; a < A; ++a)
    if (k[size_t(a)] > 0) out.from.push_back(af[size_t(a)]), out.to.push_back(at[size_t(a)]), out.k.push_back(k[size_t(a)]);
  return true;
}

namespace {

// Proper edge colouring of a multigraph (copies of arcs), Koenig's alternating paths.
// Returns the colour of every copy and the number of colours used.
std::vector<int> colour_multigraph(int P, const std::vector<int>& eu, const std::vector<int>& ev, int delta, int& used) {
  const int E = int(eu.size()), K = std::max(1, 2 * delta - 1);
  std::vector<int> at(size_t(P) * size_t(K), -1), col(size_t(E), -1);
  auto slot = [&](int x, int c) -> int& { return at[size_t(x) * size_t(K) + size_t(c)]; };
  auto other = [&](int e, int x) { return eu[size_t(e)] == x ? ev[size_t(e)] : eu[size_t(e)]; };
  auto set = [&](int e, int c) {
    col[size_t(e)] = c;
    slot(eu[size_t(e)], c) = e;
    slot(ev[size_t(e)], c) = e;
  };
  auto free_at = [&](int x, int lim) {
    for (int c = 0; c < lim; ++c)
      if (slot(x, c) < 0) return c;
    return -1;
  };
  std::vector<int> path;
  for (int e = 0; e < E; ++e) {
    const int u = eu[size_t(e)], v = ev[size_t(e)];
    int a = free_at(u, delta), b = free_at(v, delta);
    if (a >= 0 && slot(v, a) < 0) { set(e, a); continue; }
    if (b >= 0 && slot(u, b) < 0) { set(e, b); continue; }
    if (a >= 0 && b >= 0) {
      path.clear();
      int x = v, c = a;
      while (slot(x, c) >= 0) {
        int f = slot(x, c);
        path.push_back(f);
        x = other(f, x);
        c = c == a ? b : a;
      }
      if (x != u) {  // swap a <-> b on the path: a becomes free at v and stays free at u
        for (int f : path) slot(eu[size_t(f)], col[size_t(f)]) = -1, slot(ev[size_t(f)], col[size_t(f)]) = -1;
        for (int f : path) set(f, col[size_t(f)] == a ? b : a);
        set(e, a);
        continue;
      }
    }
    // Non-bipartite: the path closed an odd cycle. The least colour free at both ends
    // (one exists below 2*delta - 1: each end has at most delta - 1 other edges).
    for (int c = 0; c < K; ++c)
      if (slot(u, c) < 0 && slot(v, c) < 0) { set(e, c); break; }
  }
  used = 0;
  for (int c : col) used = std::max(used, c + 1);
  return col;
}

}  // namespace

bool synthesize_bbs(const Graph& g, const SynthOptions& opt, Synthesis& out, std::string& err) {
  out = Synthesis{};
  if (opt.root < 0 || opt.root >= g.n)
    return err = "root " + std::to_string(opt.root) + " is not a node of " + g.spec + " (nodes 0.." + std::to_string(g.n - 1) + ")", false;
  if (g.n < 2) return err = g.spec + ": a broadcast needs at least 2 nodes", false;
  if (opt.packets < 1) return err = "the packet count N must be at least 1, got " + std::to_string(opt.packets), false;
  auto t0 = std::chrono::steady_clock::now();
  if (opt.lp) out.lp = *opt.lp;
  else if (!solve_balanced_lp(g, opt.root, opt.balance, out.lp, err)) return false;
  out.lp_seconds = seconds_since(t0);

  // Integer multigraph G_m: k(i,j) parallel copies per arc, each remembering its LP direction.
  // When l exceeds kMaxCycle (a vertex optimum with large denominators: 8x8x16 gives
  // l = 14976), the occupancies are rounded down to multiples of 1/kMaxCycle (the paper
  // approximates irrational occupancies from below, Sec. 2.3): Eq. 6 and 7 still hold, the
  // cycle (and the frame table) stays short, the in-rates drop by less than deg/kMaxCycle.
  t0 = std::chrono::steady_clock::now();
  constexpr int64_t kMaxCycle = 64;
  if (out.lp.lcm > kMaxCycle) {
    for (auto& k : out.lp.k) k = int64_t(__int128(k) * kMaxCycle / out.lp.lcm);
    out.lp.lcm = kMaxCycle;
    out.rounded = true;
  }
  std::vector<int> eu, ev;
  std::vector<int64_t> deg(size_t(g.n), 0);
  for (size_t a = 0; a < out.lp.k.size(); ++a) {
    for (int64_t c = 0; c < out.lp.k[a]; ++c) eu.push_back(out.lp.from[a]), ev.push_back(out.lp.to[a]);
    deg[size_t(out.lp.from[a])] += out.lp.k[a], deg[size_t(out.lp.to[a])] += out.lp.k[a];
    if (eu.size() > (size_t(1) << 24)) return err = "multigraph: more than 2^24 edges (LCM " + std::to_string(out.lp.lcm) + ")", false;
  }
  out.max_degree = *std::max_element(deg.begin(), deg.end());
  out.bipartite = g.bipartite();
  if (opt.colour_seed != 0) {  // another colouring of the same multigraph (streams' search)
    std::mt19937_64 rng(opt.colour_seed);
    for (size_t e = eu.size(); e > 1; --e) {
      const size_t x = size_t(rng() % e);
      std::swap(eu[e - 1], eu[x]), std::swap(ev[e - 1], ev[x]);
    }
  }
  std::vector<int> col = colour_multigraph(g.n, eu, ev, int(out.max_degree), out.colours);
  std::vector<Frame> byc(size_t(out.colours));
  std::vector<int> dist = g.bfs_dist(opt.root);
  for (size_t e = 0; e < eu.size(); ++e) {
    int s = eu[e], r = ev[e];
    if (opt.orient == Orient::bfs && dist[size_t(r)] < dist[size_t(s)]) std::swap(s, r);  // away from the root
    byc[size_t(col[e])].push_back({s, r});
  }
  for (auto& f : byc) std::sort(f.begin(), f.end());
  byc.erase(std::remove_if(byc.begin(), byc.end(), [](const Frame& f) { return f.empty(); }), byc.end());
  out.colour_seconds = seconds_since(t0);

  // Alternating orientation (bipartite graphs): step q sends from the side of parity q % 2
  // (by hop distance) to the other, so every node receives every other step; 2F frames,
  // the second F rotated by one so that every colour class runs in both directions.
  if (opt.orient == Orient::alternate && out.bipartite) {
    const size_t F = byc.size();
    std::vector<Frame> alt;
    for (size_t q = 0; q < 2 * F; ++q) {
      Frame f;
      for (auto [s, r] : byc[(q + q / F) % F]) {
        if (size_t(dist[size_t(s)] % 2) != q % 2) std::swap(s, r);
        f.push_back({s, r});
      }
      std::sort(f.begin(), f.end());
      alt.push_back(f);
    }
    out.frames = alt;
    out.order_seconds = 0;
    return true;
  }

  // Greedy frame order (Sec. 2.3): at each position of the cycle, the unused frame that
  // delivers new data on the most arcs, in a model that counts packets per node (a sender
  // with more packets than its receiver delivers one); ties: the larger total distance of
  // the receivers from the root (the farthest first), then the lower colour.
  t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> cnt(size_t(g.n), 0);
  cnt[size_t(opt.root)] = opt.packets;
  std::vector<char> used(byc.size(), 0);
  for (size_t pos = 0; pos < byc.size(); ++pos) {
    size_t best = byc.size();
    int64_t bu = -1, bd = -1;
    for (size_t f = 0; f < byc.size(); ++f) {
      if (used[f]) continue;
      int64_t u = 0, d = 0;
      for (auto [s, r] : byc[f])
        if (cnt[size_t(s)] > cnt[size_t(r)]) ++u, d += dist[size_t(r)];
      if (u > bu || (u == bu && d > bd)) best = f, bu = u, bd = d;
    }
    used[best] = 1;
    for (auto [s, r] : byc[best])
      if (cnt[size_t(s)] > cnt[size_t(r)]) ++cnt[size_t(r)];
    out.frames.push_back(byc[best]);
  }
  out.order_seconds = seconds_since(t0);
  return true;
}

namespace {

// Packet sets as bitsets, the state of a run.
struct Packets {
  int P = 0, N = 0, W = 0;
  std::vector<uint64_t> bits;
  std::vector<int> cnt, holders;  // packets per node, nodes per packet
  int complete = 0;
  Packets(int p, int n, int root)
      : P(p), N(n), W((n + 63) / 64), bits(size_t(p) * size_t(W), 0), cnt(size_t(p), 0), holders(size_t(n), 1) {
    for (int q = 0; q < n; ++q) bits[size_t(root) * size_t(W) + size_t(q / 64)] |= uint64_t(1) << (q % 64);
    cnt[size_t(root)] = n;
    complete = 1;
  }
  const uint64_t* of(int x) const { return &bits[size_t(x) * size_t(W)]; }
  bool has(int x, int q) const { return of(x)[q / 64] >> (q % 64) & 1; }
  void add(int x, int q) {
    uint64_t& w = bits[size_t(x) * size_t(W) + size_t(q / 64)];
    if (w >> (q % 64) & 1) return;
    w |= uint64_t(1) << (q % 64);
    ++holders[size_t(q)];
    if (++cnt[size_t(x)] == N) ++complete;
  }
  bool lacks_any(int u, int v) const {  // u holds a packet v lacks
    if (cnt[size_t(u)] == 0 || cnt[size_t(v)] == N) return false;
    const uint64_t *a = of(u), *b = of(v);
    for (int w = 0; w < W; ++w)
      if (a[w] & ~b[w]) return true;
    return false;
  }
  // The packet u sends v, -1 if none.
  int choose(const Graph& g, int u, int v, Choice ch) const {
    if (cnt[size_t(u)] == 0 || cnt[size_t(v)] == N) return -1;
    const uint64_t *a = of(u), *b = of(v);
    if (ch == Choice::lowest) {
      for (int w = 0; w < W; ++w)
        if (uint64_t d = a[w] & ~b[w]) return w * 64 + __builtin_ctzll(d);
      return -1;
    }
    // Algorithm 1: FP(p) = |{w in N(v) : p not in w}|, the first p of maximal FP; ties: the
    // lowest packet id (forward_potential) or the packet held by the fewest nodes (rarest).
    const std::vector<int>& nb = g.adj[size_t(v)];
    const bool rarest = ch == Choice::rarest;
    int best = -1, bf = -1, bh = 0;
    for (int w = 0; w < W; ++w) {  // fast path: packets no neighbour of v but u holds (FP maximal)
      uint64_t d = a[w] & ~b[w];
      for (int x : nb)
        if (x != u) d &= ~of(x)[w];
      if (!rarest && d) return w * 64 + __builtin_ctzll(d);
      while (d) {
        int q = w * 64 + __builtin_ctzll(d);
        d &= d - 1;
        if (best < 0 || holders[size_t(q)] < bh) best = q, bh = holders[size_t(q)];
      }
    }
    if (best >= 0) return best;
    for (int w = 0; w < W; ++w) {
      uint64_t d = a[w] & ~b[w];
      while (d) {
        int q = w * 64 + __builtin_ctzll(d);
        d &= d - 1;
        int fp = 0;
        for (int x : nb) fp += !has(x, q);
        if (fp > bf || (rarest && fp == bf && holders[size_t(q)] < bh)) bf = fp, best = q, bh = holders[size_t(q)];
      }
    }
    return best;
  }
};

std::vector<int> bfs_order(const Graph& g, const std::vector<int>& dist) {
  std::vector<int> order(size_t(g.n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return dist[size_t(a)] < dist[size_t(b)]; });
  return order;
}

bool start_run(const Graph& g, int root, int packets, const char* name, Run& out, std::string& err) {
  out = Run{};
  out.algorithm = name;
  if (root < 0 || root >= g.n)
    return err = "root " + std::to_string(root) + " is not a node of " + g.spec + " (nodes 0.." + std::to_string(g.n - 1) + ")", false;
  if (packets < 1) return err = "the packet count N must be at least 1, got " + std::to_string(packets), false;
  return true;
}

// Applies one step's transfers (chosen on the state at the start of the step).
void finish_step(Packets& st, Step& step, bool keep, Run& out) {
  for (const Transfer& t : step) st.add(t.to, t.packet);
  out.active.push_back(int(step.size()));
  out.transfers += int64_t(step.size());
  ++out.steps;
  if (keep) out.trace.push_back(step);
  step.clear();
}

// Greedy transfers on free edges: nodes in BFS order, each to the free neighbour that lacks
// some of its packets and holds the fewest (ties: the farthest from the root, then lower id).
void greedy_fill(const Graph& g, const Packets& st, const std::vector<int>& order, const std::vector<int>& dist,
                 std::vector<char>& busy, Choice ch, Step& step) {
  for (int u : order) {
    if (busy[size_t(u)] || st.cnt[size_t(u)] == 0) continue;
    int best = -1;
    for (int v : g.adj[size_t(u)])
      if (!busy[size_t(v)] && st.lacks_any(u, v) &&
          (best < 0 || st.cnt[size_t(v)] < st.cnt[size_t(best)] ||
           (st.cnt[size_t(v)] == st.cnt[size_t(best)] && dist[size_t(v)] > dist[size_t(best)])))
        best = v;
    if (best < 0) continue;
    step.push_back({u, best, st.choose(g, u, best, ch)});
    busy[size_t(u)] = busy[size_t(best)] = 1;
  }
}

// Boost's matching() with the initial matching left as given.
template <typename G, typename M>
struct keep_matching {
  static void find_matching(const G&, M) {}
};

// Grows the step's matching to a maximum one on the edges where some direction is useful
// (Edmonds' augmenting paths, Boost.Graph, seeded with the step's transfers: a node busy in
// the seed stays busy, possibly with another partner). Every pair then sends toward the
// node that lacks a packet of the other; when both do, toward the one holding fewer.
void augment_to_maximum(const Graph& g, const Packets& st, Choice ch, Step& step) {
  using BG = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  BG bg(size_t(g.n));
  for (auto [u, v] : g.edges)
    if (st.lacks_any(u, v) || st.lacks_any(v, u)) boost::add_edge(size_t(u), size_t(v), bg);
  using V = boost::graph_traits<BG>::vertex_descriptor;
  std::vector<V> mate(size_t(g.n), boost::graph_traits<BG>::null_vertex());
  for (const Transfer& t : step) mate[size_t(t.from)] = V(t.to), mate[size_t(t.to)] = V(t.from);
  auto mm = &mate[0];
  boost::matching<BG, V*, boost::property_map<BG, boost::vertex_index_t>::type, boost::edmonds_augmenting_path_finder,
                  keep_matching, boost::no_matching_verifier>(bg, mm, boost::get(boost::vertex_index, bg));
  std::vector<Transfer> kept;
  for (const Transfer& t : step)
    if (mate[size_t(t.from)] == V(t.to)) kept.push_back(t);
  std::vector<char> done(size_t(g.n), 0);
  for (const Transfer& t : kept) done[size_t(t.from)] = done[size_t(t.to)] = 1;
  step = kept;
  for (int u = 0; u < g.n; ++u) {
    if (done[size_t(u)] || mate[size_t(u)] == boost::graph_traits<BG>::null_vertex()) continue;
    int v = int(mate[size_t(u)]);
    done[size_t(u)] = done[size_t(v)] = 1;
    bool uv = st.lacks_any(u, v), vu = st.lacks_any(v, u);
    if (!uv || (vu && st.cnt[size_t(u)] < st.cnt[size_t(v)])) std::swap(u, v), std::swap(uv, vu);
    if (uv) step.push_back({u, v, st.choose(g, u, v, ch)});
  }
}

}  // namespace

bool run_frames(const Graph& g, int root, int packets, const std::vector<Frame>& frames, Choice choice, Fill fill,
                bool keep_trace, Run& out, std::string& err) {
  if (!start_run(g, root, packets, fill == Fill::none ? "BBS" : fill == Fill::greedy ? "BBS+fill" : "BBS+max", out, err))
    return false;
  if (frames.empty()) return err = "no frames", false;
  Packets st(g.n, packets, root);
  std::vector<int> dist = g.bfs_dist(root), order = bfs_order(g, dist);
  std::vector<char> busy(size_t(g.n));
  Step step;
  int64_t idle_steps = 0;
  while (st.complete < g.n) {
    std::fill(busy.begin(), busy.end(), 0);
    for (auto [s, r] : frames[size_t(out.steps % int64_t(frames.size()))]) {
      int q = st.choose(g, s, r, choice);
      if (q < 0) continue;
      step.push_back({s, r, q});
      busy[size_t(s)] = busy[size_t(r)] = 1;
    }
    if (fill != Fill::none) greedy_fill(g, st, order, dist, busy, choice, step);
    if (fill == Fill::maximum) augment_to_maximum(g, st, choice, step);
    idle_steps = step.empty() ? idle_steps + 1 : 0;
    finish_step(st, step, keep_trace, out);
    if (idle_steps > int64_t(frames.size()))
      return err = "frames stall: a whole cycle moves no packet with " + std::to_string(g.n - st.complete) +
                   " nodes incomplete",
             false;
  }
  return true;
}

namespace {

// The two sides of the parity matching. On a bipartite graph: the hop-distance parity from
// the root (every edge joins the sides). Otherwise the BFS parity may be unbalanced (16K3:
// 7 and 9 nodes) and leaves edges inside a side; we balance the sides (|S0| - |S1| in
// {0, 1}) and raise the cut by a local search (the pair swap that adds the most cut edges,
// until none adds any; at most 4P swaps). Kept only when the cut edges still connect the
// graph (then a packet some node lacks can always cross a cut edge at one of the two
// parities, so runs cannot stall); else the BFS parity.
std::vector<int> parity_sides(const Graph& g, const std::vector<int>& dist) {
  const int P = g.n;
  std::vector<int> side(static_cast<size_t>(P));
  for (int v = 0; v < P; ++v) side[size_t(v)] = dist[size_t(v)] % 2;
  if (g.bipartite()) return side;
  std::vector<int> s = side;
  auto gain = [&](int x) {  // cut edges gained by moving x to the other side
    int d = 0;
    for (int y : g.adj[size_t(x)]) d += s[size_t(y)] == s[size_t(x)] ? 1 : -1;
    return d;
  };
  for (;;) {  // balance: move the best node from the larger side
    int n1 = 0;
    for (int x : s) n1 += x;
    const int big = n1 > P - n1 ? 1 : 0, excess = std::abs(2 * n1 - P);
    if (excess <= 1) break;
    int best = -1;
    for (int v = 0; v < P; ++v)
      if (s[size_t(v)] == big && (best < 0 || gain(v) > gain(best))) best = v;
    s[size_t(best)] ^= 1;
  }
  for (int it = 0; it < 4 * P; ++it) {  // swaps keep the balance
    int ba = -1, bb = -1, bg = 0;
    for (int a = 0; a < P; ++a) {
      if (s[size_t(a)] != 0) continue;
      const int ga = gain(a);
      for (int b = 0; b < P; ++b) {
        if (s[size_t(b)] != 1) continue;
        const bool adj = std::binary_search(g.adj[size_t(a)].begin(), g.adj[size_t(a)].end(), b);
        const int gab = ga + gain(b) + (adj ? 2 : 0);
        if (gab > bg) ba = a, bb = b, bg = gab;
      }
    }
    if (ba < 0) break;
    s[size_t(ba)] ^= 1, s[size_t(bb)] ^= 1;
  }
  std::vector<char> reached(size_t(P), 0);
  std::vector<int> stack{0};
  reached[0] = 1;
  int count = 1;
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    for (int y : g.adj[size_t(x)])
      if (!reached[size_t(y)] && s[size_t(y)] != s[size_t(x)]) reached[size_t(y)] = 1, ++count, stack.push_back(y);
  }
  return count == P ? s : side;
}

}  // namespace

bool run_parity(const Graph& g, int root, int packets, Seed seed, bool fill, bool keep_trace, Run& out, std::string& err) {
  if (!start_run(g, root, packets, "Parity", out, err)) return false;
  Packets st(g.n, packets, root);
  const std::vector<int> dist = g.bfs_dist(root), order = bfs_order(g, dist), side = parity_sides(g, dist);
  std::vector<int> mate(size_t(g.n)), seen(size_t(g.n), 0), recv, nrec(size_t(g.n));
  std::vector<std::vector<int>> useful(size_t(g.n));  // [receiver] its useful senders
  std::vector<char> busy(size_t(g.n));
  int stamp = 0;
  // Kuhn's augmenting path from receiver v (bipartite: senders and receivers by parity).
  std::function<bool(int)> augment = [&](int v) -> bool {
    for (int u : useful[size_t(v)]) {
      if (seen[size_t(u)] == stamp) continue;
      seen[size_t(u)] = stamp;
      if (mate[size_t(u)] < 0 || augment(mate[size_t(u)])) return mate[size_t(u)] = v, mate[size_t(v)] = u, true;
    }
    return false;
  };
  Step step;
  int64_t idle = 0;
  while (st.complete < g.n) {
    const int par = int(out.steps % 2);
    std::fill(mate.begin(), mate.end(), -1);
    std::fill(nrec.begin(), nrec.end(), 0);
    recv.clear();
    for (int v = 0; v < g.n; ++v) {
      useful[size_t(v)].clear();
      if (side[size_t(v)] == par) continue;
      for (int u : g.adj[size_t(v)])
        if (side[size_t(u)] == par && st.lacks_any(u, v)) useful[size_t(v)].push_back(u), ++nrec[size_t(u)];
      if (!useful[size_t(v)].empty()) recv.push_back(v);
    }
    auto fewest_packets = [&](int a, int b) {
      return st.cnt[size_t(a)] != st.cnt[size_t(b)] ? st.cnt[size_t(a)] < st.cnt[size_t(b)] : dist[size_t(a)] > dist[size_t(b)];
    };
    if (seed == Seed::tight)
      std::stable_sort(recv.begin(), recv.end(), [&](int a, int b) {
        return useful[size_t(a)].size() != useful[size_t(b)].size() ? useful[size_t(a)].size() < useful[size_t(b)].size()
                                                                    : st.cnt[size_t(a)] < st.cnt[size_t(b)];
      });
    else
      std::stable_sort(recv.begin(), recv.end(), fewest_packets);
    for (int v : recv) {
      int best = -1;
      for (int u : useful[size_t(v)])
        if (mate[size_t(u)] < 0 && (best < 0 || (seed == Seed::scarce ? nrec[size_t(u)] < nrec[size_t(best)]
                                                                       : st.cnt[size_t(u)] > st.cnt[size_t(best)])))
          best = u;
      if (best >= 0) mate[size_t(best)] = v, mate[size_t(v)] = best;
    }
    for (bool grown = true; grown;) {  // passes until no augmenting path is left: maximum
      grown = false;
      ++stamp;
      for (int v : recv)
        if (mate[size_t(v)] < 0 && augment(v)) grown = true;
    }
    for (int v : recv)
      if (mate[size_t(v)] >= 0) step.push_back({mate[size_t(v)], v, st.choose(g, mate[size_t(v)], v, Choice::rarest)});
    if (fill) {
      std::fill(busy.begin(), busy.end(), 0);
      for (const Transfer& t : step) busy[size_t(t.from)] = busy[size_t(t.to)] = 1;
      greedy_fill(g, st, order, dist, busy, Choice::rarest, step);
    }
    idle = step.empty() ? idle + 1 : 0;
    if (idle > 2) return err = "parity matching stalls (disconnected graph?)", false;  // cannot happen on a connected graph
    finish_step(st, step, keep_trace, out);
  }
  return true;
}

bool run_hybrid(const Graph& g, int root, int packets, const std::vector<Frame>& bfs_frames,
                const std::vector<Frame>& alternate_frames, bool keep_trace, Run& out, std::string& err) {
  bool any = false;
  auto take = [&](Run& r, const std::string& name) {
    if (any && r.steps >= out.steps) return;
    r.algorithm = "Hybrid(" + name + ")";
    out = std::move(r);
    any = true;
  };
  for (int o = 0; o < 2; ++o)
    for (Fill f : {Fill::greedy, Fill::maximum}) {
      Run r;
      if (!run_frames(g, root, packets, o ? alternate_frames : bfs_frames, Choice::rarest, f, keep_trace, r, err)) return false;
      take(r, std::string(o ? "alternate" : "bfs") + (f == Fill::greedy ? "+fill" : "+max"));
    }
  for (Seed sd : {Seed::deficit, Seed::tight, Seed::scarce})
    for (bool fill : {false, true}) {
      Run r;
      if (!run_parity(g, root, packets, sd, fill, keep_trace, r, err)) return false;
      take(r, std::string("parity/") + (sd == Seed::deficit ? "deficit" : sd == Seed::tight ? "tight" : "scarce") +
                  (fill ? "+fill" : ""));
    }
  return true;
}

bool run_greedy(const Graph& g, int root, int packets, bool keep_trace, Run& out, std::string& err) {
  if (!start_run(g, root, packets, "Greedy", out, err)) return false;
  Packets st(g.n, packets, root);
  std::vector<int> dist = g.bfs_dist(root), order = bfs_order(g, dist);
  std::vector<char> busy(size_t(g.n));
  Step step;
  while (st.complete < g.n) {
    std::fill(busy.begin(), busy.end(), 0);
    greedy_fill(g, st, order, dist, busy, Choice::lowest, step);
    if (step.empty()) return err = "greedy stalls (disconnected graph?)", false;
    finish_step(st, step, keep_trace, out);
  }
  return true;
}

bool run_tree(const Graph& g, int root, int packets, bool keep_trace, Run& out, std::string& err) {
  if (!start_run(g, root, packets, "Binary Tree", out, err)) return false;
  Packets st(g.n, packets, root);
  std::vector<int> dist = g.bfs_dist(root), order = bfs_order(g, dist);
  std::vector<std::vector<int>> children(size_t(g.n));
  for (int v = 0; v < g.n; ++v)
    if (v != root)
      for (int u : g.adj[size_t(v)])
        if (dist[size_t(u)] == dist[size_t(v)] - 1) {  // lowest-id parent
          children[size_t(u)].push_back(v);
          break;
        }
  // Periodic pipeline, period c + 1 (c: the most children of a node): node v receives in
  // the steps t = o(v) (mod c + 1) and sends to its k-th child in the steps t = o(v) + k + 1,
  // with o(k-th child) = o(v) + k + 1, so a node never sends and receives in one step. It
  // sends the lowest packet it holds that the child lacks.
  size_t c = 0;
  for (const auto& ch : children) c = std::max(c, ch.size());
  const int64_t period = int64_t(c) + 1;
  std::vector<int64_t> off(size_t(g.n), 0);
  for (int u : order)
    for (size_t k = 0; k < children[size_t(u)].size(); ++k)
      off[size_t(children[size_t(u)][k])] = (off[size_t(u)] + int64_t(k) + 1) % period;
  Step step;
  int64_t idle = 0;
  while (st.complete < g.n) {
    for (int u = 0; u < g.n; ++u) {
      int64_t ph = ((out.steps - off[size_t(u)]) % period + period) % period;
      if (ph == 0 || size_t(ph) > children[size_t(u)].size()) continue;
      int ch = children[size_t(u)][size_t(ph - 1)];
      if (st.lacks_any(u, ch)) step.push_back({u, ch, st.choose(g, u, ch, Choice::lowest)});
    }
    idle = step.empty() ? idle + 1 : 0;
    if (idle > period) return err = "tree broadcast stalls", false;
    finish_step(st, step, keep_trace, out);
  }
  return true;
}

bool run_srda(const Graph& g, int root, int packets, bool keep_trace, Run& out, std::string& err) {
  if (!start_run(g, root, packets, "SRDA", out, err)) return false;
  const int P = g.n, N = packets;
  Packets st(P, N, root);
  const std::vector<int> dist = g.bfs_dist(root), order = bfs_order(g, dist);
  // The BFS spanning tree of run_tree (parent: the lowest-id neighbour one hop closer).
  std::vector<int> parent(size_t(P), -1);
  for (int v = 0; v < P; ++v)
    if (v != root)
      for (int u : g.adj[size_t(v)])
        if (dist[size_t(u)] == dist[size_t(v)] - 1) {
          parent[size_t(v)] = u;
          break;
        }
  // Phase 1, scatter: segment i = packets [floor(i N / P), floor((i + 1) N / P)) goes to node
  // i. queue[u] holds the packets u must still forward, each with the child it goes through;
  // a sender serves the deepest destination first (ties: the lowest packet id), the order
  // that lets a pipelined scatter on a path finish all nodes together.
  struct Item {
    int depth, packet, child;
    bool operator<(const Item& o) const { return depth != o.depth ? depth < o.depth : packet > o.packet; }
  };
  std::vector<std::vector<Item>> queue(static_cast<size_t>(P));  // per node, in sending order
  std::vector<int> backlog(size_t(P), 0);            // packets a node holds for its subtree, not yet forwarded
  auto child_toward = [&](int u, int dest) {          // the child of u on the tree path to dest
    while (parent[size_t(dest)] != u) dest = parent[size_t(dest)];
    return dest;
  };
  auto owner = [&](int q) { return int(int64_t(q) * P / N); };
  auto enqueue = [&](int u, int q) {
    int d = owner(q);
    if (d == u) return;
    queue[size_t(u)].push_back({dist[size_t(d)], q, child_toward(u, d)});
    ++backlog[size_t(u)];
  };
  for (int q = 0; q < N; ++q) enqueue(root, q);
  for (auto& qu : queue) std::sort(qu.begin(), qu.end(), [](const Item& a, const Item& b) { return b < a; });
  std::vector<char> busy(static_cast<size_t>(P));
  Step step;
  int64_t pending = backlog[size_t(root)];
  while (pending > 0) {
    std::fill(busy.begin(), busy.end(), 0);
    for (auto x = order.rbegin(); x != order.rend(); ++x) {  // the deepest first: forwarding drains the pipes
      const int u = *x;
      if (busy[size_t(u)] || queue[size_t(u)].empty()) continue;
      // The free child with the smallest backlog (ties: the lower id) that u has a packet for,
      // then u's first packet (deepest destination) through that child.
      int best = -1;
      for (const Item& it : queue[size_t(u)])
        if (!busy[size_t(it.child)] && (best < 0 || backlog[size_t(it.child)] < backlog[size_t(best)] ||
                                        (backlog[size_t(it.child)] == backlog[size_t(best)] && it.child < best)))
          best = it.child;
      if (best < 0) continue;
      auto it = std::find_if(queue[size_t(u)].begin(), queue[size_t(u)].end(), [&](const Item& x) { return x.child == best; });
      step.push_back({u, best, it->packet});
      queue[size_t(u)].erase(it);
      --backlog[size_t(u)];
      busy[size_t(u)] = busy[size_t(best)] = 1;
    }
    if (step.empty()) return err = "SRDA scatter stalls", false;  // cannot happen: the root always has a free child
    for (const Transfer& t : step) {
      --pending;
      if (owner(t.packet) != t.to) {  // in transit: t.to forwards it
        Item x{dist[size_t(owner(t.packet))], t.packet, child_toward(t.to, owner(t.packet))};
        auto& qu = queue[size_t(t.to)];
        qu.insert(std::upper_bound(qu.begin(), qu.end(), x, [](const Item& a, const Item& b) { return b < a; }), x);
        ++backlog[size_t(t.to)], ++pending;
      }
    }
    finish_step(st, step, keep_trace, out);
  }
  // Phase 2, allgather among neighbours: each step the greedy matching of run_greedy (a free
  // node sends to the free neighbour lacking some of its packets that holds the fewest, the
  // lowest packet id it lacks), until every node holds all N.
  while (st.complete < P) {
    std::fill(busy.begin(), busy.end(), 0);
    greedy_fill(g, st, order, dist, busy, Choice::lowest, step);
    if (step.empty()) return err = "SRDA allgather stalls (disconnected graph?)", false;
    finish_step(st, step, keep_trace, out);
  }
  return true;
}

std::string check_trace(const Graph& g, int root, int packets, const std::vector<Step>& trace) {
  // Deliberately plain (no bitsets, no shared code with the runs): a set of edges and a
  // node x packet table.
  std::vector<std::vector<char>> has(size_t(g.n), std::vector<char>(size_t(packets), 0));
  for (auto& x : has[size_t(root)]) x = 1;
  std::vector<std::vector<char>> edge(size_t(g.n), std::vector<char>(size_t(g.n), 0));
  for (auto [u, v] : g.edges) edge[size_t(u)][size_t(v)] = edge[size_t(v)][size_t(u)] = 1;
  std::vector<int64_t> last(size_t(g.n), -1);
  for (size_t s = 0; s < trace.size(); ++s) {
    const std::string at = "step " + std::to_string(s) + ": ";
    for (const Transfer& t : trace[s]) {
      if (t.from < 0 || t.from >= g.n || t.to < 0 || t.to >= g.n || t.packet < 0 || t.packet >= packets)
        return at + "transfer out of range";
      const std::string tr = std::to_string(t.from) + " -> " + std::to_string(t.to) + " packet " + std::to_string(t.packet);
      if (!edge[size_t(t.from)][size_t(t.to)]) return at + tr + " is not on an edge of the topology";
      for (int x : {t.from, t.to}) {
        if (last[size_t(x)] == int64_t(s)) return at + "node " + std::to_string(x) + " is in two transfers (" + tr + ")";
        last[size_t(x)] = int64_t(s);
      }
      if (!has[size_t(t.from)][size_t(t.packet)]) return at + tr + ": the sender does not hold the packet";
    }
    for (const Transfer& t : trace[s]) has[size_t(t.to)][size_t(t.packet)] = 1;
  }
  for (int x = 0; x < g.n; ++x)
    for (int q = 0; q < packets; ++q)
      if (!has[size_t(x)][size_t(q)])
        return "after " + std::to_string(trace.size()) + " steps node " + std::to_string(x) + " lacks packet " + std::to_string(q);
  return "";
}

}  // namespace bine::synth

namespace bine::synth {

namespace {

// The slot multigraph of a frame cycle: one arc per (frame, arc) pair, arcs into the root
// left out (the root holds every packet).
struct SlotGraph {
  int n = 0;
  std::vector<int> from, to, frame, index;
  std::vector<std::vector<int>> out, in;  // [node] arc ids
};

// The step a packet that reached node `from` of slot arc a at step t reaches its head: a
// leaves at the first step >= t that is frame(a) mod F.
int64_t arrive(const SlotGraph& d, int a, int64_t t, int64_t F) {
  return t + ((int64_t(d.frame[size_t(a)]) - t) % F + F) % F + 1;
}

// True when every node is `need` arc-disjoint paths from `root` over the arcs with
// alive[a] (unit capacities; augmenting paths, stopped at `need`).
class Connectivity {
 public:
  explicit Connectivity(const SlotGraph& d) : d_(d), flow_(d.from.size(), 0), par_(size_t(d.n)), seen_(size_t(d.n)) {}
  bool at_least(const std::vector<char>& alive, int root, int need) {
    if (need <= 0) return true;
    if (!reach_all(alive, root)) return false;
    if (need == 1) return true;
    for (int w = 0; w < d_.n; ++w) {
      if (w == root) continue;
      int deg = 0;
      for (int a : d_.in[size_t(w)]) deg += alive[size_t(a)];
      if (deg < need) return false;
      std::vector<int> touched;
      int got = 0;
      while (got < need && augment(alive, root, w, touched)) ++got;
      for (int a : touched) flow_[size_t(a)] = 0;
      if (got < need) return false;
    }
    return true;
  }

  // The same after one arc into v was removed from a graph where it held: a set X that
  // loses its last spare entering arc to that removal contains v, so v's own connectivity
  // decides (need augmenting paths to v alone).
  bool at_least_after_removal(const std::vector<char>& alive, int root, int v, int need) {
    std::vector<int> touched;
    int got = 0;
    while (got < need && augment(alive, root, v, touched)) ++got;
    for (int a : touched) flow_[size_t(a)] = 0;
    return got >= need;
  }

 private:
  bool reach_all(const std::vector<char>& alive, int root) {
    std::fill(seen_.begin(), seen_.end(), 0);
    std::vector<int> q{root};
    seen_[size_t(root)] = 1;
    for (size_t h = 0; h < q.size(); ++h)
      for (int a : d_.out[size_t(q[h])])
        if (alive[size_t(a)] && !seen_[size_t(d_.to[size_t(a)])]) seen_[size_t(d_.to[size_t(a)])] = 1, q.push_back(d_.to[size_t(a)]);
    return int(q.size()) == d_.n;
  }
  // One augmenting path root -> w in the residual graph; par_ holds (arc, +1 forward / -1 back).
  bool augment(const std::vector<char>& alive, int root, int w, std::vector<int>& touched) {
    std::fill(seen_.begin(), seen_.end(), 0);
    std::vector<int> q{root};
    seen_[size_t(root)] = 1;
    for (size_t h = 0; h < q.size() && !seen_[size_t(w)]; ++h) {
      const int u = q[h];
      for (int a : d_.out[size_t(u)]) {
        const int v = d_.to[size_t(a)];
        if (alive[size_t(a)] && !flow_[size_t(a)] && !seen_[size_t(v)]) seen_[size_t(v)] = 1, par_[size_t(v)] = {a, 1}, q.push_back(v);
      }
      for (int a : d_.in[size_t(u)]) {
        const int v = d_.from[size_t(a)];
        if (alive[size_t(a)] && flow_[size_t(a)] && !seen_[size_t(v)]) seen_[size_t(v)] = 1, par_[size_t(v)] = {a, -1}, q.push_back(v);
      }
    }
    if (!seen_[size_t(w)]) return false;
    for (int v = w; v != root;) {
      auto [a, dir] = par_[size_t(v)];
      flow_[size_t(a)] = dir > 0;
      touched.push_back(a);
      v = dir > 0 ? d_.from[size_t(a)] : d_.to[size_t(a)];
    }
    return true;
  }
  const SlotGraph& d_;
  std::vector<char> flow_;
  std::vector<std::pair<int, int>> par_;
  std::vector<char> seen_;
};

}  // namespace

namespace {

// Local search on a packing (ours): at a node, two streams trade their in-arcs (or a stream
// takes an in-arc no stream uses) when both stay arborescences (the new parent is not below
// the node in that stream) and the latest arrival over all streams and nodes drops, or stays
// and the sum of arrivals drops. Lovasz's growth makes the first arborescences shallow and
// leaves the last what remains; this evens them out (32x32 grid: depth 307 -> see docs).
void improve_streams(const SlotGraph& d, int root, int64_t F, int K, int packets, int64_t budget, Streams& s) {
  const int P = d.n;
  if (K < 1 || P < 2) return;
  // pa[j * P + v]: the slot arc of stream j into v (-1 at the root).
  std::vector<int> pa(size_t(K) * size_t(P), -1), owner(d.from.size(), -1);
  for (size_t a = 0; a < d.from.size(); ++a) {
    const int j = s.tag[size_t(d.frame[a])][size_t(d.index[a])];
    if (j >= 0) pa[size_t(j) * size_t(P) + size_t(d.to[a])] = int(a), owner[a] = j;
  }
  std::vector<int64_t> arr(size_t(K) * size_t(P)), depth(static_cast<size_t>(K)), sorted;
  std::vector<std::vector<int>> kids(static_cast<size_t>(P));
  std::vector<int> order;
  // Arrival of every stream at every node: (latest, sum); latest = -1 when a stream is not
  // an arborescence (cannot happen after the acyclicity test, kept as a guard).
  auto evaluate = [&]() -> std::pair<int64_t, int64_t> {
    int64_t latest = 0, sum = 0, worst = 0;
    for (int j = 0; j < K; ++j) {
      for (auto& k : kids) k.clear();
      for (int v = 0; v < P; ++v)
        if (v != root) kids[size_t(d.from[size_t(pa[size_t(j) * size_t(P) + size_t(v)])])].push_back(v);
      order.assign(1, root);
      int64_t* a = &arr[size_t(j) * size_t(P)];
      a[root] = 0;
      for (size_t h = 0; h < order.size(); ++h)
        for (int v : kids[size_t(order[h])]) {
          const int e = pa[size_t(j) * size_t(P) + size_t(v)];
          const int64_t t = a[order[h]];
          a[v] = arrive(d, e, t, F);
          latest = std::max(latest, a[v]);
          sum += a[v];
          order.push_back(v);
        }
      if (int(order.size()) != P) return {-1, 0};
      depth[size_t(j)] = latest;
      latest = 0;
    }
    // The last of a stream's n packets leaves the root F (n - 1) steps after its first.
    // Streams are relabelled at the end so that the shallowest carries stream 0 (the most
    // packets: n_j = ceil((N - j) / K)), so T pairs depths ascending with n_j descending.
    sorted = depth;
    std::sort(sorted.begin(), sorted.end());
    for (int j = 0; j < K; ++j) {
      const int64_t n = j < packets ? (packets - 1 - j) / K + 1 : 0;
      if (n > 0) worst = std::max(worst, F * (n - 1) + sorted[size_t(j)]);
    }
    return {worst, sum};
  };
  // True when u is v or below v in stream j (then v may not take u as its parent).
  auto below = [&](int j, int u, int v) {
    for (int x = u, hops = 0; x != root && hops <= P; ++hops) {
      if (x == v) return true;
      x = d.from[size_t(pa[size_t(j) * size_t(P) + size_t(x)])];
    }
    return false;
  };
  // One trade: stream j at v takes in-arc a; its owner k (if any) takes j's arc. False when
  // it would close a cycle.
  auto trade = [&](int v, int j, int a) {
    const int cur = pa[size_t(j) * size_t(P) + size_t(v)];
    if (a == cur) return false;
    const int k = owner[size_t(a)];
    if (below(j, d.from[size_t(a)], v)) return false;
    if (k >= 0 && below(k, d.from[size_t(cur)], v)) return false;
    pa[size_t(j) * size_t(P) + size_t(v)] = a, owner[size_t(a)] = j;
    if (k >= 0) pa[size_t(k) * size_t(P) + size_t(v)] = cur, owner[size_t(cur)] = k;
    else owner[size_t(cur)] = -1;
    return true;
  };
  int64_t work = 0;  // node visits of evaluate(): the search's budget
  auto climb = [&](std::pair<int64_t, int64_t> cur) {
    for (bool moved = true; moved && work < budget;) {
      moved = false;
      for (int v = 0; v < P; ++v) {
        if (v == root) continue;
        for (int j = 0; j < K; ++j)
          for (int a : d.in[size_t(v)]) {
            const int was = pa[size_t(j) * size_t(P) + size_t(v)];
            if (!trade(v, j, a)) continue;
            const auto now = evaluate();
            work += int64_t(K) * P;
            if (now.first >= 0 && now < cur) {
              cur = now, moved = true;
            } else {
              trade(v, j, was);  // undo: j takes its old arc back (the same two arcs trade again)
            }
          }
      }
    }
    return cur;
  };
  auto best = evaluate();
  if (best.first < 0) return;
  best = climb(best);
  // Iterated local search: a few random trades, a climb, kept when better (a fixed seed:
  // the same frames give the same streams).
  std::mt19937_64 rng(12345);
  std::vector<int> keep_pa = pa, keep_owner = owner;
  for (int idle = 0; work < budget && idle < 100; ++idle) {
    const int kicks = 1 + int(rng() % 4);
    for (int m = 0; m < kicks; ++m) {
      int v = int(rng() % uint64_t(P));
      if (v == root || d.in[size_t(v)].empty()) continue;
      trade(v, int(rng() % uint64_t(K)), d.in[size_t(v)][rng() % d.in[size_t(v)].size()]);
    }
    auto now = evaluate();
    work += int64_t(K) * P;
    if (now.first < 0) {
      pa = keep_pa, owner = keep_owner;
      continue;
    }
    now = climb(now);
    if (now < best) {
      best = now, keep_pa = pa, keep_owner = owner, idle = 0;
    } else {
      pa = keep_pa, owner = keep_owner;
    }
  }
  pa = keep_pa, owner = keep_owner;
  best = evaluate();
  s.work = work;
  // Relabel: stream rank[j] = the position of stream j among the depths, ascending (ties by label).
  std::vector<int> by(static_cast<size_t>(K)), rank(static_cast<size_t>(K));
  std::iota(by.begin(), by.end(), 0);
  std::stable_sort(by.begin(), by.end(), [&](int a, int b) { return depth[size_t(a)] < depth[size_t(b)]; });
  for (int i = 0; i < K; ++i) rank[size_t(by[size_t(i)])] = i;
  for (auto& t : s.tag) std::fill(t.begin(), t.end(), -1);
  for (size_t a = 0; a < d.from.size(); ++a)
    if (owner[a] >= 0) s.tag[size_t(d.frame[a])][size_t(d.index[a])] = rank[size_t(owner[a])];
  s.depth = 0;
  for (size_t i = 0; i < arr.size(); ++i) s.depth = std::max(s.depth, arr[i]);
  s.steps = best.first;
}

}  // namespace

bool pack_streams(const Graph& g, int root, int packets, const std::vector<Frame>& frames, Streams& out,
                  std::string& err, int64_t work_budget, int64_t max_checks, const Streams* start) {
  out = Streams{};
  if (root < 0 || root >= g.n)
    return err = "root " + std::to_string(root) + " is not a node of " + g.spec + " (nodes 0.." + std::to_string(g.n - 1) + ")", false;
  if (frames.empty()) return err = "no frames", false;
  const int64_t F = int64_t(frames.size());
  SlotGraph d;
  d.n = g.n;
  d.out.resize(size_t(g.n));
  d.in.resize(size_t(g.n));
  out.tag.resize(frames.size());
  for (size_t f = 0; f < frames.size(); ++f) {
    out.tag[f].assign(frames[f].size(), -1);
    for (size_t i = 0; i < frames[f].size(); ++i) {
      auto [u, v] = frames[f][i];
      if (v == root) continue;
      const int a = int(d.from.size());
      d.from.push_back(u), d.to.push_back(v), d.frame.push_back(int(f)), d.index.push_back(int(i));
      d.out[size_t(u)].push_back(a), d.in[size_t(v)].push_back(a);
    }
  }
  if (start) {  // the same arcs, frames reordered: keep the packing, redo the search
    if (start->tag.size() != frames.size()) return err = "streams: the start packing has another frame count", false;
    for (size_t f = 0; f < frames.size(); ++f)
      if (start->tag[f].size() != frames[f].size()) return err = "streams: the start packing has other frames", false;
    out.tag = start->tag;
    out.count = start->count;
    out.checks = 0;
    improve_streams(d, root, F, out.count, packets, work_budget, out);
    return true;
  }
  std::vector<char> alive(d.from.size(), 1);
  Connectivity conn(d);
  // K: the least root -> node connectivity (at most the least in-degree).
  int K = g.n > 1 ? int(d.from.size()) : 0;
  for (int v = 0; v < g.n; ++v)
    if (v != root) K = std::min(K, int(d.in[size_t(v)].size()));
  while (K > 0 && !conn.at_least(alive, root, K)) --K;
  if (K == 0 && g.n > 1) return err = "the frames do not reach every node from the root", false;
  out.count = K;
  // The packing's cost, estimated: about 2P checks per arborescence, a check `need`
  // augmenting paths over the slot arcs. Refused above kMaxPackWork arc visits rather than
  // run for minutes (docs/bbs.md: the 3D grids whose LP has l = 64, K about 29).
  {
    constexpr double kMaxPackWork = 3e9;
    double est = 0;
    for (int j = 0; j + 1 < K; ++j) est += 2.0 * g.n * double(K - 1 - j) * double(d.from.size());
    if (est > kMaxPackWork)
      return err = "streams: packing K = " + std::to_string(K) + " arborescences over " + std::to_string(d.from.size()) +
                   " slot arcs (" + std::to_string(F) + " frames) would take about " + std::to_string(int64_t(est / 1e9)) +
                   "e9 arc visits; refused above 3e9",
             false;
  }
  // Lovasz: grow arborescence j keeping every node K-1-j arc-connected in what is left.
  using Cand = std::pair<int64_t, int>;  // arrival step at the arc's head, arc
  std::vector<int64_t> arrival(size_t(g.n));
  for (int j = 0; j < K; ++j) {
    const int need = K - 1 - j;
    std::fill(arrival.begin(), arrival.end(), -1);
    arrival[size_t(root)] = 0;
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> pq;
    std::vector<int> rejected;
    auto push_out = [&](int u) {
      for (int a : d.out[size_t(u)])
        if (alive[size_t(a)] && arrival[size_t(d.to[size_t(a)])] < 0) pq.push({arrive(d, a, arrival[size_t(u)], F), a});
    };
    push_out(root);
    int reached = 1;
    while (reached < g.n) {
      if (pq.empty()) return err = "streams: arborescence " + std::to_string(j) + " cannot grow (Lovasz's lemma violated)", false;
      const auto [t, a] = pq.top();
      pq.pop();
      const int v = d.to[size_t(a)];
      if (!alive[size_t(a)] || arrival[size_t(v)] >= 0) continue;
      alive[size_t(a)] = 0;
      if (++out.checks > max_checks)
        return err = "streams: more than " + std::to_string(max_checks) + " connectivity checks (" + std::to_string(g.n) +
                     " nodes, " + std::to_string(d.from.size()) + " slot arcs, K = " + std::to_string(K) + ")",
               false;
      if (!conn.at_least_after_removal(alive, root, v, need)) {
        alive[size_t(a)] = 1;
        rejected.push_back(a);
        continue;
      }
      out.tag[size_t(d.frame[size_t(a)])][size_t(d.index[size_t(a)])] = j;
      arrival[size_t(v)] = t;
      out.depth = std::max(out.depth, t);
      ++reached;
      push_out(v);
      for (int r : rejected)  // their test may pass now; retried in arrival order
        pq.push({arrive(d, r, arrival[size_t(d.from[size_t(r)])], F), r});
      rejected.clear();
    }
  }
  improve_streams(d, root, F, K, packets, work_budget, out);
  return true;
}

bool run_streams(const Graph& g, int root, int packets, const std::vector<Frame>& frames, const Streams& s,
                 bool keep_trace, Run& out, std::string& err) {
  if (!start_run(g, root, packets, "BBS streams", out, err)) return false;
  const int K = s.count;
  if (frames.empty() || K < 1 || s.tag.size() != frames.size()) return err = "no streams", false;
  // Down an arborescence every node holds a prefix of each stream: have[v * K + j] packets
  // of stream j (packets j, j + K, j + 2K, ...); size[j] of them in all.
  std::vector<int64_t> have(size_t(g.n) * size_t(K), 0), size(static_cast<size_t>(K));
  for (int j = 0; j < K; ++j) size[size_t(j)] = j < packets ? (packets - 1 - j) / K + 1 : 0;
  for (int j = 0; j < K; ++j) have[size_t(root) * size_t(K) + size_t(j)] = size[size_t(j)];
  std::vector<int64_t> got(size_t(g.n), 0);
  got[size_t(root)] = packets;
  int complete = 1;
  int64_t idle = 0;
  Step step;
  while (complete < g.n) {
    const size_t f = size_t(out.steps % int64_t(frames.size()));
    for (size_t i = 0; i < frames[f].size(); ++i) {
      const int j = s.tag[f][i];
      if (j < 0) continue;
      auto [u, v] = frames[f][i];
      const int64_t hu = have[size_t(u) * size_t(K) + size_t(j)], hv = have[size_t(v) * size_t(K) + size_t(j)];
      if (hu > hv) step.push_back({u, v, int(j + int64_t(K) * hv)});
    }
    for (const Transfer& t : step) {
      ++have[size_t(t.to) * size_t(K) + size_t(t.packet % K)];
      if (++got[size_t(t.to)] == packets) ++complete;
    }
    idle = step.empty() ? idle + 1 : 0;
    out.active.push_back(int(step.size()));
    out.transfers += int64_t(step.size());
    ++out.steps;
    if (keep_trace) out.trace.push_back(step);
    step.clear();
    if (idle > int64_t(frames.size()))
      return err = "streams stall: a whole cycle moves no packet with " + std::to_string(g.n - complete) + " nodes incomplete", false;
  }
  return true;
}

}  // namespace bine::synth

namespace bine::synth {

namespace {

// round_lp's network: Boost.Graph's Edmonds-Karp maximum flow (shortest augmenting paths)
// on a directed graph whose arcs come in (arc, reverse arc) pairs, as the algorithm
// requires. It finds the same integral flow as the Dinic of ours it replaced (byte-identical
// `synth bbs` on grid:3x4x5, 4x8x16, 8x8x8, 8x8x16); push-relabel finds others, whose
// streams schedules were 2 or 3 steps shorter on three of those grids and 7 longer on
// 8x8x16 (290 against the paper's BBS 284 at N = 100): which optimum the rounding takes is
// luck, not quality.
class MaxFlow {
 public:
  explicit MaxFlow(int n) : g_(size_t(n)) {}
  /// Adds the arc u -> v of capacity c; returns its id for flow().
  size_t add(int u, int v, int64_t c) {
    const Edge e = boost::add_edge(size_t(u), size_t(v), g_).first;
    const Edge r = boost::add_edge(size_t(v), size_t(u), g_).first;
    boost::put(boost::edge_capacity, g_, e, c);
    boost::put(boost::edge_capacity, g_, r, 0);
    boost::put(boost::edge_reverse, g_, e, r);
    boost::put(boost::edge_reverse, g_, r, e);
    arcs_.push_back(e);
    return arcs_.size() - 1;
  }
  /// The maximum flow from s to t.
  int64_t run(int s, int t) { return boost::edmonds_karp_max_flow(g_, size_t(s), size_t(t)); }
  /// The flow on arc `id` (after run()).
  int64_t flow(size_t id) const {
    const Edge e = arcs_[id];
    return boost::get(boost::edge_capacity, g_, e) - boost::get(boost::edge_residual_capacity, g_, e);
  }

 private:
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Graph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, int64_t,
                      boost::property<boost::edge_residual_capacity_t, int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  using Edge = boost::graph_traits<Graph>::edge_descriptor;
  Graph g_;
  std::vector<Edge> arcs_;
};

}  // namespace

bool round_lp(const Graph& g, const LpSolution& lp, int64_t l, LpSolution& out, std::string& err, uint64_t seed) {
  out = LpSolution{};
  const __int128 cin = __int128(lp.c_num) * l;  // C l: every node's in-degree
  if (l < 1 || cin % lp.c_den != 0) return err = "C l is not an integer", false;
  const int64_t in = int64_t(cin / lp.c_den), outcap = l - in;
  const int P = g.n, S = 2 * P, T = 2 * P + 1;
  // x = l O = l k / lcm: y = floor(x) + z, z in {0, 1} where x is fractional.
  std::vector<int64_t> fl(lp.k.size());
  std::vector<int64_t> in_left(size_t(P), in), out_left(size_t(P), outcap);
  MaxFlow mf(2 * P + 2);
  std::vector<int64_t> id(lp.k.size(), -1);
  std::vector<size_t> order(lp.k.size());
  std::iota(order.begin(), order.end(), size_t(0));
  if (seed) {  // another rounding: the fractional arcs in a shuffled order
    std::mt19937_64 rng(seed);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[size_t(rng() % i)]);
  }
  for (size_t a : order) {
    const __int128 x = __int128(lp.k[a]) * l;
    fl[a] = int64_t(x / lp.lcm);
    in_left[size_t(lp.to[a])] -= fl[a], out_left[size_t(lp.from[a])] -= fl[a];
    if (x % lp.lcm) id[a] = int64_t(mf.add(lp.from[a], P + lp.to[a], 1));
  }
  int64_t need = 0;
  for (int v = 0; v < P; ++v) {
    if (in_left[size_t(v)] < 0 || out_left[size_t(v)] < 0) return err = "the LP solution breaks Eq. 7 or 14", false;
    mf.add(S, v, out_left[size_t(v)]), mf.add(P + v, T, in_left[size_t(v)]);
    need += in_left[size_t(v)];
  }
  if (mf.run(S, T) != need) return err = "no rounding keeps every in-degree at C l", false;
  for (size_t a = 0; a < lp.k.size(); ++a) {
    const int64_t y = fl[a] + (id[a] >= 0 ? mf.flow(size_t(id[a])) : 0);
    if (y > 0) out.from.push_back(lp.from[a]), out.to.push_back(lp.to[a]), out.k.push_back(y);
  }
  out.lcm = l, out.c_num = lp.c_num, out.c_den = lp.c_den, out.vars = lp.vars, out.rows = lp.rows;
  return true;
}

bool synthesize_streams(const Graph& g, const SynthOptions& opt, StreamSynthesis& out, std::string& err) {
  out = StreamSynthesis{};
  auto t0 = std::chrono::steady_clock::now();
  SynthOptions o = opt;
  o.orient = Orient::lp;
  Synthesis first;
  if (!synthesize_bbs(g, o, first, err)) return false;
  // A long cycle makes deep arborescences (a packet may wait up to F steps a hop) and a
  // slow search: 4x8x16 (F = 18) took 136 s for T = 360 against the paper's 275.
  // Then the LP's optimum is rounded to one with a short cycle (round_lp: denominator the
  // least even l >= the maximum degree), and taken when its cycle is short enough.
  constexpr size_t kMaxFrames = 12;
  LpSolution lp = first.lp;
  if (first.frames.size() > kMaxFrames) {
    LpSolution exact, rounded;
    std::string why;
    const int64_t l = (g.max_degree() + 1) / 2 * 2;
    Synthesis second;
    SynthOptions o2 = o;
    o2.lp = &rounded;
    if (!first.rounded) exact = first.lp;
    bool ok = !first.rounded || solve_balanced_lp(g, o.root, o.balance, exact, why);
    // Roundings in 8 arc orders: the first whose frames keep the connectivity l/2 (F/2 when
    // the colouring uses l colours), else the best connected one (8x8x8: order 0 keeps 2).
    int best_k = 0;
    LpSolution candidate;
    Synthesis trial;
    for (uint64_t rs = 0; ok && rs < 8 && best_k * 2 < l; ++rs) {
      o2.lp = &candidate;
      Streams probe;
      std::string e2;
      if (!round_lp(g, exact, l, candidate, why, rs) || !synthesize_bbs(g, o2, trial, why)) {
        ok = false;
        break;
      }
      if (trial.frames.size() > kMaxFrames || !pack_streams(g, o.root, o.packets, trial.frames, probe, e2, 0)) continue;
      if (probe.count > best_k) best_k = probe.count, rounded = candidate, second = trial;
    }
    o2.lp = &rounded;
    ok = ok && best_k > 0;
    if (!ok)
      return err = "streams: the LP's cycle has " + std::to_string(first.frames.size()) + " frames (l = " +
                   std::to_string(first.lp.lcm) + "); streams are built for at most " + std::to_string(kMaxFrames) +
                   (why.empty() ? std::string() : " (rounding to l = " + std::to_string(l) + ": " + why + ")"),
             false;
    first = second;
    lp = rounded;
  }
  o.lp = &lp;
  constexpr int kSeeds = 8, kOrders = 6;
  constexpr int64_t kWork = int64_t(3e8);  // node visits of the streams' local search, all trials
  const int64_t per_trial = kWork / (kSeeds * kOrders);
  int64_t best = -1;
  int64_t work = 0;
  // 8 colourings at least; more while the search is cheap (small graphs), up to 64.
  for (int seed = 0; seed < kSeeds || (seed < 8 * kSeeds && work < kWork / 2); ++seed) {
    Synthesis syn;
    if (seed == 0) syn = first;
    else {
      o.colour_seed = uint64_t(seed);
      if (!synthesize_bbs(g, o, syn, err)) return false;
    }
    std::vector<int> perm(syn.frames.size());
    std::iota(perm.begin(), perm.end(), 0);
    Streams packed;  // Lovasz's packing once per colouring: arc-disjointness does not see the order
    for (int k = 0; k < kOrders; ++k) {
      std::vector<Frame> fr;
      for (int i : perm) fr.push_back(syn.frames[size_t(i)]);
      Streams st, start;
      if (k > 0) {
        start = packed;
        for (size_t f = 0; f < perm.size(); ++f) start.tag[f] = packed.tag[size_t(perm[f])];
      }
      if (!pack_streams(g, opt.root, opt.packets, fr, st, err, per_trial, 200000, k > 0 ? &start : nullptr)) return false;
      if (k == 0) packed = st;
      work += st.work;
      ++out.trials;
      if (best < 0 || st.steps < best) {
        best = st.steps;
        out.syn = syn;
        out.syn.frames = fr;
        out.streams = st;
        out.colour_seed = uint64_t(seed);
        out.order = perm;
      }
      // The next cyclic order: frame 0 stays first (a rotation is the same cycle shifted).
      if (perm.size() < 3 || !std::next_permutation(perm.begin() + 1, perm.end())) break;
    }
  }
  out.syn.lp_seconds = first.lp_seconds;
  out.seconds = seconds_since(t0);
  return true;
}

}  // namespace bine::synth
