#!/usr/bin/env python3
"""Every verb under a 2 GB address-space limit (ulimit -v 2000000) ends with exit 0, 1 or 2
(issue 47, item 2; docs/testing.md "Resource limits"): never a signal (an uncaught
std::bad_alloc was exit 134), never a hang.

Usage: resource_limits.py BINE_CC SOURCE_DIR

Inputs: every file of the fuzz corpus (tests/fuzz/corpus, 145 files), each through every
verb (check as the fuzzer runs it, --ranks 1..9 --all-roots-up-to 0; compile, lower, tune
and traffic on small ranges; schedule, draw and cost on the file's first schedule at p = 7),
and the instances of issue 47 that blew up, each with the exit status it must have. About
10 s on 2 cores (two runs at a time).
"""
import concurrent.futures
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

LIMIT = 2000000 * 1024  # ulimit -v 2000000 (KiB)
TIMEOUT_S = 60


def limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run(bine, args, cwd):
    start = time.monotonic()
    try:
        r = subprocess.run([bine, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=TIMEOUT_S, preexec_fn=limit)
        return r.returncode, r.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - start


def verbs(path, out):
    """Every verb on one file; schedule, draw and cost on its first schedule."""
    text = open(path, encoding="utf-8", errors="replace").read()
    m = re.search(r"^\s*schedule\s+([A-Za-z_]\w*)", text, re.M)
    one = ["--schedule", m.group(1)] if m else []
    model = ["--alpha", "1", "--beta", "1", "--gamma", "1"]
    return [
        ["check", path, "--ranks", "1..9", "--all-roots-up-to", "0"],
        ["compile", path, "--verify-ranks", "1..6", "-o", os.path.join(out, "x.h")],
        ["lower", path],
        ["tune", path, "--ranks", "2..5", "--bytes-max", "4096", *model, "-o", os.path.join(out, "t.json")],
        ["traffic", path, "-p", "8", "--machine", "ppn=4"],
        ["schedule", path, *one, "-p", "7", "--json"],
        ["draw", path, *one, "-p", "7", "-o", os.path.join(out, "x.svg")],
        ["cost", path, *one, "-p", "7", "--bytes", "1024", *model],
    ]


def issue_cases(tmp):
    """(arguments, the exit status it must have, what stderr must say): issue 47's blow-ups."""
    zloop = os.path.join(tmp, "zloop.bine")
    with open(zloop, "w") as f:
        f.write("schedule zloop implements allreduce {\n  blocks 1\n  round { for z in 0 .. 10000000 { send all to r + 1 } }\n}\n")
    empty = os.path.join(tmp, "empty_rounds.bine")
    with open(empty, "w") as f:  # 2^20 rounds in which no rank communicates
        f.write("schedule er implements allreduce {\n  blocks 1\n  for i in 0 .. 1048576 { if r < 0 { send all to r + 1 } }\n}\n")
    big = os.path.join(tmp, "big.bine")
    with open(big, "w") as f:
        f.write("schedule big implements allreduce {\n  blocks 16777216\n  exchange all / all with 1 - r reduce\n}\n")
    ring = ["dsl/lib/baselines.bine", "--schedule", "ring_allreduce"]
    limited = r"resource limit: "
    return [
        (["check", zloop, "--ranks", "1"], 2, limited),
        (["check", "dsl/lib/barrier.bine", "--schedule", "dissemination_barrier", "--ranks", "16384"], 0, None),
        (["check", *ring, "--ranks", "65536"], 2, limited),
        (["schedule", *ring, "-p", "65536", "--json"], 2, limited),
        (["draw", *ring, "-p", "65536", "-o", os.path.join(tmp, "ring.svg")], 2, limited),
        (["traffic", *ring, "-p", "65536", "--machine", "ppn=4"], 2, limited),
        (["schedule", empty, "-p", "5", "--json"], 0, None),
        (["check", big, "--ranks", "2"], 0, None),
        (["schedule", big, "-p", "2", "--json"], 0, None),
        (["draw", big, "-p", "2", "-o", os.path.join(tmp, "big.svg")], 0, None),
        (["cost", big, "-p", "2", "--bytes", "67108864", "--alpha", "1", "--beta", "1", "--gamma", "1"], 0, None),
        (["traffic", big, "-p", "2", "--machine", "ppn=2"], 0, None),
    ]


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bine, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    corpus = os.path.join(src, "tests", "fuzz", "corpus")
    files = sorted(os.listdir(corpus))
    failures = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []  # (name, args, allowed statuses, stderr pattern)
        for i, f in enumerate(files):
            out = os.path.join(tmp, str(i))
            os.mkdir(out)
            for args in verbs(os.path.join(corpus, f), out):
                jobs.append((f"{args[0]} {f}", args, {0, 1, 2}, None))
        cases = issue_cases(tmp)
        for args, rc, err in cases:
            jobs.append((" ".join(os.path.basename(a) for a in args), args, {rc}, err))
        codes = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            results = pool.map(lambda j: (j, run(bine, j[1], src)), jobs)
            for (name, args, allowed, err), (rc, stderr, secs) in results:
                codes[rc] = codes.get(rc, 0) + 1
                problems = []
                if rc not in allowed:
                    problems.append(f"exit {rc}, expected {sorted(allowed)}")
                if err and not re.search(err, stderr):
                    problems.append(f"stderr lacks /{err}/: {stderr[-300:]!r}")
                if problems:
                    failures.append(name)
                    print(f"FAIL {name} ({secs:.1f} s): {'; '.join(problems)}")
                elif allowed != {0, 1, 2}:
                    print(f"PASS {name}: exit {rc} ({secs:.1f} s)")
    print(f"{len(jobs)} runs over {len(files)} corpus files and {len(cases)} issue cases under "
          f"ulimit -v {LIMIT // 1024}: exits {dict(sorted(codes.items(), key=str))}, {time.monotonic() - started:.0f} s")
    print(f"resource_limits: {'PASS' if not failures else 'FAIL'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
