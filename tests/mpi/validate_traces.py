#!/usr/bin/env python3
"""Translation validation: the MPI calls the generated code made (recorded by the PMPI shim,
tests/mpi/pmpi_trace.cpp) must equal the verified Schedule from `bine-cc schedule --json`.

usage: validate_traces.py [--segment-bytes S] BINE_CC TRACE_DIR P LIB_FILE...

Per rank, per non-empty round: the multiset of (send, peer, offset, count),
(recv, peer, offset or -1 for scratch, count) and (reduce, -1, offset, count), with block
ranges converted to element ranges by the balanced split (first n mod B blocks one longer).
Segmented rounds (the schedule's round_segments, or --segment-bytes S for runs made with
BINE_SEGMENT_BYTES=S) post each message as pieces of max(1, S // element bytes) elements;
a reducing receive whose blocks no send and no other receive of the round touches is
reduced piece by piece (one reduction per piece and range), the others per range.
A replay whose copy-in the runtime deferred (DeferredInput, docs/architecture.md) sends
ranges still only in the input from the user's input, recorded at the same element offsets
(the harness passes the input to the shim: bine::mpi::input_buffer_hook()), and may land a
receive the model puts in scratch (-1) in place instead: such a receive is accepted at its
blocks' offset, nothing else is relaxed.
A replay whose plan renames blocks instead of permuting them (runtime rename_blocks(),
docs/architecture.md "Block renaming") is modelled too: after each `permute` block j of the
schedule is the physical block loc[j], so an op's block ranges become the physical ranges
of its blocks in message order (adjacent ones joined); a rank's trace is accepted when it
equals either model (the runtime chooses per plan), round by round.
A message of several ranges in one piece of at least TYPED_MIN_BYTES (runtime
kTypedMinBytes) is posted with a datatype over its ranges instead of packed, and a receive
of such a message that is not reduced and overlaps no block its round sends lands in place
that way: the shim records one (kind, peer, offset, count) per range.
"""
import json
import os
import subprocess
import sys
from collections import Counter


TYPED_MIN_BYTES = 4096  # runtime/include/bine/mpi_runtime.hpp kTypedMinBytes


def block_begin(n, B, i):
    q, m = divmod(n, B)
    return i * q + min(i, m)


def buffer_block_begin(n, B, i):
    """Element offset of block i over the vector and the scratch buffers (block i mod B of
    buffer i // B, buffers of n elements one after the other)."""
    return (i // B) * n + block_begin(n, B, i % B)


def element_ranges(n, B, blocks):
    out = []
    for lo, hi in blocks:
        off = buffer_block_begin(n, B, lo)
        cnt = buffer_block_begin(n, B, hi) - off
        if cnt:
            out.append((off, cnt))
    return out


def local_reductions(n, B, op, chunk=(1 << 31) - 1):
    """The MPI_Reduce_local calls of a local reduce: source and destination element ranges
    walked together (runtime apply_local), recorded at the destination's offset."""
    src, dst = element_ranges(n, B, op["src"]), element_ranges(n, B, op["blocks"])
    calls, i, j, di, dj = [], 0, 0, 0, 0
    while i < len(src) and j < len(dst):
        c = min(src[i][1] - di, dst[j][1] - dj, chunk)
        calls.append(("reduce", -1, dst[j][0] + dj, c))
        di += c
        dj += c
        if di == src[i][1]:
            i, di = i + 1, 0
        if dj == dst[j][1]:
            j, dj = j + 1, 0
    return calls


def pieces(total, piece):
    """(first, count) of the pieces of a message of `total` elements."""
    return [(f, min(piece, total - f)) for f in range(0, total, piece)]


def physical_ranges(n, B, blocks, loc):
    """(lo, hi, offset, count) of an op's block ranges under block renaming: each vector
    block j at physical block loc[j] (scratch blocks stay), in message order, physically
    adjacent pieces joined; lo/hi are the logical blocks covered (for the overlap rules)."""
    out = []
    for lo, hi in blocks:
        for b in range(lo, hi):
            phys = loc[b] if b < B else b
            off = buffer_block_begin(n, B, phys)
            cnt = buffer_block_begin(n, B, phys + 1) - off
            if not cnt:
                continue
            if out and out[-1][2] + out[-1][3] == off:
                plo, _, poff, pcnt = out[-1]
                out[-1] = (plo, b + 1, poff, pcnt + cnt)
            else:
                out.append((b, b + 1, off, cnt))
    return out


def expected_rounds(sched, rank, n, elem_bytes=4, segment_override=None, renamed=False, typed_ok=False):
    """What the runtime posts for one rank: one message per op (split only above INT_MAX);
    a send of several ranges is packed (offset -1); a receive lands in scratch (offset -1)
    when it reduces, has several ranges, or overlaps a block the round sends, and reductions
    are then applied per range (MPI_Reduce_local). Local permutations make no MPI calls."""
    B = sched["blocks"]
    n //= sched.get("scratch", 0) + 1  # the trace counts the vector and its scratch buffers
    out = []
    alt_rounds = []  # per round of out: the receives that may land in place (alts)
    segs = sched.get("round_segments") or [0] * len(sched["ranks"][rank])
    loc = list(range(B))  # renamed: logical block j is in physical block loc[j]
    for t, rnd in enumerate(sched["ranks"][rank]):
        seg = segs[t] if segment_override is None else segment_override
        piece = max(1, seg // elem_bytes) if seg > 0 else 1 << 62
        calls = []
        alts = set()  # receives modelled in scratch that may land in place instead
        sent = set()
        received = {}  # op index -> blocks received
        for i, op in enumerate(rnd):
            if op["op"].startswith("recv"):
                received[i] = set(b for lo, hi in op["blocks"] for b in range(lo, hi))
        for op in rnd:
            if op["op"] == "send":
                for lo, hi in op["blocks"]:
                    sent.update(range(lo, hi))
        for i, op in enumerate(rnd):
            if op["op"] == "permute" or op["op"] == "local_copy":
                continue  # no MPI calls
            if op["op"] == "local_reduce":
                continue  # after the round's receives, below
            ranges = []
            if renamed:
                ranges = physical_ranges(n, B, op["blocks"], loc)
            else:
                for lo, hi in op["blocks"]:
                    off = buffer_block_begin(n, B, lo)
                    cnt = buffer_block_begin(n, B, hi) - off
                    if cnt:
                        ranges.append((lo, hi, off, cnt))
            if not ranges:
                if sched["collective"] == "barrier":  # a barrier's messages are empty, never dropped
                    calls.append(("send" if op["op"] == "send" else "recv", op["peer"], -1, 0))
                continue
            total = sum(r[3] for r in ranges)
            single = len(ranges) == 1
            typed = typed_ok and not single and total <= piece and total * elem_bytes >= TYPED_MIN_BYTES
            if op["op"] == "send":
                if typed:
                    calls.extend(("send", op["peer"], off, cnt) for _, _, off, cnt in ranges)
                    continue
                calls.extend(("send", op["peer"], ranges[0][2] + f if single else -1, c) for f, c in pieces(total, piece))
                continue
            overlaps = any(b in sent for lo, hi in op["blocks"] for b in range(lo, hi))
            reduce = op["op"] == "recv_reduce"
            if typed and not reduce and not overlaps:
                calls.extend(("recv", op["peer"], off, cnt) for _, _, off, cnt in ranges)
                continue
            direct = single and not reduce and not overlaps
            calls.extend(("recv", op["peer"], ranges[0][2] + f if direct else -1, c) for f, c in pieces(total, piece))
            if single and not direct:
                # A replay with the copy-in deferred (runtime DeferredInput) may land this
                # receive in place instead of scratch: a reducing one then has the input
                # reduced into it at the same offset, a copy whose round's overlapping sends
                # read the input needs no unpacking.
                alts.update(("recv", op["peer"], ranges[0][2] + f, c) for f, c in pieces(total, piece))
            if reduce:
                others = set(sent)
                for j, blocks in received.items():
                    if j != i:
                        others |= blocks
                early = piece < total and not (received[i] & others)
                if not early:
                    calls.extend(("reduce", -1, off, cnt) for _, _, off, cnt in ranges)
                    continue
                for f, c in pieces(total, piece):  # reduced piece by piece, per range
                    at = 0
                    for _, _, off, cnt in ranges:
                        lo, hi = max(f, at), min(f + c, at + cnt)
                        if lo < hi:
                            calls.append(("reduce", -1, off + lo - at, hi - lo))
                        at += cnt
        local = [c for op in rnd if op["op"] == "local_reduce" for c in local_reductions(n, B, op)]
        if calls:
            out.append(Counter(calls + local))
            alt_rounds.append(alts)
        elif local:
            # A round of local reductions only posts nothing and waits for nothing: the
            # trace files its MPI_Reduce_local calls under the last round that waited.
            if out:
                out[-1].update(local)
            else:
                out.append(Counter(local))
                alt_rounds.append(set())
        for op in rnd:  # a permutation ends its round: block j's data moves to block to[j]
            if op["op"] == "permute":
                nxt = list(loc)
                for j, d in enumerate(op["to"]):
                    nxt[d] = loc[j]
                loc = nxt
    return out, alt_rounds


def regions_args():
    """The region layout generated code ran with (BINE_REGIONS, docs/topology.md);
    unset or "node": mpirun on one host, every rank on one node (one region)."""
    regions = os.environ.get("BINE_REGIONS", "")
    return ["--regions", regions] if regions not in ("", "node") else []


def prefetch_schedules(cache, bine_cc, libs, p, keys):
    """Fills `cache` with the verified Schedules of every (name, root) in `keys` at p from
    one `bine-cc schedule --instance NAME:ROOT ...` call (JSON lines, one load of the
    library; docs/cli.md#schedule). Instances it could not print are left out, so that
    load_schedule asks for them alone and reports the failure."""
    keys = sorted(set(keys) - set(cache))
    if not keys:
        return
    res = subprocess.run([bine_cc, "schedule", *libs, "-p", str(p), *regions_args(),
                          *[a for name, root in keys for a in ("--instance", f"{name}:{root}")]],
                         capture_output=True, text=True)
    for line in res.stdout.splitlines():
        j = json.loads(line)
        key = (j["schedule"], j["root"])
        if "not_applicable" in j:
            cache[key] = "not applicable"
        elif "error" not in j:
            cache[key] = j


def load_schedule(cache, bine_cc, libs, name, p, root):
    """The verified Schedule of (name, root) at p from `bine-cc schedule --json`, cached:
    its JSON, "not applicable", or None when bine-cc failed. Returns (schedule, 1 when this
    call found bine-cc failing (printed as a FAIL), else 0)."""
    key = (name, root)
    if key in cache:
        return cache[key], 0
    res = subprocess.run([bine_cc, "schedule", *libs, "--schedule", name, "-p", str(p), "--root", str(root), "--json",
                          *regions_args()], capture_output=True, text=True)
    if res.returncode != 0 and "does not apply" in res.stderr:
        cache[key] = "not applicable"
    elif res.returncode != 0:
        print(f"FAIL {name} p={p}: bine-cc schedule failed: {res.stderr}")
        cache[key] = None
        return None, 1
    else:
        cache[key] = json.loads(res.stdout)
    return cache[key], 0


def main():
    args = sys.argv[1:]
    segment_override = None
    if args[:1] == ["--segment-bytes"]:
        segment_override = int(args[1])
        args = args[2:]
    bine_cc, trace_dir, p, libs = args[0], args[1], int(args[2]), args[3:]
    cache = {}
    failures = checked = renamed_traces = typed_traces = 0
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
            if sched == "not applicable":
                # Generated code skips communication (and `requires`) when there is nothing to
                # communicate: one rank, or count 0 (docs/architecture.md). Any other call of a
                # schedule that does not apply must not have communicated.
                checked += 1
                if rec["rounds"] and any(rnd for rnd in rec["rounds"]):
                    failures += 1
                    print(f"FAIL {name} p={p} root={rec['root']} n={rec['count']} rank={rank}: "
                          f"communicated although the schedule does not apply at p={p}")
                continue
            def compare(renamed, typed):
                want, alts = expected_rounds(sched, rank, rec["elems"], rec.get("elem_bytes", 4), segment_override,
                                             renamed, typed)
                got = [Counter(tuple(c) for c in rnd) for rnd in rec["rounds"]]
                for i, g in enumerate(got):  # receives that landed in place where the model allows it
                    for c in list(g):
                        if i < len(alts) and c in alts[i] and g[c] > want[i][c]:
                            n_in_place = g[c] - want[i][c]
                            g[c] -= n_in_place
                            g[(c[0], c[1], -1, c[3])] += n_in_place
                    got[i] = +g
                return want, got
            # The recording call runs the plan as written (no datatypes, no renaming); a
            # replay may use both.
            want, got = compare(False, False)
            if want != got:
                twant, tgot = compare(False, True)
                if twant == tgot:
                    want, got = twant, tgot
                    typed_traces += 1
            if want != got and any(op["op"] == "permute" for rnd in sched["ranks"][rank] for op in rnd):
                for typed in (True, False):
                    rwant, rgot = compare(True, typed)
                    if rwant == rgot:
                        want, got = rwant, rgot
                        renamed_traces += 1
                        typed_traces += typed
                        break
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
    print(f"p={p}: {checked} (schedule, root, count, rank) traces compared ({renamed_traces} with renamed blocks, "
          f"{typed_traces} with typed messages), "
          f"{failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
