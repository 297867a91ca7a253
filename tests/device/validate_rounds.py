#!/usr/bin/env python3
"""Translation validation of the CUDA target's plans: the messages each rank's device plan
exchanges (recorded by `device_host trace DIR P COUNT` through its loopback transport) must be
the verified Schedule's (`bine-cc schedule --json`), round by round.

usage: validate_rounds.py BINE_CC TRACE_DIR LIB_FILE...

Per rank, per round with messages: the multiset of (is_recv, peer, elements), the elements of
an op being its block ranges converted by the balanced split (first n mod B blocks one
longer; scratch buffers n elements each). Rounds without messages (local statements only)
have no exchange. The plans run with `commutative` true, so the schedules are instantiated
with --commutative.
"""
import glob
import json
import os
import subprocess
import sys
from collections import Counter

BLOCKED = {"allgather", "gather", "scatter", "alltoall", "reduce_scatter"}
REDUCING = {"allreduce", "reduce", "reduce_scatter", "scan", "exscan"}


def block_begin(n, B, i):
    q, m = divmod(n, B)
    return i * q + min(i, m)


def elements(n, B, blocks):
    total = 0
    for lo, hi in blocks:
        a = (lo // B) * n + block_begin(n, B, lo % B)
        b = (hi // B) * n + block_begin(n, B, hi % B)
        total += b - a
    return total


def expected(sched, count):
    p, B = sched["p"], sched["blocks"]
    n = count * p if sched["collective"] in BLOCKED else count
    out = []
    for rank_rounds in sched["ranks"]:
        rounds = []
        for rnd in rank_rounds:
            msgs = Counter()
            for op in rnd:
                kind = op["op"]
                if kind not in ("send", "recv_copy", "recv_reduce"):
                    continue
                e = elements(n, B, op["blocks"])
                if e:
                    msgs[(0 if kind == "send" else 1, op["peer"], e)] += 1
            if msgs:
                rounds.append(msgs)
        out.append(rounds)
    return out


def main():
    bine_cc, trace_dir, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
    files = sorted(glob.glob(os.path.join(trace_dir, "*.json")))
    if not files:
        print("validate_rounds: no traces in", trace_dir)
        return 1
    bad = 0
    for f in files:
        tr = json.load(open(f))
        name = tr["function"][len("bcc_"):]
        cmd = [bine_cc, "schedule", *libs, "--schedule", name, "-p", str(tr["p"]), "--json"]
        probe = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        if probe["collective"] in REDUCING:
            probe = json.loads(subprocess.run(cmd + ["--commutative"], check=True, capture_output=True, text=True).stdout)
        want = expected(probe, tr["count"])
        got = [[Counter((m[0], m[1], m[2]) for m in ex) for ex in rank] for rank in tr["ranks"]]
        if got != want:
            bad += 1
            for r, (g, w) in enumerate(zip(got, want)):
                if g != w:
                    k = next((i for i in range(min(len(g), len(w))) if g[i] != w[i]), min(len(g), len(w)))
                    print(f"MISMATCH {tr['function']} p={tr['p']} rank {r} exchange {k}: plan "
                          f"{dict(g[k]) if k < len(g) else None} schedule {dict(w[k]) if k < len(w) else None}")
                    break
    print(f"validate_rounds: {len(files)} schedules, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
