#!/usr/bin/env python3
"""A measured selection table against its measurements (docs/pmpi.md, "Tables from
measurement"): per collective, over the cells (p, bytes) of `bine-cc tune --measure
--measurements M.json -o T.json`,
  - the table's choice (the first rule containing the cell) over the fastest measured there,
  - the best single candidate (the one schedule, or "mpi", with the lowest geometric mean
    over the cells where it ran) over the fastest, and over the table's choice,
  - how many cells the table gives to the MPI library ("mpi").
Ratios are geometric means; 1.00 is the fastest measured in every cell.

usage: tune_report.py MEASUREMENTS TABLE
"""
import json
import math
import sys
from collections import defaultdict


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    meas, table = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    cells = defaultdict(dict)
    for m in meas:
        cells[(m["collective"], m["p"], m["bytes"])][m["schedule"]] = max(m["us"], 1e-3)
    print(f"{'collective':22s} {'cells':>5s} {'table/best':>10s} {'single/best':>11s} {'single/table':>12s} "
          f"{'mpi cells':>9s}  best single")
    for key in sorted({k[0] for k in cells}):
        mine = {k: v for k, v in cells.items() if k[0] == key}
        chosen, single_names = [], defaultdict(list)
        mpi_cells = 0
        for (_, p, b), times in sorted(mine.items()):
            best = min(times.values())
            rule = next((r for r in table.get(key, []) if r["p_min"] <= p <= r["p_max"] and r["bytes_min"] <= max(b, 1)
                         and max(b, 1) <= r.get("bytes_max", 2 ** 64)), None)
            if rule and rule["schedule"] in times:
                chosen.append(times[rule["schedule"]] / best)
                mpi_cells += rule["schedule"] == "mpi"
            for name, t in times.items():
                single_names[name].append((t / best, times[rule["schedule"]] / best if rule and rule["schedule"] in times else None))
        full = {n: v for n, v in single_names.items() if len(v) == len(mine)} or single_names
        name = min(full, key=lambda n: gmean([x for x, _ in full[n]]))
        s_best = gmean([x for x, _ in full[name]])
        s_table = gmean([x / y for x, y in full[name] if y])
        print(f"{key:22s} {len(mine):5d} {gmean(chosen):10.3f} {s_best:11.3f} {s_table:12.3f} {mpi_cells:9d}  {name}")


if __name__ == "__main__":
    main()
