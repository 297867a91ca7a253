#!/usr/bin/env python3
"""Best-schedule atlas under the alpha-beta-gamma cost model, in the style of Fig. 14 of
Thakur, Rabenseifner and Gropp 2005 (shared/seeds/mpich-collectives-thakur.txt, Sec. 5.3).

For every collective in COLLECTIVES, every process count p in [--pmin, --pmax] and every
message size in the size grid, it prices every library schedule of that collective with
`bine-cc cost --json` (docs/cost.md) and writes a Markdown table whose cell names the
schedule with the smallest makespan (ties listed, joined by '='). Python 3 stdlib only.

Sizes: for allreduce and bcast the column is the vector size n in bytes; for the
rank-indexed collectives (allgather, reduce_scatter) it is the per-rank block m in bytes,
so the vector is p*m bytes (MPI_Allgather's sendcount; the blocks are then always equal).

Usage (from the repository root):
  python3 scripts/atlas.py [--bine-cc build/bine-cc] [--out docs/atlas.md] [--jobs 2]

The output depends only on the arguments, the library and bine-cc: no times or dates.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

COLLECTIVES = ["allreduce", "bcast", "allgather", "reduce_scatter"]
RANK_INDEXED = {"allgather", "reduce_scatter"}

# Short codes, unique within a collective; schedules not listed get an automatic code.
CODES = {
    "allreduce": {
        "recursive_doubling_allreduce": "RD",
        "rabenseifner_allreduce": "Ra",
        "rabenseifner_allreduce_halving": "Rh",
        "ring_allreduce": "Ri",
        "bine_allreduce_lat": "BL",
        "bine_allreduce_bdw": "BB",
        "bine_allreduce_rsag": "BR",
        "swing_allreduce_lat": "SL",
        "swing_allreduce_bdw": "SB",
        "recexch_allreduce": "RX",
        "linear_allreduce": "Li",
        "bucket_allreduce": "Bu",
        "reduce_bcast_allreduce": "RB",
        "recursive_multiplying_allreduce": "RM",
        "k_reduce_scatter_allgather_allreduce": "KR",
    },
    "bcast": {
        "binomial_bcast_halving": "Th",
        "binomial_bcast_doubling": "Td",
        "van_de_geijn_bcast": "VG",
        "van_de_geijn_bcast_rd": "VR",
        "bine_bcast_lat": "BL",
        "bine_bcast_bdw": "BB",
        "knomial_bcast": "Kn",
        "linear_bcast": "Li",
        "pipeline_bcast": "Pi",
        "chain_bcast": "Ch",
        "binary_tree_bcast": "BT",
    },
    "allgather": {
        "recursive_doubling_allgather": "RD",
        "ring_allgather": "Ri",
        "bruck_allgather": "Br",
        "bine_allgather": "Bi",
        "sparbit_allgather": "Sp",
        "neighbor_exchange_allgather": "NE",
        "swing_allgather": "Sw",
        "bucket_allgather": "Bu",
        "k_bruck_allgather": "KB",
        "gather_bcast_allgather": "GB",
        "recexch_allgather": "RX",
        "recexch_halving_allgather": "RH",
    },
    "reduce_scatter": {
        "recursive_halving_reduce_scatter": "RH",
        "pairwise_reduce_scatter": "PW",
        "bine_reduce_scatter": "Bi",
        "ring_reduce_scatter": "Ri",
        "bucket_reduce_scatter": "Bu",
        "swing_reduce_scatter": "Sw",
        "reduce_then_scatter": "RS",
    },
}

REL_TIE = 1e-9  # makespans within this relative distance are a tie


def fmt_size(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k and b % k == 0:
            return "%d %s" % (b // k, unit)
    return "%d B" % b


def fmt_num(x):
    return repr(float(x)) if x != int(x) else str(int(x))


def discover(bine_cc, files):
    """Schedules by collective, from `bine-cc check FILES --ranks 2` (verified ones only)."""
    out = subprocess.run([bine_cc, "check", *files, "--ranks", "2"], capture_output=True, text=True)
    found = {}
    for line in out.stdout.splitlines():
        m = re.match(r"^(\w+) \((\w+)\): verified", line)
        if m:
            found.setdefault(m.group(2), []).append(m.group(1))
    if not found:
        sys.exit("atlas: no verified schedules found:\n" + out.stdout + out.stderr)
    return {c: sorted(v) for c, v in found.items()}


def assign_codes(coll, names):
    codes, used = {}, set()
    for n in names:
        c = CODES.get(coll, {}).get(n)
        if c is None or c in used:
            base = "".join(w[0] for w in n.split("_") if w and w != coll).upper() or "S"
            c, i = base, 2
            while c in used:
                c, i = "%s%d" % (base, i), i + 1
        codes[n] = c
        used.add(c)
    return codes


def cost(job):
    bine_cc, files, name, p, nbytes, a = job
    cmd = [bine_cc, "cost", *files, "--schedule", name, "--ranks", str(p), "--root", "0",
           "--bytes", str(nbytes), "--elem-size", str(a.elem_size), "--alpha", fmt_num(a.alpha),
           "--beta", fmt_num(a.beta), "--gamma", fmt_num(a.gamma_elem), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        if "does not apply to p=" in r.stderr:
            return None  # a `requires` excludes this p: not a candidate
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    d = json.loads(r.stdout)
    if not d.get("ok"):
        raise RuntimeError("%s: not ok: %s" % (" ".join(cmd), d.get("error")))
    return d["makespan"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bine-cc", default="build/bine-cc")
    ap.add_argument("--lib", default="dsl/lib", help="directory of .bine files (all are loaded)")
    ap.add_argument("--out", default="docs/atlas.md")
    ap.add_argument("--raw", help="also write every makespan as JSON here")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pmin", type=int, default=2)
    ap.add_argument("--pmax", type=int, default=64)
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=8 << 20)
    ap.add_argument("--size-factor", type=int, default=4)
    ap.add_argument("--alpha", type=float, default=2.0, help="latency per message, us")
    ap.add_argument("--beta", type=float, default=1e-4, help="time per byte, us (1e-4 us = 0.1 ns/B)")
    ap.add_argument("--gamma-per-byte", type=float, default=5e-5,
                    help="reduction time per byte, us (5e-5 us = 0.05 ns/B); bine-cc gets it times --elem-size")
    ap.add_argument("--elem-size", type=int, default=8, help="bytes per element (8: MPI_DOUBLE, as in Fig. 14)")
    a = ap.parse_args()
    a.gamma_elem = a.gamma_per_byte * a.elem_size

    files = sorted(glob.glob(os.path.join(a.lib, "*.bine")))
    # Run a private copy of bine-cc, so that a rebuild during the run cannot mix versions.
    tmp = tempfile.mkdtemp(prefix="atlas-")
    try:
        exe = os.path.join(tmp, "bine-cc")
        shutil.copy2(a.bine_cc, exe)
        run(a, files, exe)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(a, files, exe):
    scheds = discover(exe, files)
    sizes = []
    s = a.min_bytes
    while s <= a.max_bytes:
        sizes.append(s)
        s *= a.size_factor
    ps = list(range(a.pmin, a.pmax + 1))

    jobs = []
    for coll in COLLECTIVES:
        for name in scheds.get(coll, []):
            for p in ps:
                for m in sizes:
                    nbytes = p * m if coll in RANK_INDEXED else m
                    jobs.append((coll, name, p, m, (exe, files, name, p, nbytes, a)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(cost, [j[-1] for j in jobs]))
    table = {}
    for (coll, name, p, m, _), t in zip(jobs, results):
        table.setdefault(coll, {}).setdefault((p, m), {})[name] = t

    argv = ["python3", "scripts/atlas.py"] + sys.argv[1:]
    L = []
    L.append("# Best-schedule atlas under the cost model")
    L.append("")
    L.append("Generated by")
    L.append("")
    L.append("    " + " ".join(argv))
    L.append("")
    L.append("(do not edit by hand). In the style of the MPICH paper's Fig. 14 (Thakur, Rabenseifner "
             "and Gropp 2005, the T3E 900 allreduce atlas; seed mpich-collectives-thakur.txt, Sec. 5.3): "
             "each cell names the schedule of `%s/*.bine` with the smallest makespan of "
             "`bine-cc cost` (the alpha-beta-gamma simulation of docs/cost.md, plain model: f_alpha = "
             "f_beta = 1, flat network, no copy or permutation cost)." % a.lib)
    L.append("")
    L.append("Parameters (a modern cluster; times in microseconds):")
    L.append("")
    L.append("- alpha = %s us per message" % fmt_num(a.alpha))
    L.append("- beta = %s us/B (%s ns/B)" % (fmt_num(a.beta), fmt_num(a.beta * 1000)))
    L.append("- gamma = %s us/B (%s ns/B); elements of %d B (MPI_DOUBLE), so `--gamma %s` per element"
             % (fmt_num(a.gamma_per_byte), fmt_num(a.gamma_per_byte * 1000), a.elem_size, fmt_num(a.gamma_elem)))
    L.append("- p = %d..%d; sizes %s to %s, factor %d; broadcast root 0" %
             (a.pmin, a.pmax, fmt_size(sizes[0]), fmt_size(sizes[-1]), a.size_factor))
    L.append("- allreduce and bcast: the column is the vector size n; allgather and reduce_scatter: the "
             "column is the per-rank block m, the vector is p*m")
    L.append("- a cell lists every schedule within a relative %g of the best, joined by `=`; `-`: none applies"
             % REL_TIE)
    L.append("")
    L.append("Under the model only alpha/beta (here %s B) and gamma/beta matter: scaling all three "
             "scales every makespan, so the crossovers move with alpha/beta." % fmt_num(a.alpha / a.beta))
    L.append("")
    raw = {}
    for coll in COLLECTIVES:
        names = scheds.get(coll, [])
        if not names:
            continue
        codes = assign_codes(coll, names)
        won, sole = {n: 0 for n in names}, {n: 0 for n in names}
        rows = []
        for p in ps:
            cells = []
            for m in sizes:
                res = table[coll][(p, m)]
                raw.setdefault(coll, {}).setdefault(str(p), {})[str(m)] = res
                valid = {n: t for n, t in res.items() if t is not None}
                if not valid:
                    cells.append("-")
                    continue
                best = min(valid.values())
                winners = [n for n in names if n in valid and valid[n] <= best * (1 + REL_TIE)]
                for n in winners:
                    won[n] += 1
                if len(winners) == 1:
                    sole[winners[0]] += 1
                cells.append("=".join(codes[n] for n in sorted(winners, key=lambda n: codes[n])))
            rows.append("| %d | %s |" % (p, " | ".join(cells)))
        col = "n" if coll not in RANK_INDEXED else "m per rank"
        L.append("## %s" % coll)
        L.append("")
        L.append("| code | schedule | cells best (alone) |")
        L.append("|---|---|---|")
        for n in sorted(names, key=lambda n: codes[n]):
            L.append("| %s | %s | %d (%d) |" % (codes[n], n, won[n], sole[n]))
        L.append("")
        L.append("| p \\ %s | %s |" % (col, " | ".join(fmt_size(m) for m in sizes)))
        L.append("|---:|" + "---|" * len(sizes))
        L.extend(rows)
        L.append("")
    text = "\n".join(L).rstrip("\n") + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump({"sizes": sizes, "ps": ps, "makespan_us": raw}, f, sort_keys=True, indent=0)
    print("atlas: %d cost calls, wrote %s" % (len(jobs), a.out))


if __name__ == "__main__":
    main()
