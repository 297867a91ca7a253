#include "tune.h"

#include <functional>
#include <map>
#include <tuple>

#include "check.h"
#include "instantiate.h"
#include "verify.h"

namespace bine {

const char* pmpi_collective_key(Collective c) {
  return c == Collective::reduce_scatter ? "reduce_scatter_block" : collective_name(c);
}

namespace {

/// The grid's sizes: powers of two in [lo, hi], each a multiple of the element size.
std::vector<uint64_t> sizes(const TuneOptions& o) {
  std::vector<uint64_t> v;
  const uint64_t e = o.elem_size ? o.elem_size : 1;
  for (uint64_t b = 1; b <= o.bytes_max && b != 0; b *= 2)
    if (b >= o.bytes_min && b % e == 0) v.push_back(b);
  return v;
}

/// Elements of the priced vector for `bytes` as the PMPI library counts a call: the whole
/// vector (allreduce, reduce, bcast) or one rank's block (the rank-indexed collectives,
/// whose vector is the p blocks; docs/cost.md, "Model").
uint64_t elements(Collective c, int64_t p, uint64_t bytes, uint64_t elem_size) {
  const uint64_t n = bytes / elem_size;
  return collective_has_rank_blocks(c) || c == Collective::alltoall ? n * uint64_t(p) : n;
}

/// Whether the PMPI library may use `s` for a non-commutative operator over the table's p
/// range: what `bine-cc check` proves (every root, commutative = false), so the table and
/// the library's registry flag agree.
bool order_preserving(const Program& prog, const ScheduleDecl& s, const TuneOptions& o) {
  if (!collective_reduces(s.collective)) return true;
  CheckOptions co;
  co.p_lo = o.p_lo;
  co.p_hi = o.p_hi;
  DiagnosticSink scratch;
  const CheckReport r = check_schedule(prog, s, co, scratch);
  return r.ok && r.order_preserving;
}

/// One schedule's instances over the p range (empty where it does not apply).
struct Priced {
  const ScheduleDecl* decl = nullptr;
  std::map<int64_t, Schedule> at;  ///< p -> instance (root 0)
  bool order_preserving = true;
};

Priced instances(const Program& prog, const ScheduleDecl& s, const TuneOptions& o) {
  Priced pr;
  pr.decl = &s;
  RankProgram rp;
  DiagnosticSink scratch;  // a schedule that cannot be lowered or built is skipped
  if (!lower(prog, s, rp, scratch)) return pr;
  for (int64_t p = o.p_lo; p <= o.p_hi; ++p) {
    Schedule sch;
    if (instantiate(rp, {p, 0, default_commutative(s)}, sch, scratch) != InstStatus::ok) continue;
    pr.at.emplace(p, std::move(sch));
  }
  pr.order_preserving = order_preserving(prog, s, o);
  return pr;
}

/// A row's run of sizes with one choice: [lo, hi] bytes (hi 0: unbounded).
struct Run {
  uint64_t lo = 0, hi = 0;
  std::string chosen, ordered;
  bool operator==(const Run& o) const { return lo == o.lo && hi == o.hi && chosen == o.chosen && ordered == o.ordered; }
};

}  // namespace

namespace {

/// A candidate of a collective's cells: a schedule, or the MPI library's own ("mpi").
struct Candidate {
  std::string name;
  bool order_preserving = false;
};
/// The cost of candidate `i` at (p, bytes); false when it does not apply there.
using CostFn = std::function<bool(size_t i, int64_t p, uint64_t bytes, double* cost)>;

/// The table of one collective from its candidates' costs: the cheapest per cell, kept from
/// the previous size while within the margin, runs of sizes and equal rows merged.
void build_rules(Collective c, const std::vector<Candidate>& cands, const CostFn& cost, const TuneOptions& o,
                 const std::vector<uint64_t>& grid, TuneResult& res) {
  const bool reduces = collective_reduces(c);
  std::vector<std::pair<int64_t, std::vector<Run>>> rows;
  for (int64_t p = o.p_lo; p <= o.p_hi; ++p) {
    std::vector<Run> runs;
    std::string prev;
    for (size_t k = 0; k < grid.size(); ++k) {
      TuneCell cell;
      cell.collective = c;
      cell.p = p;
      cell.bytes = grid[k];
      double best = 0, prev_cost = -1, best_ordered = 0;
      for (size_t i = 0; i < cands.size(); ++i) {
        double cc = 0;
        if (!cost(i, p, grid[k], &cc)) continue;
        if (cell.chosen.empty() || cc < best) {
          best = cc;
          cell.chosen = cands[i].name;
        }
        if (cands[i].name == prev) prev_cost = cc;
        if (reduces && cands[i].order_preserving && (cell.ordered.empty() || cc < best_ordered)) {
          best_ordered = cc;
          cell.ordered = cands[i].name;
        }
      }
      cell.best_cost = cell.chosen_cost = best;
      if (prev_cost >= 0 && prev_cost <= best * (1 + o.margin)) {
        cell.chosen = prev;  // hysteresis: keep the smaller size's choice while it is close
        cell.chosen_cost = prev_cost;
      }
      prev = cell.chosen;
      const uint64_t lo = k == 0 ? 0 : grid[k - 1] + 1, hi = k + 1 == grid.size() ? 0 : grid[k];
      if (!runs.empty() && runs.back().chosen == cell.chosen && runs.back().ordered == cell.ordered)
        runs.back().hi = hi;
      else
        runs.push_back(Run{lo, hi, cell.chosen, cell.ordered});
      res.cells.push_back(cell);
    }
    if (!rows.empty() && rows.back().second == runs) continue;  // same as p - 1: merged below
    rows.emplace_back(p, std::move(runs));
  }
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t p_min = rows[i].first, p_max = i + 1 < rows.size() ? rows[i + 1].first - 1 : o.p_hi;
    for (const Run& r : rows[i].second) {
      auto rule = [&](const std::string& name) {
        nlohmann::ordered_json j;
        j["p_min"] = p_min;
        j["p_max"] = p_max;
        j["bytes_min"] = r.lo;
        if (r.hi) j["bytes_max"] = r.hi;
        j["schedule"] = name;
        rules.push_back(std::move(j));
      };
      if (r.chosen.empty()) continue;  // nothing applies: the MPI library's own
      rule(r.chosen);
      // For a non-commutative operator the library skips a schedule not proved
      // order-preserving and tries the next rule.
      if (!r.ordered.empty() && r.ordered != r.chosen) rule(r.ordered);
    }
  }
  res.table[pmpi_collective_key(c)] = std::move(rules);
}

const Collective kTableOrder[] = {Collective::allreduce, Collective::bcast,  Collective::reduce,
                                  Collective::allgather, Collective::gather, Collective::scatter,
                                  Collective::reduce_scatter, Collective::alltoall, Collective::scan,
                                  Collective::exscan, Collective::barrier};

}  // namespace

TuneResult tune(const Program& program, const std::vector<const ScheduleDecl*>& schedules, const TuneOptions& o) {
  TuneResult res;
  res.table = nlohmann::ordered_json::object();
  const std::vector<uint64_t> grid = sizes(o);
  for (Collective c : kTableOrder) {
    std::vector<Priced> priced;
    for (const ScheduleDecl* s : schedules)
      if (s->collective == c) priced.push_back(instances(program, *s, o));
    if (priced.empty()) continue;
    std::vector<Candidate> cands;
    for (const Priced& pr : priced) cands.push_back({pr.decl->name, pr.order_preserving});
    build_rules(c, cands, [&](size_t i, int64_t p, uint64_t bytes, double* cost) {
      const auto it = priced[i].at.find(p);
      if (it == priced[i].at.end()) return false;
      const CostResult cr = simulate_cost(it->second, CostVector{elements(c, p, bytes, o.elem_size), o.elem_size}, o.params);
      *cost = cr.makespan;
      return cr.ok;
    }, o, grid, res);
  }
  return res;
}

TuneResult tune_measured(const Program& program, const std::vector<const ScheduleDecl*>& schedules,
                         const TuneOptions& o, const std::vector<Measurement>& m) {
  TuneResult res;
  res.table = nlohmann::ordered_json::object();
  const std::vector<uint64_t> grid = sizes(o);
  // (collective key, schedule, p, bytes) -> us
  std::map<std::tuple<std::string, std::string, int64_t, uint64_t>, double> us;
  for (const Measurement& x : m) us[{x.collective, x.schedule, x.p, x.bytes}] = x.us;
  for (Collective c : kTableOrder) {
    std::vector<Candidate> cands;
    for (const ScheduleDecl* s : schedules)
      if (s->collective == c) cands.push_back({s->name, order_preserving(program, *s, o)});
    if (cands.empty()) continue;
    cands.push_back({"mpi", true});  // the MPI library's own collective is always correct
    const std::string key = pmpi_collective_key(c);
    build_rules(c, cands, [&](size_t i, int64_t p, uint64_t bytes, double* cost) {
      auto it = us.find({key, cands[i].name, p, c == Collective::barrier ? 0 : bytes});
      if (it == us.end()) return false;
      *cost = it->second;
      return true;
    }, o, grid, res);
  }
  return res;
}

}  // namespace bine
