#include "synth_cmd.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "bbs.h"
#include "token.h"

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
  bbs->add_flag("--baselines", s.baselines, "also run Greedy, Binary Tree and SRDA in the same model");
  bbs->add_flag("--frames", s.frames, "print the frame table");
  bbs->add_option("-o,--output", s.out, "write the frame table (one frame a line: 'sender>receiver ...') to FILE");
  bbs->add_option("--bine", s.bine_out,
                  "write the frames as a .bine schedule (a 'frames' statement: docs/language.md) to FILE, for check, cost and compile");
  bbs->add_option("--name", s.name, "the schedule name in --bine's file (default bbs_<topology>, e.g. bbs_grid_4x4)");
  bbs->add_option("--packet", s.packet,
                  "the packet rule in --bine's file: lowest (each node receives packets in order, default), potential (Algorithm 1) "
                  "or stream (the streams schedule: LP-oriented frames packed into arborescences, docs/bbs.md)")
      ->check(CLI::IsMember({"lowest", "potential", "stream"}));
  return bbs;
}

int cmd_synth_bbs(const SynthCli& s) {
  using namespace synth;
  auto fail = [](const std::string& m) {
    std::cerr << "bine-cc: error: " << m << "\n";
    return 1;
  };
  // --name is checked before any work: an identifier that is not a keyword, or the file
  // --bine writes would not parse (a bad option value: exit 2).
  const std::string& nm = s.name;
  for (size_t i = 0; i < nm.size(); ++i)
    if (!(std::isalnum((unsigned char)nm[i]) || nm[i] == '_') || (i == 0 && std::isdigit((unsigned char)nm[i]))) {
      std::cerr << "bine-cc: error: --name '" << nm << "' is not an identifier\n";
      return 2;
    }
  if (!nm.empty() && is_keyword(nm)) {
    std::cerr << "bine-cc: error: --name '" << nm << "' is a keyword of the language; choose another schedule name\n";
    return 2;
  }
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
  // The streams schedule (ours): frames a .bine file can hold that run at the LP's rate.
  StreamSynthesis ss;
  std::string stream_err;
  const bool have_streams = synthesize_streams(g, o, ss, stream_err);
  if (have_streams) {
    Run r;
    if (!run_streams(g, s.root, s.packets, ss.syn.frames, ss.streams, true, r, err)) return fail(err);
    ok &= report(r);
    std::printf("  streams: K = %d over %zu frames (LP-oriented, colouring %llu, %d trials), depth %lld steps\n",
                ss.streams.count, ss.syn.frames.size(), (unsigned long long)ss.colour_seed, ss.trials,
                (long long)ss.streams.depth);
    std::fprintf(stderr, "streams search: %.3f s\n", ss.seconds);
  } else {
    std::printf("%-24s not built: %s\n", "BBS streams", stream_err.c_str());
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
  if (!s.bine_out.empty()) {
    // The same frames run with the file's packet rule in the model: the T it states (the
    // compiler's own run of the frames statement must agree; tests/bbs/run.sh checks).
    Run r;
    const bool lowest = s.packet == "lowest", stream = s.packet == "stream";
    if (stream && !have_streams) return fail("--packet stream: " + stream_err);
    const Synthesis& out = stream ? ss.syn : syn;
    if (stream ? !run_streams(g, s.root, s.packets, out.frames, ss.streams, false, r, err)
               : !run_frames(g, s.root, s.packets, syn.frames, lowest ? Choice::lowest : Choice::forward_potential,
                             Fill::none, false, r, err))
      return fail(err);
    std::string name = s.name;
    if (name.empty()) {
      name = "bbs_";
      for (char c : g.spec) name += std::isalnum((unsigned char)c) ? c : '_';
    }
    std::ofstream f(s.bine_out);
    if (!f) return fail("cannot write '" + s.bine_out + "'");
    f << "// BBS broadcast on " << g.spec << " from node " << s.root << " (" << g.n << " nodes, " << g.edges.size()
      << " links), written by\n// bine-cc synth bbs --topology " << g.spec << " --root " << s.root << " --packets " << s.packets
      << " --balance " << s.balance << (stream ? "" : " --orient " + s.orient) << " --packet " << s.packet << "\n";
    f << "// Lu, Hwang, Tenreiro, Tripti, Hamilton, Deng, \"A New Broadcast Model for Several Network\n"
         "// Topologies\", Sec. 2.3 (docs/bbs.md): LP optimum C = "
      << out.lp.c_num << "/" << out.lp.c_den << ", l = " << out.lp.lcm << ", d_m = " << out.max_degree << ", " << out.colours
      << " colours, " << out.frames.size() << " frames.\n";
    if (stream)
      f << "// Streams (ours, docs/bbs.md): frames oriented as the LP directs, colouring " << ss.colour_seed
        << "; their arcs split into\n// " << ss.streams.count
        << " arc-disjoint spanning arborescences (arc U>V:J is in stream J, which carries packets q = J mod "
        << ss.streams.count << ").\n";
    f << "// In the model (one transfer per node and step): T = " << r.steps << " steps for N = " << s.packets
      << " packets, AE = " << std::fixed << std::setprecision(1) << r.ae() << ".\n";
    f << "schedule " << name << " implements bcast {\n";
    f << "  blocks " << s.packets << "  // N packets: the buffer is split into N blocks\n";
    f << "  frames {\n";
    f << "    nodes " << g.n << " root " << s.root << " packet " << s.packet;
    if (stream) f << " " << ss.streams.count;
    f << "\n";
    auto items = [&](const char* head, const std::vector<std::string>& v) {
      std::string line = std::string("    ") + head;
      for (const std::string& it : v) {
        if (line.size() + it.size() + 1 > 100) {
          f << line << "\n";
          line = "     ";
        }
        line += " " + it;
      }
      f << line << "\n";
    };
    std::vector<std::string> links;
    for (auto [a, b] : g.edges) links.push_back(std::to_string(a) + "-" + std::to_string(b));
    items("links", links);
    for (size_t k = 0; k < out.frames.size(); ++k) {
      std::vector<std::string> arcs;
      for (size_t i = 0; i < out.frames[k].size(); ++i) {
        auto [a, b] = out.frames[k][i];
        if (stream && ss.streams.tag[k][i] < 0) continue;  // in no arborescence: idle
        arcs.push_back(std::to_string(a) + ">" + std::to_string(b) +
                       (stream ? ":" + std::to_string(ss.streams.tag[k][i]) : std::string()));
      }
      items("frame", arcs);
    }
    f << "  }\n}\n";
    if (!f) return fail("cannot write '" + s.bine_out + "'");
    std::printf("wrote %s: schedule %s, %zu frames, packet %s, T = %lld steps in the model\n", s.bine_out.c_str(),
                name.c_str(), out.frames.size(), s.packet.c_str(), (long long)r.steps);
  }
  if (s.frames) table(std::cout);
  if (!s.out.empty()) {
    std::ofstream f(s.out);
    if (!f) return fail("cannot write '" + s.out + "'");
    table(f);
  }
  return ok ? 0 : 1;
}

}  // namespace bine
