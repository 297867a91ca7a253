// Tables 2-6 of the BBS paper (Lu et al., Sec. 3.2) reproduced in our step model, next to
// the paper's numbers (docs/bbs.md). For each topology: BBS frames synthesised once per
// orientation (paper balance, greedy order), then for N = 100, 500, 2500: BBS (the paper's
// pipeline), BBS streams (synthesize_streams for that N: the frames a .bine file holds),
// our hybrid (run_hybrid), Greedy, Binary Tree and SRDA, every trace up to
// 64 x 2500 re-checked by the independent checker.
//
//   bbs_tables [--max-nodes P] [--check] [--markdown] [--active-csv FILE --topology T --packets N]
//   bbs_tables --synth-time T     (synthesis time of T's frames, both orientations)
//
// --check: exit 1 unless, in every cell run, the hybrid's T <= the paper's BBS, Greedy,
// Binary Tree and SRDA T (the paper's BBS: 16K3 exempt, the paper's graph is unknown) and
// <= our BBS, BBS streams, Greedy, Binary Tree and SRDA T; BBS streams' T <= the paper's BBS
// T (16K3 exempt) wherever streams are built; every trace passes the checker; and on 2D
// grids our Binary Tree's slope (T(2500) - T(500)) / 2000 equals the paper's (3).
// --active-csv: active edges per step of the five algorithms on one topology (Fig. 4).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "bbs.h"
#include "tables.h"

using namespace bine::synth;

int main(int argc, char** argv) {
  int max_nodes = 1 << 20;
  bool check = false, markdown = false;
  std::string csv, topo_csv;
  int packets_csv = 2500;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) std::fprintf(stderr, "bbs_tables: %s needs a value\n", a.c_str()), std::exit(2);
      return argv[++i];
    };
    if (a == "--max-nodes") max_nodes = std::atoi(next().c_str());
    else if (a == "--check") check = true;
    else if (a == "--markdown") markdown = true;
    else if (a == "--active-csv") csv = next();
    else if (a == "--topology") topo_csv = next();
    else if (a == "--packets") packets_csv = std::atoi(next().c_str());
    else if (a == "--synth-time") {  // synthesis time per orientation (the 10 s target)
      Graph g;
      std::string e, spec = next();
      if (!build_topology(spec, g, e)) return std::fprintf(stderr, "%s\n", e.c_str()), 1;
      for (Orient o : {Orient::bfs, Orient::alternate}) {
        SynthOptions so;
        so.orient = o;
        Synthesis syn;
        auto t0 = std::chrono::steady_clock::now();
        if (!synthesize_bbs(g, so, syn, e)) return std::fprintf(stderr, "%s\n", e.c_str()), 1;
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%s (%d nodes, %s): %.2f s (LP %.2f, colouring %.2f, order %.2f), C = %lld/%lld, l = %lld, %zu frames\n",
                    spec.c_str(), g.n, o == Orient::bfs ? "bfs" : "alternate", secs, syn.lp_seconds, syn.colour_seconds,
                    syn.order_seconds, (long long)syn.lp.c_num, (long long)syn.lp.c_den, (long long)syn.lp.lcm,
                    syn.frames.size());
      }
      return 0;
    }
    else return std::fprintf(stderr, "bbs_tables: unknown option %s\n", a.c_str()), 2;
  }
  std::string err;
  if (!csv.empty()) {
    Graph g;
    Synthesis syn;
    SynthOptions o;
    o.packets = packets_csv;
    if (!build_topology(topo_csv, g, err) || !synthesize_bbs(g, o, syn, err)) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
    Run r[5];
    Synthesis alt;
    o.orient = Orient::alternate;
    if (!synthesize_bbs(g, o, alt, err)) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
    bool ok = run_frames(g, 0, packets_csv, syn.frames, Choice::forward_potential, Fill::none, false, r[0], err) &&
              run_hybrid(g, 0, packets_csv, syn.frames, alt.frames, false, r[1], err) &&
              run_greedy(g, 0, packets_csv, false, r[2], err) && run_tree(g, 0, packets_csv, false, r[3], err) &&
              run_srda(g, 0, packets_csv, false, r[4], err);
    if (!ok) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
    std::ofstream f(csv);
    f << "step";
    for (auto& x : r) f << "," << x.algorithm;
    f << "\n";
    size_t len = 0;
    for (auto& x : r) len = std::max(len, x.active.size());
    for (size_t s = 0; s < len; ++s) {
      f << s + 1;
      for (auto& x : r) f << "," << (s < x.active.size() ? x.active[s] : 0);
      f << "\n";
    }
    std::printf("wrote %s: %s, N = %d, T:", csv.c_str(), topo_csv.c_str(), packets_csv);
    for (auto& x : r) std::printf(" %s %lld", x.algorithm.c_str(), (long long)x.steps);
    std::printf("\n");
    return 0;
  }

  int failures = 0;
  auto fail = [&](const std::string& m) {
    ++failures;
    std::printf("FAIL: %s\n", m.c_str());
  };
  std::map<std::pair<std::string, int>, Synthesis> synths;
  std::map<std::pair<std::string, int>, int64_t> tree_t;
  std::map<std::string, std::string> stream_why;
  int last_table = 0;
  for (const PaperCell& c : paper_cells()) {
    Graph g;
    if (!build_topology(c.topology, g, err)) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
    if (g.n > max_nodes) continue;
    if (c.table != last_table) {
      last_table = c.table;
      std::printf("\nTable %d (P = %d): T (AE); paper's T in brackets\n", c.table, g.n);
      if (markdown)
        std::printf("\n| topology | N | BBS (paper) | BBS ours | BBS streams | Hybrid ours | Greedy (paper) | Greedy ours | "
                    "Binary Tree (paper) | Binary Tree ours | SRDA (paper) | SRDA ours |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    }
    auto t0 = std::chrono::steady_clock::now();
    for (Orient o : {Orient::bfs, Orient::alternate})
      if (!synths.count({c.topology, int(o)})) {
        SynthOptions so;
        so.packets = 2500, so.orient = o;
        if (!synthesize_bbs(g, so, synths[{c.topology, int(o)}], err)) return std::fprintf(stderr, "%s\n", err.c_str()), 1;
      }
    const Synthesis& syn = synths[{c.topology, int(Orient::bfs)}];
    // The streams schedule, searched for this N (a .bine file's frames are built for one
    // N: `blocks N`); "-" where it is not built.
    StreamSynthesis ss;
    {
      SynthOptions so;
      so.packets = c.packets;
      if (!synthesize_streams(g, so, ss, stream_why[c.topology])) ss.streams.count = 0;
    }
    const bool keep = check && g.n * int64_t(c.packets) <= 64 * 2500;  // traces re-checked up to this size
    Run r[5];
    bool ok = run_frames(g, 0, c.packets, syn.frames, Choice::forward_potential, Fill::none, keep, r[0], err) &&
              run_hybrid(g, 0, c.packets, synths[{c.topology, int(Orient::bfs)}].frames,
                         synths[{c.topology, int(Orient::alternate)}].frames, keep, r[1], err) &&
              run_greedy(g, 0, c.packets, keep, r[2], err) && run_tree(g, 0, c.packets, keep, r[3], err) &&
              run_srda(g, 0, c.packets, keep, r[4], err);
    if (!ok) return std::fprintf(stderr, "%s %d: %s\n", c.topology, c.packets, err.c_str()), 1;
    Run rs;
    if (ss.streams.count > 0 && !run_streams(g, 0, c.packets, ss.syn.frames, ss.streams, keep, rs, err))
      return std::fprintf(stderr, "%s %d: %s\n", c.topology, c.packets, err.c_str()), 1;
    const std::string st = ss.streams.count > 0 ? std::to_string(rs.steps) : std::string("-");
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (markdown)
      std::printf("| %s | %d | %d | %lld | %s | **%lld** | %d | %lld | %d | %lld | %d | %lld |\n", c.topology, c.packets, c.t[0],
                  (long long)r[0].steps, st.c_str(), (long long)r[1].steps, c.t[1], (long long)r[2].steps, c.t[2],
                  (long long)r[3].steps, c.t[3], (long long)r[4].steps);
    else
      std::printf("%-12s N=%-5d BBS %5lld (%5.1f) [%5d]  streams %5s  %s %5lld (%5.1f)  Greedy %5lld (%5.1f) [%5d]  "
                  "Tree %5lld (%5.1f) [%5d]  SRDA %5lld (%5.1f) [%5d]  frames %zu  %.1fs\n",
                  c.topology, c.packets, (long long)r[0].steps, r[0].ae(), c.t[0], st.c_str(), r[1].algorithm.c_str(), (long long)r[1].steps, r[1].ae(),
                  (long long)r[2].steps, r[2].ae(), c.t[1], (long long)r[3].steps, r[3].ae(), c.t[2], (long long)r[4].steps, r[4].ae(), c.t[3],
                  syn.frames.size(), secs);
    tree_t[{c.topology, c.packets}] = r[3].steps;
    if (!check) continue;
    const std::string cell = std::string(c.topology) + " N=" + std::to_string(c.packets);
    if (std::strcmp(c.topology, "16k3") != 0 && r[1].steps > c.t[0])
      fail(cell + ": Hybrid T " + std::to_string(r[1].steps) + " > the paper's BBS T " + std::to_string(c.t[0]));
    for (int a = 1; a < 4; ++a)
      if (r[1].steps > c.t[a]) fail(cell + ": Hybrid T > the paper's " + kPaperAlgorithms[a] + " T");
    for (int a : {0, 2, 3, 4})
      if (r[1].steps > r[a].steps) fail(cell + ": Hybrid T > our " + r[a].algorithm + " T");
    if (ss.streams.count > 0) {
      if (std::strcmp(c.topology, "16k3") != 0 && rs.steps > c.t[0])
        fail(cell + ": BBS streams T " + std::to_string(rs.steps) + " > the paper's BBS T " + std::to_string(c.t[0]));
      if (r[1].steps > rs.steps) fail(cell + ": Hybrid T > our BBS streams T");
      if (keep)
        if (std::string bad = check_trace(g, 0, c.packets, rs.trace); !bad.empty()) fail(cell + " BBS streams: " + bad);
    } else {
      std::printf("  (BBS streams not built: %s)\n", stream_why[c.topology].c_str());
    }
    if (keep)
      for (auto& x : r)
        if (std::string bad = check_trace(g, 0, c.packets, x.trace); !bad.empty()) fail(cell + " " + x.algorithm + ": " + bad);
    // The BFS tree from a corner of a 2D grid is binary, so the paper's Binary Tree is
    // unambiguous there: the slopes must agree. (3D grids, 2x2x4, 16K3: printed only.)
    const bool grid2d = std::strncmp(c.topology, "grid:", 5) == 0 && std::count(c.topology, c.topology + std::strlen(c.topology), 'x') == 1;
    if (grid2d && c.packets == 2500 && tree_t.count({c.topology, 500})) {
      const PaperCell* p500 = &c - 1;
      double ours = double(r[3].steps - tree_t[{c.topology, 500}]) / 2000.0, theirs = double(c.t[2] - p500->t[2]) / 2000.0;
      if (std::fabs(ours - theirs) > 0.01)
        fail(cell + ": Binary Tree slope " + std::to_string(ours) + " != the paper's " + std::to_string(theirs));
    }
  }
  if (check) std::printf("\n%s: %d failure(s)\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}
