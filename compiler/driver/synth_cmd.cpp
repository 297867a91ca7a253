#include "synth_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bbs.h"

namespace bine {

CLI::App* add_synth_command(CLI::App& app, SynthCli& s) {
  CLI::App* synth = app.add_subcommand("synth", "synthesise a schedule from a topology (docs/bbs.md)");
  synth->require_subcommand(1);
  CLI::App* bbs = synth->add_subcommand(
      "bbs", "broadcast by balanced saturation: LP (GLPK exact) -> multigraph -> edge colouring -> frames; prints T and the figures");
  bbs->add_option("--topology", s.topology,
                  "grid:AxB[xC], torus:AxB[xC], hypercube:D, 16k3, dragonfly:A,H, edges:FILE")
      ->required();
  bbs->add_option("--root", s.root, "root node (default 0, a corner of a grid)");
  bbs->add_option("--packets,-N", s.packets, "number of packets N (default 100)");
  bbs->add_option("--balance", s.balance, "paper (Eq. 14 for every node, default) or non-root")
      ->check(CLI::IsMember({"paper", "non-root"}));
  bbs->add_option("--orient", s.orient, "bfs (away from the root, the paper's, default), lp (the LP's directions) or alternate (by hop-distance parity, bipartite graphs)")
      ->check(CLI::IsMember({"bfs", "lp", "alternate"}));
  bbs->add_flag("--baselines", s.baselines, "also run Greedy and Binary Tree in the same model");
  bbs->add_flag("--frames", s.frames, "print the frame table");
  bbs->add_option("-o,--output", s.out, "write the frame table (one frame a line: 'sender>receiver ...') to FILE");
  return bbs;
}

int cmd_synth_bbs(const SynthCli& s) {
  using namespace synth;
  auto fail = [](const std::string& m) {
    std::cerr << "bine-cc: error: " << m << "\n";
    return 1;
  };
  Graph g;
  std::string err;
  if (!build_topology(s.topology, g, err)) return fail(err);
  SynthOptions o;
  o.root = s.root, o.packets = s.packets;
  o.balance = s.balance == "paper" ? Balance::paper : Balance::non_root;
  o.orient = s.orient == "bfs" ? Orient::bfs : s.orient == "lp" ? Orient::lp : Orient::alternate;
  Synthesis syn;
  if (!synthesize_bbs(g, o, syn, err)) return fail(err);
  std::printf("topology %s: %d nodes, %zu edges, max degree %d, %s\n", g.spec.c_str(), g.n, g.edges.size(),
              g.max_degree(), g.bipartite() ? "bipartite" : "not bipartite");
  std::printf("LP (Eq. 6-8, 14; balance %s): %d variables, %d rows, optimum C = %lld/%lld = %.6f\n", s.balance.c_str(),
              syn.lp.vars, syn.lp.rows, (long long)syn.lp.c_num, (long long)syn.lp.c_den,
              double(syn.lp.c_num) / double(syn.lp.c_den));
  std::printf("multigraph: l = LCM of denominators = %lld, d_m = %lld; colouring: %d colours; frames: %zu\n",
              (long long)syn.lp.lcm, (long long)syn.max_degree, syn.colours, syn.frames.size());
  if (syn.rounded) std::printf("(the LP's l exceeded 64: occupancies rounded down to multiples of 1/64)\n");
  // Timings vary from run to run: standard error, so that standard output repeats byte for byte.
  std::fprintf(stderr, "synthesis time: LP %.3f s, colouring %.3f s, frame order %.3f s\n", syn.lp_seconds,
               syn.colour_seconds, syn.order_seconds);
  auto report = [&](Run& r) {
    std::string bad = check_trace(g, s.root, s.packets, r.trace);
    std::printf("%-24s T = %lld steps, AE = %.1f, check: %s\n", r.algorithm.c_str(), (long long)r.steps, r.ae(),
                bad.empty() ? "ok" : bad.c_str());
    return bad.empty();
  };
  bool ok = true;
  {
    Run r;
    if (!run_frames(g, s.root, s.packets, syn.frames, Choice::forward_potential, Fill::none, true, r, err)) return fail(err);
    ok &= report(r);
    SynthOptions ob = o, oa = o;
    ob.orient = Orient::bfs, oa.orient = Orient::alternate;
    Synthesis sb, sa;
    if (!synthesize_bbs(g, ob, sb, err) || !synthesize_bbs(g, oa, sa, err)) return fail(err);
    if (!run_hybrid(g, s.root, s.packets, sb.frames, sa.frames, true, r, err)) return fail(err);
    ok &= report(r);
  }
  if (s.baselines) {
    Run r;
    if (!run_greedy(g, s.root, s.packets, true, r, err)) return fail(err);
    ok &= report(r);
    if (!run_tree(g, s.root, s.packets, true, r, err)) return fail(err);
    ok &= report(r);
    if (!run_srda(g, s.root, s.packets, true, r, err)) return fail(err);
    ok &= report(r);
  }
  auto table = [&](std::ostream& os) {
    os << "# BBS frames of " << g.spec << ", root " << s.root << ": " << syn.frames.size()
       << " frames, step t uses frame t mod " << syn.frames.size() << "\n";
    for (size_t f = 0; f < syn.frames.size(); ++f) {
      os << f << ":";
      for (auto [a, b] : syn.frames[f]) os << " " << a << ">" << b;
      os << "\n";
    }
  };
  if (s.frames) table(std::cout);
  if (!s.out.empty()) {
    std::ofstream f(s.out);
    if (!f) return fail("cannot write '" + s.out + "'");
    table(f);
  }
  return ok ? 0 : 1;
}

}  // namespace bine
