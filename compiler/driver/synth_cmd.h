// `bine-cc synth bbs` (docs/bbs.md): BBS frames for a topology, with the figures.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace bine {

struct SynthCli {
  std::string topology, out;
  int root = 0, packets = 100;
  std::string balance = "paper", orient = "bfs";
  bool baselines = false, frames = false;
  std::string bine_out;           ///< --bine FILE: the frames as a `.bine` schedule
  std::string name;               ///< --name: its schedule name (default bbs_<topology>)
  std::string packet = "lowest";  ///< --packet: the packet rule written (lowest, potential)
};
/// Adds `synth` with its subcommand `bbs` to `app`; returns the `bbs` subcommand.
CLI::App* add_synth_command(CLI::App& app, SynthCli& s);
/// Runs it: prints the LP optimum, l, d_m, colours, frames, T and mean active edges of BBS
/// and of BBS+fill (and of the baselines with --baselines), each run's trace re-checked by
/// the independent checker. Exit 0, or 1 with "bine-cc: error: ..." on bad input.
int cmd_synth_bbs(const SynthCli& s);

}  // namespace bine
