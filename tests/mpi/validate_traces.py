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
    """What the runtime posts for one rank: one message per op (split only above INT_MAX);
    a send of several ranges is packed (offset -1); a receive lands in scratch (offset -1)
    when it reduces, has several ranges, or overlaps a block the round sends, and reductions
    are then applied per range (MPI_Reduce_local). Local permutations make no MPI calls."""
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
            if op["op"] == "permute":
                continue
            ranges = []
            for lo, hi in op["blocks"]:
                off = block_begin(n, B, lo)
                cnt = block_begin(n, B, hi) - off
                if cnt:
                    ranges.append((lo, hi, off, cnt))
            if not ranges:
                continue
            total = sum(r[3] for r in ranges)
            single = len(ranges) == 1
            if op["op"] == "send":
                calls.append(("send", op["peer"], ranges[0][2] if single else -1, total))
                continue
            overlaps = any(b in sent for lo, hi, _, _ in ranges for b in range(lo, hi))
            reduce = op["op"] == "recv_reduce"
            direct = single and not reduce and not overlaps
            calls.append(("recv", op["peer"], ranges[0][2] if direct else -1, total))
            if reduce:
                calls.extend(("reduce", -1, off, cnt) for _, _, off, cnt in ranges)
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
