// Drawing one instance (docs/draw.md): a Schedule, and optionally the verifier's
// counterexample, as an SVG step diagram (ranks as rows, rounds as columns, one arrow per
// transfer) or, above a process count, as a heat map of what each rank sends per round.
// Pure functions of their inputs: the same Schedule and options give the same bytes.
#pragma once
#include <cstdint>
#include <string>

#include "schedule.h"
#include "verify.h"

namespace bine {

struct DrawOptions {
  /// Ranks per node: ranks r and q share a node when r / ppn == q / ppn (consecutive ranks
  /// on a node), and arrows are coloured intra-node or inter-node; 0: one colour. The
  /// stand-in for machine maps (docs/draw.md, "Link classes").
  int64_t ppn = 0;
  /// Vector size n in bytes (all B blocks); > 0: a transfer of k blocks is also labelled
  /// with floor(k * n / B) bytes, and the heat map counts bytes instead of blocks.
  uint64_t bytes = 0;
  /// Step diagram up to this p; above it, the heat map (rank x round).
  int64_t max_diagram_p = 64;
  /// Highlighted when set and not of kind none: the failing rank, round and block, the
  /// offending transfers, a deadlock's wait-for chain, a race's two receives, missing or
  /// doubled contributions, and the message. Must describe `s` (its ranks and rounds).
  const Counterexample* counterexample = nullptr;
};

/// True when draw_svg() draws `s` as a heat map: p above opt.max_diagram_p.
bool draw_uses_heat_map(const Schedule& s, const DrawOptions& opt);

/// The SVG document (UTF-8 text, integer pixel coordinates) for `s`. Step diagram: one row
/// per rank (the root highlighted for rooted collectives, fold helpers greyed), one column
/// per round (fold rounds and mirrored rounds tinted), one arrow per SendOp from the sender's
/// row to the receiver's row, labelled with the block set and its size, dashed with a
/// circled head when the matching receive reduces; local reductions, copies and
/// permutations as small glyphs; a legend and the list of round labels below. Heat map
/// (draw_uses_heat_map()): one cell per (rank, round), coloured by blocks (or bytes) sent,
/// ranks and rounds grouped into at most 256 bins each, with a note saying so.
/// Elements carry classes and data-* attributes (docs/draw.md) that the tests read.
std::string draw_svg(const Schedule& s, const DrawOptions& opt = {});

/// Converts SVG text to PNG bytes by running `rsvg-convert` (Debian package
/// librsvg2-bin) on temporary files. Returns false with `error` set ("rsvg-convert not
/// found (install the Debian package librsvg2-bin)", or its exit status and first error
/// line) when the tool is missing or fails.
bool svg_to_png(const std::string& svg, std::string& png, std::string& error);

}  // namespace bine
