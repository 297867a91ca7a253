#!/usr/bin/env python3
"""Instance sections of a schedule page (docs/schedules/NAME.md) from real bine-cc output.

usage: schedule_page.py BINE_CC NAME P [ROOT] -- FILES...

Prints, for the instance of schedule NAME at p = P (root ROOT, default 0):
  - the round summary: `round t (label): a→b {S}, ...`, where `{S}` are the sent blocks,
    `into {T}` the receiver's blocks when they differ, `+` a reduce receive; a round with a
    permutation says so;
  - the per-rank volume table (ranks with equal rows merged), in blocks and, for the
    collectives whose blocks split the vector (bcast, reduce, allreduce), in multiples of n.
It reads `bine-cc schedule --json`; nothing here computes a schedule itself. The pages'
"Verification" and "Rounds by process count" lines come from `bine-cc check` and
`bine-cc schedule` directly.
"""
import json
import subprocess
import sys

VECTOR = {"bcast", "reduce", "allreduce"}


def fmt_set(ranges):
    parts = []
    for lo, hi in ranges:
        parts.append(str(lo) if hi == lo + 1 else "%d-%d" % (lo, hi - 1))
    return "{" + ", ".join(parts) + "}"


def count(ranges):
    return sum(hi - lo for lo, hi in ranges)


def rank_list(ranks):
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if j == i else ("%d-%d" % (ranks[i], ranks[j]) if j > i + 1 else "%d, %d" % (ranks[i], ranks[j])))
        i = j + 1
    return ", ".join(out)


def frac(blocks, nblocks):
    from fractions import Fraction
    f = Fraction(blocks, nblocks)
    if f == 0:
        return "0"
    if f.denominator == 1:
        return "n" if f.numerator == 1 else "%d n" % f.numerator
    return "%d/%d n" % (f.numerator, f.denominator) if f.numerator != 1 else "n/%d" % f.denominator


def main():
    if "--" not in sys.argv:
        sys.exit(__doc__)
    k = sys.argv.index("--")
    args, files = sys.argv[1:k], sys.argv[k + 1:]
    bine_cc, name, p = args[0], args[1], int(args[2])
    root = int(args[3]) if len(args) > 3 else 0
    out = subprocess.run([bine_cc, "schedule", *files, "--schedule", name, "-p", str(p), "--root", str(root), "--json"],
                         capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    B, coll = s["blocks"], s["collective"]
    ranks = s["ranks"]
    print("```")
    for t in range(s["num_rounds"]):
        items, permute = [], False
        for x, rounds in enumerate(ranks):
            ops = rounds[t] if t < len(rounds) else []
            for op in ops:
                if op["op"] == "send":
                    peer = op["peer"]
                    # the peer's matching receive: the k-th receive from x meets the k-th send to it
                    k_send = sum(1 for o in ops[:ops.index(op)] if o["op"] == "send" and o["peer"] == peer)
                    recvs = [o for o in ranks[peer][t] if o["op"].startswith("recv") and o["peer"] == x]
                    rv = recvs[k_send] if k_send < len(recvs) else None
                    txt = "%d→%d %s" % (x, peer, fmt_set(op["blocks"]))
                    if rv is not None and rv["blocks"] != op["blocks"]:
                        txt += " into %s" % fmt_set(rv["blocks"])
                    if rv is not None and rv["op"] == "recv_reduce":
                        txt += "+"
                    items.append(txt)
                elif op["op"] == "permute":
                    permute = True
        label = s["round_labels"][t]
        if permute and not items:
            print("round %d (%s): permute on every rank" % (t, label))
        else:
            print("round %d (%s): %s" % (t, label, ", ".join(items)))
    print("```")
    print()
    rows = {}
    for x, rounds in enumerate(ranks):
        msgs = packed = sent = recvd = reduced = 0
        for ops in rounds:
            for op in ops:
                if op["op"] == "send":
                    msgs += 1
                    packed += len(op["blocks"]) > 1
                    sent += count(op["blocks"])
                elif op["op"].startswith("recv"):
                    recvd += count(op["blocks"])
                    if op["op"] == "recv_reduce":
                        reduced += count(op["blocks"])
        rows.setdefault((msgs, packed, sent, recvd, reduced), []).append(x)
    print("| ranks | messages sent | of them packed | blocks sent | blocks received | blocks reduced |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key, xs in sorted(rows.items(), key=lambda kv: kv[1][0]):
        msgs, packed, sent, recvd, reduced = key
        cells = [str(msgs), str(packed)]
        for b in (sent, recvd, reduced):
            cells.append("%d (%s)" % (b, frac(b, B)) if coll in VECTOR and b else str(b))
        print("| %s | %s |" % (rank_list(xs), " | ".join(cells)))


if __name__ == "__main__":
    main()
