#!/usr/bin/env python3
"""The generated header's registry agrees with `bine-cc check` (issue 11).

Usage: check_registry.py BINE_CC REGISTRY_DUMP SOURCE_DIR P_LO P_HI FILES...

REGISTRY_DUMP prints what the header's X-macro lists and the _applicable / _requires
functions say for p = 0..64 (tests/registry/registry_dump.c). The oracle is
`bine-cc check FILES --ranks P_LO..P_HI --json`, run here: the header must list exactly
the checked schedules, each under its collective, and for every p exclude the same p with
the same reason; outside P_LO..P_HI _applicable is -1 and _requires names the range.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

PREFIX = "bcc_"  # the default of `bine-cc compile --prefix`, which the build uses


def check_prefix_option(bine_cc, src, files):
    """`--prefix my_` renames every generated symbol and the registry macros; a prefix that
    cannot start a C identifier is refused (exit 2) and writes nothing."""
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "h.h")
        subprocess.run([bine_cc, "compile", *files, "--verify-ranks", "1..4", "--prefix", "my_", "-o", out],
                       cwd=src, check=True, capture_output=True)
        text = open(out).read()
        names = re.findall(r"^int (\w+)\(", text, re.M)
        if not names or any(not n.startswith("my_") for n in names):
            errors.append(f"--prefix my_: prototypes {names[:5]}")
        if "#define MY_ALLREDUCE_SCHEDULES(X)" not in text or re.search(r"\bbcc_|BCC_", text):
            errors.append("--prefix my_: registry macros not renamed or default prefix left")
        bad = subprocess.run([bine_cc, "compile", *files, "--prefix", "1x", "-o", out + ".bad"], cwd=src,
                             capture_output=True, text=True)
        if bad.returncode != 2 or os.path.exists(out + ".bad") or "--prefix" not in bad.stderr:
            errors.append(f"--prefix 1x: exit {bad.returncode}, stderr {bad.stderr!r}")
    return errors


def main():
    bine_cc, dump, src, p_lo, p_hi, files = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:]
    check = subprocess.run([bine_cc, "check", *files, "--ranks", f"{p_lo}..{p_hi}", "--json"], cwd=src,
                           capture_output=True, text=True)
    if check.returncode != 0:
        sys.exit(f"bine-cc check failed ({check.returncode}):\n{check.stderr}")
    reports = json.loads(check.stdout)
    rows = subprocess.run([dump], capture_output=True, text=True, check=True).stdout.splitlines()
    header = {}  # function -> (collective, {p: (applicable, requires)})
    for line in rows:
        fn, coll, p, applicable, why = line.split("\t")
        entry = header.setdefault(fn, (coll, {}))
        if entry[0] != coll:
            sys.exit(f"{fn} listed under two collectives: {entry[0]}, {coll}")
        entry[1][int(p)] = (int(applicable), None if why == "(null)" else why)

    errors = []
    expected = {}
    for r in reports:
        if not r["ok"]:
            errors.append(f"{r['schedule']}: check failed at {r.get('failed')}")
        expected[PREFIX + r["schedule"]] = r
    for fn in sorted(set(header) - set(expected)):
        errors.append(f"{fn}: in the header's registry but not reported by bine-cc check")
    for fn in sorted(set(expected) - set(header)):
        errors.append(f"{fn}: checked by bine-cc but missing from the header's registry")
    range_reason = f"{p_lo} <= p <= {p_hi} (the verified range)"
    excluded_total = 0
    for fn in sorted(set(header) & set(expected)):
        coll, answers = header[fn]
        r = expected[fn]
        if coll != r["collective"]:
            errors.append(f"{fn}: registry lists it under {coll}, check says {r['collective']}")
        excluded = {e["p"]: e["requires"] for e in r["excluded"]}
        excluded_total += len(excluded)
        for p, (applicable, why) in sorted(answers.items()):
            if p < p_lo or p > p_hi:
                want = (-1, range_reason)
            elif p in excluded:
                want = (0, excluded[p])
            else:
                want = (1, None)
            if (applicable, why) != want:
                errors.append(f"{fn} p={p}: header says ({applicable}, {why!r}), check says {want}")
    errors += check_prefix_option(bine_cc, src, files)
    for e in errors[:40]:
        print("MISMATCH:", e)
    if errors:
        sys.exit(f"{len(errors)} mismatches")
    print(f"registry agrees with bine-cc check: {len(header)} functions, p = 0..64, "
          f"{excluded_total} excluded (schedule, p) pairs with their reasons")


if __name__ == "__main__":
    main()
