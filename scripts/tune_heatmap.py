#!/usr/bin/env python3
"""A PMPI selection table (bine-cc tune, docs/pmpi.md) as heat maps: one panel per
collective, process count p against message size, each cell coloured by the schedule the
library picks there (the first rule containing the cell; white: falls back to MPI).

Usage: tune_heatmap.py TABLE.json -o OUT.png|OUT.svg [--collectives allreduce,bcast,...]
       [--bytes-max N]
Needs matplotlib (Debian python3-matplotlib; use /usr/bin/python3 where another python3 is
first on PATH).
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402


def pick(rules, p, nbytes):
    for r in rules:
        if r.get("p_min", 0) <= p <= r.get("p_max", 1 << 62) and r.get("bytes_min", 0) <= nbytes <= r.get("bytes_max", 1 << 62):
            return r["schedule"]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--collectives", default="allreduce,bcast,reduce,allgather,reduce_scatter_block,alltoall")
    ap.add_argument("--bytes-max", type=int, default=16 << 20)
    a = ap.parse_args()
    table = json.load(open(a.table))
    colls = [c for c in a.collectives.split(",") if table.get(c)]
    sizes = [1 << k for k in range(3, a.bytes_max.bit_length()) if (1 << k) <= a.bytes_max]
    ps = sorted({p for c in colls for r in table[c] for p in range(r.get("p_min", 1), r.get("p_max", 32) + 1)})
    cols = 2
    rows = (len(colls) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 3.2 * rows), squeeze=False)
    for ax, coll in zip(axes.flat, colls):
        names = sorted({pick(table[coll], p, b) for p in ps for b in sizes} - {None})
        grid = [[(names.index(s) if (s := pick(table[coll], p, b)) else -1) for b in sizes] for p in ps]
        base = plt.get_cmap("tab20").colors
        cmap = ListedColormap(["white"] + [base[i % len(base)] for i in range(len(names))])
        ax.imshow([[v + 1 for v in row] for row in grid], aspect="auto", origin="lower", cmap=cmap,
                  vmin=0, vmax=len(names), interpolation="nearest")
        ax.set_title(coll)
        ax.set_xticks(range(0, len(sizes), 3))
        ax.set_xticklabels([f"{b}" if b < 1024 else f"{b >> 10}K" if b < 1 << 20 else f"{b >> 20}M" for b in sizes[::3]])
        ax.set_yticks(range(0, len(ps), 4))
        ax.set_yticklabels([str(p) for p in ps[::4]])
        ax.set_xlabel("bytes (PMPI convention)")
        ax.set_ylabel("p")
        handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(i + 1)) for i in range(len(names))]
        ax.legend(handles, names, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    for ax in list(axes.flat)[len(colls):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)


if __name__ == "__main__":
    main()
