#include "tune.h"

#include <map>

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
  const bool reduces = collective_reduces(s.collective);
  for (int64_t p = o.p_lo; p <= o.p_hi; ++p) {
    Schedule sch;
    if (instantiate(rp, {p, 0, default_commutative(s)}, sch, scratch) != InstStatus::ok) continue;
    if (reduces && pr.order_preserving) {
      Schedule nc;
      if (instantiate(rp, {p, 0, false}, nc, scratch) != InstStatus::ok) {
        pr.order_preserving = false;
      } else {
        const VerifyResult v = verify(nc, scratch);
        pr.order_preserving = v.ok && v.order_preserving;
      }
    }
    pr.at.emplace(p, std::move(sch));
  }
  return pr;
}

/// A row's run of sizes with one choice: [lo, hi] bytes (hi 0: unbounded).
struct Run {
  uint64_t lo = 0, hi = 0;
  std::string chosen, ordered;
  bool operator==(const Run& o) const { return lo == o.lo && hi == o.hi && chosen == o.chosen && ordered == o.ordered; }
};

}  // namespace

TuneResult tune(const Program& program, const std::vector<const ScheduleDecl*>& schedules, const TuneOptions& o) {
  TuneResult res;
  res.table = nlohmann::ordered_json::object();
  const std::vector<uint64_t> grid = sizes(o);
  for (Collective c : {Collective::allreduce, Collective::bcast, Collective::reduce, Collective::allgather,
                       Collective::gather, Collective::scatter, Collective::reduce_scatter, Collective::alltoall,
                       Collective::scan, Collective::exscan, Collective::barrier}) {
    std::vector<Priced> cands;
    for (const ScheduleDecl* s : schedules)
      if (s->collective == c) cands.push_back(instances(program, *s, o));
    if (cands.empty()) continue;
    const bool reduces = collective_reduces(c);
    // Per p, the runs of sizes with one (chosen, ordered) pair.
    std::vector<std::pair<int64_t, std::vector<Run>>> rows;
    for (int64_t p = o.p_lo; p <= o.p_hi; ++p) {
      std::vector<Run> runs;
      std::string prev;
      for (size_t k = 0; k < grid.size(); ++k) {
        const CostVector vec{elements(c, p, grid[k], o.elem_size), o.elem_size};
        TuneCell cell;
        cell.collective = c;
        cell.p = p;
        cell.bytes = grid[k];
        double best = 0, prev_cost = -1, best_ordered = 0;
        for (const Priced& pr : cands) {
          const auto it = pr.at.find(p);
          if (it == pr.at.end()) continue;
          const CostResult cr = simulate_cost(it->second, vec, o.params);
          if (!cr.ok) continue;
          if (cell.chosen.empty() || cr.makespan < best) {
            best = cr.makespan;
            cell.chosen = pr.decl->name;
          }
          if (pr.decl->name == prev) prev_cost = cr.makespan;
          if (reduces && pr.order_preserving && (cell.ordered.empty() || cr.makespan < best_ordered)) {
            best_ordered = cr.makespan;
            cell.ordered = pr.decl->name;
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
  return res;
}

}  // namespace bine
