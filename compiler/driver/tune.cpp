#include "tune.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "check.h"
#include "instantiate.h"
#include "verify.h"

namespace bine {

const char* pmpi_collective_key(Collective c) {
  return collective_key(c);
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

/// What the PMPI library lets `s` serve over the table's p range, as `bine-cc check` proves
/// it (every root, commutative = false), so the table and the library's registry flags
/// agree: order-preserving (non-commutative operators) and the same bracketing on all ranks
/// (floating-point and user operators; bine/dispatch.hpp). Both true without an operator.
struct Proved {
  bool order_preserving = true, same_bracketing = true;
};
Proved proved(const RankProgram& rp, const TuneOptions& o) {
  if (!collective_reduces(rp.collective)) return {};
  CheckOptions co;
  co.p_lo = o.p_lo;
  co.p_hi = o.p_hi;
  DiagnosticSink scratch;
  const CheckReport r = check_schedule(rp, co, scratch);
  return {r.ok && r.order_preserving, r.ok && r.same_bracketing};
}
Proved proved(const Program& prog, const ScheduleDecl& s, const TuneOptions& o) {
  RankProgram rp;
  DiagnosticSink scratch;
  if (!lower(prog, s, rp, scratch)) return {false, false};
  return proved(rp, o);
}

/// One schedule's instances over the p range (empty where it does not apply).
struct Priced {
  const ScheduleDecl* decl = nullptr;
  std::map<int64_t, Schedule> at;  ///< p -> instance (root 0)
  Proved proofs;
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
  pr.proofs = proved(rp, o);
  return pr;
}

/// A row's run of sizes with one choice: [lo, hi] bytes (hi 0: unbounded), the cheapest
/// schedule and, for a reducing collective, the cheapest proved same-bracketing, the
/// cheapest proved order-preserving and the cheapest proved both ("" where none applies).
struct Run {
  uint64_t lo = 0, hi = 0;
  std::string chosen, bracketed, ordered, safe;
  bool same_choices(const Run& o) const {
    return chosen == o.chosen && bracketed == o.bracketed && ordered == o.ordered && safe == o.safe;
  }
  bool operator==(const Run& o) const { return lo == o.lo && hi == o.hi && same_choices(o); }
};

}  // namespace

namespace {

/// A candidate of a collective's cells: a schedule, or the MPI library's own ("mpi").
struct Candidate {
  std::string name;
  Proved proofs;
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
      double best = 0, prev_cost = -1, best_ordered = 0, best_bracketed = 0, best_safe = 0;
      std::string bracketed, safe;
      for (size_t i = 0; i < cands.size(); ++i) {
        double cc = 0;
        if (!cost(i, p, grid[k], &cc)) continue;
        if (cell.chosen.empty() || cc < best) {
          best = cc;
          cell.chosen = cands[i].name;
        }
        if (cands[i].name == prev) prev_cost = cc;
        if (!reduces) continue;
        const Proved& pv = cands[i].proofs;
        if (pv.order_preserving && (cell.ordered.empty() || cc < best_ordered)) best_ordered = cc, cell.ordered = cands[i].name;
        if (pv.same_bracketing && (bracketed.empty() || cc < best_bracketed)) best_bracketed = cc, bracketed = cands[i].name;
        if (pv.order_preserving && pv.same_bracketing && (safe.empty() || cc < best_safe))
          best_safe = cc, safe = cands[i].name;
      }
      cell.best_cost = cell.chosen_cost = best;
      if (prev_cost >= 0 && prev_cost <= best * (1 + o.margin)) {
        cell.chosen = prev;  // hysteresis: keep the smaller size's choice while it is close
        cell.chosen_cost = prev_cost;
      }
      prev = cell.chosen;
      const uint64_t lo = k == 0 ? 0 : grid[k - 1] + 1, hi = k + 1 == grid.size() ? 0 : grid[k];
      const Run run{lo, hi, cell.chosen, bracketed, cell.ordered, safe};
      if (!runs.empty() && runs.back().same_choices(run))
        runs.back().hi = hi;
      else
        runs.push_back(run);
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
      // The library skips a schedule not proved what the call's operator needs
      // (bine/dispatch.hpp): the cheapest proved same-bracketing follows (floating-point
      // and user operators), then the cheapest order-preserving (non-commutative operators
      // with BINE_PMPI_SAME_BRACKETING=0), then the cheapest with both; each only when it is
      // not a rule of the cell already.
      std::vector<std::string> names{r.chosen};
      for (const std::string* n : {&r.bracketed, &r.ordered, &r.safe})
        if (!n->empty() && std::find(names.begin(), names.end(), *n) == names.end()) names.push_back(*n);
      for (const std::string& n : names) rule(n);
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
    for (const Priced& pr : priced) cands.push_back({pr.decl->name, pr.proofs});
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
      if (s->collective == c) cands.push_back({s->name, proved(program, *s, o)});
    if (cands.empty()) continue;
    cands.push_back({"mpi", Proved{}});  // the MPI library's own collective is taken as correct for every operator
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
