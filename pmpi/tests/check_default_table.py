#!/usr/bin/env python3
"""The PMPI library's default selection table against the verifier's proofs (issue 45,
docs/pmpi.md "What the proofs allow").

Reads pmpi/default_table.json (the table compiled into libbine_pmpi.so) and the proofs of
`bine-cc check dsl/lib/*.bine --ranks 1..32 --json` (the range the library's header is
verified for), and walks the table itself (first rule whose p and byte ranges contain the
call and whose schedule applies at p and has the proofs the call needs; a rule "mpi" ends
the walk) for every collective, p = 1..32 and sizes on both sides of every bound, with the
operator needs of bine::mpi::dispatch_choose():

- none (an integer sum), same bracketing (a float or double sum, a commutative user
  operator), order-preserving and same bracketing (a non-commutative user operator);

and checks that every call gets a schedule (no fallback for want of a proof: the table ends
every reducing collective with a schedule proved both for every p), that the schedule has
the proofs the call needs (so every float and double choice is proved same-bracketing on all
ranks), and that every schedule the table names is a verified schedule of its collective.

usage: check_default_table.py BINE_CC SOURCE_DIR
"""
import glob
import json
import os
import subprocess
import sys

REDUCING = {"allreduce", "reduce", "reduce_scatter", "scan", "exscan"}
KEY_COLLECTIVE = {"reduce_scatter_block": "reduce_scatter"}


def main():
    bcc, src = sys.argv[1], sys.argv[2]
    table = json.load(open(os.path.join(src, "pmpi", "default_table.json")))
    lib = sorted(os.path.relpath(f, src) for f in glob.glob(os.path.join(src, "dsl", "lib", "*.bine")))
    out = subprocess.run([bcc, "check", *lib, "--ranks", "1..32", "--json"], cwd=src, capture_output=True,
                         text=True, check=True).stdout
    proofs = {}
    for r in json.loads(out):
        proofs[r["schedule"]] = {
            "collective": r["collective"],
            "ok": r["ok"],
            "excluded": {e["p"] for e in r.get("excluded", [])},
            "order_preserving": bool(r.get("order_preserving", False)),
            "same_bracketing": bool(r.get("same_bracketing", False)),
        }
    failures = []
    for key, rules in table.items():
        coll = KEY_COLLECTIVE.get(key, key)
        for k, rule in enumerate(rules):
            name = rule["schedule"].removeprefix("bcc_")
            if name == "mpi":
                continue
            pr = proofs.get(name)
            if pr is None or pr["collective"] != coll or not pr["ok"]:
                failures.append(f"{key} rule {k}: {name} is not a verified {coll} schedule of dsl/lib")
    if failures:
        print("\n".join(failures))
        return 1

    def walk(key, p, nbytes, needs):
        coll = KEY_COLLECTIVE.get(key, key)
        for rule in table[key]:
            if not (rule.get("p_min", 1) <= p <= rule.get("p_max", 1 << 62)):
                continue
            if not (rule.get("bytes_min", 0) <= nbytes <= rule.get("bytes_max", 1 << 64)):
                continue
            name = rule["schedule"].removeprefix("bcc_")
            if name == "mpi":
                return "mpi"
            pr = proofs[name]
            if p in pr["excluded"]:
                continue
            if coll in REDUCING:
                if "order" in needs and not pr["order_preserving"]:
                    continue
                if "bracketing" in needs and not pr["same_bracketing"] and not rule.get("any_bracketing", False):
                    continue
            return name
        return None

    bounds = {1, 4, 8, 1 << 20, 1 << 26}
    for rules in table.values():
        for rule in rules:
            for f in ("bytes_min", "bytes_max"):
                if f in rule:
                    bounds |= {max(1, rule[f] - 1), max(1, rule[f]), rule[f] + 1}
    calls = 0
    for key in table:
        coll = KEY_COLLECTIVE.get(key, key)
        kinds = [(), ("bracketing",), ("order", "bracketing")] if coll in REDUCING else [()]
        for p in range(1, 33):
            for nbytes in sorted(bounds):
                for needs in kinds:
                    calls += 1
                    got = walk(key, p, nbytes, needs)
                    what = f"{key} p={p} bytes={nbytes} needs={'+'.join(needs) or 'none'}"
                    if got in (None, "mpi"):
                        failures.append(f"{what}: no schedule ({got or 'no rule applies'})")
                        continue
                    pr = proofs[got]
                    if coll in REDUCING and "bracketing" in needs and not pr["same_bracketing"]:
                        failures.append(f"{what}: {got} is not proved same-bracketing")
                    if coll in REDUCING and "order" in needs and not pr["order_preserving"]:
                        failures.append(f"{what}: {got} is not proved order-preserving")
    for f in failures[:40]:
        print("FAIL:", f)
    print(f"default table: {calls} calls walked (p = 1..32, {len(bounds)} sizes, every operator kind), "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
