#!/usr/bin/env python3
"""Translation validation of the utofu target: the data puts the generated code made
(recorded through the uTofu emulation's put hook, tests/mpi/pmpi_trace.cpp built with
BINE_TRACE_UTOFU) must be the verified Schedule's sends, round by round, as the step tags
say (docs/utofu.md, "Step tags").

usage: validate_traces.py BINE_CC TRACE_DIR P LIB_FILE...

Per rank and traced call: for each (step tag, destination), the bytes put must equal the
bytes the Schedule sends to that destination in the rounds with that tag. A round's tag is
its index mod 255, or 255 for the two-one fold's epilogue (the round labelled "fold
epilogue"). A send's bytes: its blocks' elements (the balanced split, first n mod B blocks
one longer) times the element size; a send of no element is not posted, except a
barrier's, which carries one token byte. Both the call that builds a persistent plan and
the call that replays it are checked.
"""
import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mpi"))
from validate_traces import element_ranges, load_schedule, prefetch_schedules  # noqa: E402  (the MPI validator's rules)


def tag_of(sched, t):
    return 255 if sched["round_labels"][t] == "fold epilogue" else t % 255


def expected_puts(sched, rank, elems, elem_bytes):
    B = sched["blocks"]
    n = elems // (sched.get("scratch", 0) + 1)
    want = Counter()
    for t, rnd in enumerate(sched["ranks"][rank]):
        for op in rnd:
            if op["op"] != "send":
                continue
            count = sum(c for _, c in element_ranges(n, B, op["blocks"]))
            if count == 0:
                if sched["collective"] == "barrier":
                    want[(tag_of(sched, t), op["peer"])] += 1  # the token byte
                continue
            want[(tag_of(sched, t), op["peer"])] += count * elem_bytes
    return want


def main():
    bine_cc, trace_dir, p, libs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    cache = {}
    failures = checked = puts = 0
    traces = []
    for rank in range(p):
        with open(f"{trace_dir}/trace.{rank}.json") as f:
            traces.append(json.load(f))
    prefetch_schedules(cache, bine_cc, libs, p,
                       [(rec["function"][len("bcc_"):], rec["root"]) for records in traces for rec in records])
    for rank, records in enumerate(traces):
        for rec in records:
            name = rec["function"][len("bcc_"):]
            sched, failed = load_schedule(cache, bine_cc, libs, name, p, rec["root"])
            failures += failed
            if sched is None:
                continue
            got = Counter()
            for rnd in rec["rounds"]:
                for kind, peer, edata, length in rnd:
                    if kind == "put":
                        got[(edata, peer)] += length
                        puts += 1
            checked += 1
            if sched == "not applicable":
                if got:
                    failures += 1
                    print(f"FAIL {name} p={p} root={rec['root']} n={rec['count']} rank={rank}: "
                          f"put data although the schedule does not apply at p={p}")
                continue
            want = expected_puts(sched, rank, rec["elems"], rec.get("elem_bytes", 4))
            if want != got:
                failures += 1
                print(f"FAIL {name} p={p} root={rec['root']} n={rec['count']} rank={rank}: (step tag, peer) -> bytes")
                for k in sorted(set(want) | set(got)):
                    if want.get(k, 0) != got.get(k, 0):
                        print(f"  {k}: schedule {want.get(k, 0)}, put {got.get(k, 0)}")
    print(f"p={p}: {checked} (schedule, root, count, rank) traces compared, {puts} puts, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
