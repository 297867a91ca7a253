// The paper's Tables 2-6 (Lu et al., Sec. 3.2): T (steps) and mean active edges of BBS,
// Greedy, Binary Tree and SRDA on 15 grids and 16K3, N = 100, 500, 2500, root node 0.
#pragma once
#include <string>
#include <vector>

namespace bine::synth {

struct PaperCell {
  int table;              ///< 2..6
  const char* topology;   ///< our spec (grid:AxB...)
  int packets;            ///< N
  int t[4];               ///< T of BBS, Greedy, Binary Tree, SRDA
  double ae[4];           ///< mean active edges, same order
};
/// Every cell of Tables 2-6 (45 rows of 4 algorithms), in table order.
const std::vector<PaperCell>& paper_cells();
extern const char* const kPaperAlgorithms[4];  ///< "BBS", "Greedy", "Binary Tree", "SRDA"

}  // namespace bine::synth
