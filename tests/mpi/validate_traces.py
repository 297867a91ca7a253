#!/usr/bin/env python3
"""Translation validation: the MPI calls the generated code made (recorded by the PMPI shim,
tests/mpi/pmpi_trace.cpp) must equal the verified Schedule from `bine-cc schedule --json`.

usage: validate_traces.py BINE_CC TRACE_DIR P LIB_FILE...

Per rank, per non-empty round: the multiset of (send, peer, offset, count),
(recv, peer, offset or -1 for scratch, count) and (reduce, -1, offset, count), with block
ranges converted to element ranges by the balanced split (first n mod B blocks one longer).
"""
import json
import subprocess
import sys
from collections import Counter


def block_begin(n, B, i):
    q, m = divmod(n, B)
    return i * q + min(i, m)


def expected_rounds(sched, rank, n):
    B = sched["blocks"]
    out = []
    for rnd in sched["ranks"][rank]:
        calls = []
        sent = set()
        for op in rnd:
            if op["op"] == "send":
                for lo, hi in op["blocks"]:
                    sent.update(range(lo, hi))
        for op in rnd:
            for lo, hi in op["blocks"]:
                off = block_begin(n, B, lo)
                cnt = block_begin(n, B, hi) - off
                if cnt == 0:
                    continue
                if op["op"] == "send":
                    calls.append(("send", op["peer"], off, cnt))
                elif op["op"] == "recv_copy":
                    # a copy into blocks this round also sends is received into scratch
                    buffered = any(b in sent for b in range(lo, hi))
                    calls.append(("recv", op["peer"], -1 if buffered else off, cnt))
                else:
                    calls.append(("recv", op["peer"], -1, cnt))
                    calls.append(("reduce", -1, off, cnt))
        if calls:
            out.append(Counter(calls))
    return out


def main():
    bine_cc, trace_dir, p, libs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    cache = {}
    failures = checked = 0
    for rank in range(p):
        with open(f"{trace_dir}/trace.{rank}.json") as f:
            records = json.load(f)
        for rec in records:
            name = rec["function"][len("bine_"):]
            key = (name, rec["root"])
            if key not in cache:
                res = subprocess.run([bine_cc, "schedule", *libs, "--schedule", name, "-p", str(p),
                                      "--root", str(rec["root"]), "--json"], capture_output=True, text=True)
                if res.returncode != 0:
                    print(f"FAIL {name} p={p}: bine-cc schedule failed: {res.stderr}")
                    failures += 1
                    cache[key] = None
                    continue
                cache[key] = json.loads(res.stdout)
            sched = cache[key]
            if sched is None:
                continue
            want = expected_rounds(sched, rank, rec["elems"])
            got = [Counter(tuple(c) for c in rnd) for rnd in rec["rounds"]]
            checked += 1
            if want != got:
                failures += 1
                print(f"FAIL {name} p={p} root={rec['root']} n={rec['count']} rank={rank}:")
                for i in range(max(len(want), len(got))):
                    w = sorted(want[i].elements()) if i < len(want) else None
                    g = sorted(got[i].elements()) if i < len(got) else None
                    if w != g:
                        print(f"  round {i}: schedule {w}\n           emitted  {g}")
                        break
    print(f"p={p}: {checked} (schedule, root, count, rank) traces compared, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
