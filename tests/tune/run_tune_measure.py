#!/usr/bin/env python3
"""`bine-cc tune --measure` (docs/pmpi.md, "Tables from measurement"): the table chosen from
bine-tune-bench's measurements, checked against those measurements, and loaded by the PMPI
drop-in library.

Usage: run_tune_measure.py BINE_CC SOURCE_DIR DROPIN_APP LIBBINE_PMPI

1. Every cell (collective, p, bytes) that has a measurement has a rule, and the first rule
   containing it names a candidate (a schedule, or "mpi": the MPI library's own) whose
   measured time is within the margin of the fastest measured in that cell; a cell where
   the fastest is a schedule not proved order-preserving is followed by an order-preserving
   rule. Oracle: the measurement file bine-cc wrote, read independently here.
2. Every applicable schedule of the library and "mpi" were measured at every p and size.
3. The PMPI library loads the measured table and an unmodified program gives the plain
   run's checksums.
4. Errors: a missing measuring program and a missing model/measure choice exit 2.
"""
import json
import os
import subprocess
import sys
import tempfile

MARGIN = 0.05


def main():
    bine, src, app, lib = sys.argv[1:5]
    libfiles = sorted(os.path.join(src, "dsl/lib", f) for f in os.listdir(os.path.join(src, "dsl/lib")) if f.endswith(".bine"))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        table_f, meas_f = os.path.join(tmp, "t.json"), os.path.join(tmp, "m.json")
        r = subprocess.run([bine, "tune", *libfiles, "--measure", "--ranks", "2..4", "--bytes-min", "8", "--bytes-max",
                            "4096", "--iters", "3", "--measurements", meas_f, "-o", table_f], env=env,
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            print(r.stderr[-3000:])
            sys.exit("tune --measure failed")
        table, meas = json.load(open(table_f)), json.load(open(meas_f))
        checked = json.loads(subprocess.run([bine, "check", *libfiles, "--ranks", "2..4", "--json"], capture_output=True,
                                            text=True, check=True).stdout)
        applicable = {}  # (key, p) -> schedules that apply
        order_ok = {"mpi"}
        for rep in checked:
            key = "reduce_scatter_block" if rep["collective"] == "reduce_scatter" else rep["collective"]
            excluded = {e["p"] for e in rep.get("excluded", [])}
            for p in range(2, 5):
                if p not in excluded:
                    applicable.setdefault((key, p), set()).add(rep["schedule"])
            if rep.get("order_preserving", True):
                order_ok.add(rep["schedule"])
        cells = {}
        for m in meas:
            cells.setdefault((m["collective"], m["p"], m["bytes"]), {})[m["schedule"]] = m["us"]
        sizes = [2 ** k for k in range(3, 13)]
        # 2. completeness of the measurement
        for (key, p), names in sorted(applicable.items()):
            for b in ([0] if key == "barrier" else sizes):
                got = set(cells.get((key, p, b), {}))
                if got != names | {"mpi"}:
                    failures.append(f"{key} p={p} bytes={b}: measured {sorted(got)}, expected {sorted(names | {'mpi'})}")
        # 1. the choice against the measurements
        checked_cells = 0
        for (key, p, b), times in sorted(cells.items()):
            probe = sizes if key == "barrier" else [b]
            for nbytes in probe:
                rules = [x for x in table.get(key, []) if x["p_min"] <= p <= x["p_max"] and x["bytes_min"] <= nbytes
                         and nbytes <= x.get("bytes_max", 2 ** 64)]
                cell = f"{key} p={p} bytes={nbytes}"
                if not rules:
                    failures.append(f"{cell}: no rule")
                    continue
                best = min(times.values())
                got = times.get(rules[0]["schedule"])
                checked_cells += 1
                if got is None or got > best * (1 + MARGIN) + 1e-9:
                    failures.append(f"{cell}: {rules[0]['schedule']} {got} us vs fastest {best} us")
                if rules[0]["schedule"] not in order_ok and not any(x["schedule"] in order_ok for x in rules[1:]):
                    failures.append(f"{cell}: no order-preserving rule after {rules[0]['schedule']}")
        print(f"checked {checked_cells} cells against {len(meas)} measurements")
        # 3. the PMPI library runs a program with it
        plain = subprocess.run(["mpirun", "-np", "4", app], capture_output=True, text=True, env=env, timeout=120)
        tuned = subprocess.run(["mpirun", "-np", "4", "-x", "LD_PRELOAD=" + lib, "-x", "BINE_PMPI_TABLE=" + table_f, "-x",
                                "BINE_PMPI_REPORT=1", app], capture_output=True, text=True, env=env, timeout=120)
        sums = lambda out: [l for l in out.splitlines() if l.startswith("checksum")]
        if plain.returncode or tuned.returncode or not sums(plain.stdout) or sums(plain.stdout) != sums(tuned.stdout):
            failures.append(f"drop-in with the measured table: rc {plain.returncode}/{tuned.returncode}, "
                            f"checksums {sums(plain.stdout)} vs {sums(tuned.stdout)}: {tuned.stderr[-500:]}")
        else:
            print("PASS the PMPI library runs the program with the measured table; report:\n" + tuned.stderr[-1500:])
        # 4. errors
        for args, what in ((["--measure", "--bench", os.path.join(tmp, "none")], "a missing measuring program"),
                           ([], "neither --measure nor the model")):
            r = subprocess.run([bine, "tune", *libfiles, "--ranks", "2", *args], capture_output=True, text=True, env=env)
            if r.returncode != 2 or "error" not in r.stderr:
                failures.append(f"{what}: exit {r.returncode}, {r.stderr.strip()[:200]}")
    if failures:
        print("tune_measure: FAIL\n  " + "\n  ".join(failures[:40]))
        sys.exit(1)
    print("tune_measure: OK")


if __name__ == "__main__":
    main()
