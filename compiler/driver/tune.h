// `bine-cc tune` as a library call: a selection table for the PMPI drop-in library
// (docs/pmpi.md, "Selection table") chosen by the cost model (docs/cost.md).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ast.h"
#include "cost.h"

namespace bine {

struct TuneOptions {
  int64_t p_lo = 2, p_hi = 32;  ///< process counts of the table (each p a row)
  /// Message sizes: powers of two from bytes_min to bytes_max (bytes as the PMPI library
  /// counts them: the whole vector for allreduce, reduce and bcast, one rank's block for the
  /// others); both rounded to multiples of elem_size.
  uint64_t bytes_min = 8, bytes_max = uint64_t(16) << 20;
  uint64_t elem_size = 4;  ///< bytes per element (gamma is per element)
  CostParams params;       ///< alpha, beta, gamma (and locality) of the machine
  /// Hysteresis: along a row, the previous size's choice is kept while its cost is within
  /// this fraction of the cheapest (so noise-level differences do not flip choices).
  double margin = 0.05;
};

/// One cell of the grid: the schedule chosen for (collective, p, bytes), and for reducing
/// collectives the cheapest schedule proved order-preserving (for non-commutative ops).
struct TuneCell {
  Collective collective = Collective::allreduce;
  int64_t p = 0;
  uint64_t bytes = 0;
  std::string chosen;       ///< empty: no schedule applies
  double chosen_cost = 0;   ///< its makespan under TuneOptions::params
  double best_cost = 0;     ///< the cheapest applicable schedule's makespan
  std::string ordered;      ///< reducing collectives: the cheapest order-preserving schedule
};

struct TuneResult {
  std::vector<TuneCell> cells;
  /// The selection table (JSON object keyed by the PMPI library's collective names; each
  /// rule with p_min, p_max, bytes_min, bytes_max (absent: unbounded) and schedule).
  nlohmann::ordered_json table;
};

/// Prices every schedule of `schedules` at every (p, bytes) of the grid with the cost model
/// (root 0; `commutative` as `bine-cc cost` sets it) and writes the cheapest per cell into
/// the table, consecutive sizes and process counts with the same choice merged into one
/// rule. A schedule that does not apply at p (its `requires`, its fold) or fails to
/// instantiate there is skipped; a schedule is order-preserving when `bine-cc check` over
/// p_lo..p_hi (every root) proves it so, as the PMPI library's registry flag does.
/// Deterministic.
TuneResult tune(const Program& program, const std::vector<const ScheduleDecl*>& schedules, const TuneOptions& opt);

/// One measured time: the slowest rank's mean per call of `schedule` ("mpi": the MPI
/// library's own collective) for `collective` (the PMPI table's key) at (p, bytes), from
/// bine-tune-bench (bench/tune_bench.cpp; barrier: bytes 0).
struct Measurement {
  std::string collective, schedule;
  int64_t p = 0;
  uint64_t bytes = 0;
  double us = 0;
};

/// The table from measured times instead of the model: per cell the fastest of the
/// measured schedules of `schedules` and of "mpi" (a rule naming "mpi" falls back to the
/// MPI library), with the same margin, merging and order-preserving second rules as tune()
/// ("mpi" counts as order-preserving). A cell without any measurement has no rule.
TuneResult tune_measured(const Program& program, const std::vector<const ScheduleDecl*>& schedules,
                         const TuneOptions& opt, const std::vector<Measurement>& measured);

/// The PMPI library's table key of a collective ("reduce_scatter_block" for reduce_scatter).
const char* pmpi_collective_key(Collective c);

}  // namespace bine
