#!/usr/bin/env python3
"""Global-link traffic of every allreduce schedule on 1,080 real Leonardo allocations.

The Bine trees paper's Sec. 2.4.2 / Fig. 5 study, reproduced with `bine-cc traffic`
(docs/topology.md): for every job of DATA/allocations (one rank per node, in the order of
the host list) and every allreduce schedule of dsl/lib, the bytes on global links
(between Leonardo cells, the dragonfly+ groups of DATA/map.txt). Printed per job size:
the median reduction of global bytes of Bine against its counterpart and the fraction of
jobs where Bine is worse, for two pairs:

  latency:   bine_allreduce_lat vs recursive_doubling_allreduce (butterflies, Eq. 2 pair)
  bandwidth: bine_allreduce_bdw vs rabenseifner_allreduce (reduce-scatter + allgather)

reduction = 1 - global_bytes(Bine) / global_bytes(counterpart); jobs inside one cell put
nothing on global links and are left out of the medians (counted in `one cell`).

Usage: leonardo_traffic.py [DATA_DIR] [--bine-cc PATH] [--json OUT] [--plot OUT.png]
  DATA_DIR defaults to ../shared/data/leonardo relative to the repository. The data is not
  part of the repository: this benchmark is not run by CI.
"""
import argparse
import collections
import glob
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = [("latency", "bine_allreduce_lat", "recursive_doubling_allreduce"),
         ("bandwidth", "bine_allreduce_bdw", "rabenseifner_allreduce")]


def allreduce_schedules(lib):
    names = []
    for f in lib:
        for line in open(f):
            w = line.split()
            if len(w) >= 4 and w[0] == "schedule" and w[2] == "implements" and w[3] == "allreduce":
                names.append(w[1])
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?", default=os.path.join(REPO, "..", "shared", "data", "leonardo"))
    ap.add_argument("--bine-cc", default=os.path.join(REPO, "build", "bine-cc"))
    ap.add_argument("--json", help="write per-job global bytes of every schedule here")
    ap.add_argument("--plot", help="boxplot of the reductions per job size (needs matplotlib)")
    args = ap.parse_args()
    alloc_dir = os.path.join(args.data, "allocations")
    jobs = sorted(glob.glob(os.path.join(alloc_dir, "*.txt")))
    if not jobs or not os.path.exists(os.path.join(args.data, "map.txt")):
        sys.exit(f"leonardo_traffic: no allocations or map.txt under {args.data}")
    lib = sorted(glob.glob(os.path.join(REPO, "dsl", "lib", "*.bine")))
    scheds = allreduce_schedules(lib)
    t0 = time.time()
    by_size = collections.defaultdict(list)
    for j in jobs:
        with open(j) as f:
            by_size[sum(1 for line in f if line.strip())].append(j)
    # global bytes [job][schedule]; one bine-cc run per job size, every job a --machine
    glob_bytes = collections.defaultdict(dict)
    groups = {}
    for p in sorted(by_size):
        cmd = [args.bine_cc, "traffic", *lib, "-p", str(p), "--json", "--bytes", str(1 << 20), "--elem-size", "4"]
        for s in scheds:
            cmd += ["--schedule", s]
        for j in by_size[p]:
            cmd += ["--machine", "leonardo:" + j]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"leonardo_traffic: bine-cc failed at p={p}: {r.stderr.strip()}")
        for e in json.loads(r.stdout):
            job = os.path.basename(e["machine"].split(":", 1)[1]).removesuffix(".txt")
            if e.get("applicable", True):
                glob_bytes[job][e["schedule"]] = e["total"]["global"]["bytes"]
                groups[job] = (p, e["groups"])
    elapsed = time.time() - t0

    print(f"Leonardo: {len(jobs)} jobs, {len(scheds)} allreduce schedules, 1 MiB vector, one rank per node")
    for label, b, d in PAIRS:
        print(f"\n{label}: {b} vs {d} (global-byte reduction; > 0: Bine puts fewer bytes on global links)")
        print(f"  {'nodes':>5} {'jobs':>5} {'one cell':>8} {'median':>8} {'min':>8} {'max':>8} {'Bine worse':>10}")
        all_red = []
        for p in sorted(by_size):
            red = []
            one_cell = 0
            for j in by_size[p]:
                job = os.path.basename(j).removesuffix(".txt")
                gb, gd = glob_bytes[job].get(b), glob_bytes[job].get(d)
                if gb is None or gd is None:
                    continue
                if gd == 0 and gb == 0:
                    one_cell += 1
                    continue
                red.append(1 - gb / gd if gd else float("-inf"))
            all_red += red
            if red:
                worse = sum(1 for x in red if x < 0) / len(red)
                print(f"  {p:>5} {len(by_size[p]):>5} {one_cell:>8} {statistics.median(red):>8.1%} {min(red):>8.1%} "
                      f"{max(red):>8.1%} {worse:>10.1%}")
            else:
                print(f"  {p:>5} {len(by_size[p]):>5} {one_cell:>8} {'-':>8} {'-':>8} {'-':>8} {'-':>10}")
        if all_red:
            print(f"  all jobs with global traffic: median {statistics.median(all_red):.1%}, max {max(all_red):.1%}, "
                  f"Bine worse in {sum(1 for x in all_red if x < 0) / len(all_red):.1%}")
    print("\nevery allreduce schedule: global bytes relative to recursive_doubling_allreduce, median over jobs with global traffic")
    for s in scheds:
        rel = [g[s] / g["recursive_doubling_allreduce"] for g in glob_bytes.values()
               if s in g and g.get("recursive_doubling_allreduce")]
        print(f"  {s:<36} {statistics.median(rel):8.3f}  ({len(rel)} jobs)" if rel else f"  {s:<36} not applicable")
    print(f"\nbine-cc traffic time: {elapsed:.1f} s for {len(jobs)} jobs x {len(scheds)} schedules")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"schedules": scheds, "jobs": {j: {"nodes": groups[j][0], "cells": groups[j][1], "global_bytes": g}
                                                     for j, g in sorted(glob_bytes.items())}}, f, indent=1, sort_keys=True)
    if args.plot:
        plot(args.plot, by_size, glob_bytes)


def plot(out, by_size, glob_bytes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    sizes = [p for p in sorted(by_size) if len(by_size[p]) >= 5]
    for ax, (label, b, d) in zip(axes, PAIRS):
        data, ticks = [], []
        for p in sizes:
            red = []
            for j in by_size[p]:
                g = glob_bytes[os.path.basename(j).removesuffix(".txt")]
                if g.get(d):
                    red.append(100 * (1 - g[b] / g[d]))
            if red:
                data.append(red)
                ticks.append(f"{p}\n({len(red)})")
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(ticks) + 1), ticks)
        ax.axhline(100 / 3, color="red", linestyle="--", linewidth=1, label="Eq. 2 bound (33%)")
        ax.axhline(0, color="gray", linewidth=0.8)
        ax.set_title(f"{b} vs {d}", fontsize=10)
        ax.set_xlabel("nodes (jobs with global traffic)")
        ax.legend(loc="lower right", fontsize=8)
    axes[0].set_ylabel("global-link bytes reduction (%)")
    fig.suptitle("Leonardo, 1,080 real allocations: global traffic of Bine vs its counterpart (cf. Bine trees paper, Fig. 5)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
