#!/usr/bin/env python3
"""`bine-cc tune` (docs/pmpi.md, "bine-cc tune"): the table it writes, checked against
`bine-cc cost` run schedule by schedule, and loaded by the PMPI drop-in library.

Usage: run_tune.py BINE_CC SOURCE_DIR DROPIN_APP LIBBINE_PMPI

1. Determinism: two runs, same bytes.
2. Choice: for 24 seeded cells (collective, p, bytes), the first rule of the table that
   contains the cell names a schedule whose makespan (from `bine-cc cost` with the same
   alpha/beta/gamma, the PMPI byte convention: one rank's block for the rank-indexed
   collectives, so the priced vector is p times it) is within the margin of the cheapest
   schedule of that collective that applies at p. Every cell in the grid has a rule when
   some schedule applies.
3. The PMPI library loads the table (BINE_PMPI_TABLE) and an unmodified program gives the
   same checksums as without it, with calls served by bine schedules.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

MODEL = ["--alpha", "1.5", "--beta", "0.0001", "--gamma", "0.0002"]
MARGIN = 0.05
RANK_INDEXED = {"gather", "scatter", "allgather", "reduce_scatter_block", "alltoall"}


def main():
    bine, src, app, lib = sys.argv[1:5]
    libfiles = sorted(os.path.join(src, "dsl/lib", f) for f in os.listdir(os.path.join(src, "dsl/lib")) if f.endswith(".bine"))
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        t1, t2 = os.path.join(tmp, "t1.json"), os.path.join(tmp, "t2.json")
        for t in (t1, t2):
            subprocess.run([bine, "tune", *libfiles, "--ranks", "2..8", "--bytes-max", "65536", *MODEL, "-o", t], check=True)
        if open(t1, "rb").read() != open(t2, "rb").read():
            failures.append("two runs wrote different tables")
        table = json.load(open(t1))
        checked = json.loads(subprocess.run([bine, "check", *libfiles, "--ranks", "2..8", "--json"], capture_output=True,
                                            text=True, check=True).stdout)
        by_coll = {}
        for rep in checked:
            key = "reduce_scatter_block" if rep["collective"] == "reduce_scatter" else rep["collective"]
            by_coll.setdefault(key, []).append(rep["schedule"])

        def cost(name, p, nbytes):
            r = subprocess.run([bine, "cost", *libfiles, "--schedule", name, "-p", str(p), "--bytes", str(nbytes), *MODEL,
                                "--json"], capture_output=True, text=True)
            return json.loads(r.stdout)["makespan"] if r.returncode == 0 else None

        rng = random.Random(12)
        for _ in range(24):
            coll = rng.choice(sorted(by_coll))
            p = rng.randint(2, 8)
            nbytes = 2 ** rng.randint(3, 16)
            rule = next((r for r in table.get(coll, []) if r["p_min"] <= p <= r["p_max"] and r["bytes_min"] <= nbytes
                         and nbytes <= r.get("bytes_max", 2 ** 64)), None)
            priced = nbytes * p if coll in RANK_INDEXED else nbytes
            costs = {s: c for s in by_coll[coll] if (c := cost(s, p, priced)) is not None}
            cell = f"{coll} p={p} bytes={nbytes}"
            if not costs:
                if rule:
                    failures.append(f"{cell}: no schedule applies, but the table has {rule}")
                continue
            if rule is None:
                failures.append(f"{cell}: no rule, but {len(costs)} schedules apply")
                continue
            best = min(costs.values())
            got = costs.get(rule["schedule"])
            ok = got is not None and got <= best * (1 + MARGIN) + 1e-12
            print(("PASS " if ok else "FAIL ") + f"{cell}: {rule['schedule']} {got} vs cheapest {best} "
                  f"({min(costs, key=costs.get)})")
            if not ok:
                failures.append(cell)

        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
        table8 = os.path.join(tmp, "t8.json")
        subprocess.run([bine, "tune", *libfiles, "--ranks", "2..8", *MODEL, "-o", table8], check=True)
        plain = subprocess.run(["mpirun", "-np", "4", app], capture_output=True, text=True, env=env, timeout=120)
        tuned = subprocess.run(["mpirun", "-np", "4", "-x", "LD_PRELOAD=" + lib, "-x", "BINE_PMPI_TABLE=" + table8, "-x",
                                "BINE_PMPI_REPORT=1", app], capture_output=True, text=True, env=env, timeout=120)
        sums = lambda out: [l for l in out.splitlines() if l.startswith("checksum")]
        if plain.returncode or tuned.returncode or not sums(plain.stdout) or sums(plain.stdout) != sums(tuned.stdout):
            failures.append(f"drop-in with the tuned table: rc {plain.returncode}/{tuned.returncode}, "
                            f"checksums {sums(plain.stdout)} vs {sums(tuned.stdout)}: {tuned.stderr[-500:]}")
        elif "table: " + table8 not in tuned.stderr or " bine 0 calls" in tuned.stderr.split("allreduce:")[1].split("\n")[0]:
            failures.append("the report does not show the tuned table serving allreduce: " + tuned.stderr)
        else:
            print("PASS the PMPI library runs the program with the tuned table; report:\n" + tuned.stderr)
    if failures:
        print("tune: FAIL\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("tune: OK")


if __name__ == "__main__":
    main()
