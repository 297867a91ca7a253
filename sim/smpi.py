#!/usr/bin/env python3
"""The generated library under SimGrid's SMPI on simulated machines (docs/smpi.md).

    sim/smpi.py build [-p P]               # bine-smpi-bench with smpicxx (build/smpi/)
    sim/smpi.py run --platform dragonfly -p 64 [--placement spread] [--bytes 1024,65536]
                    [--collective allreduce ...] [--builtins] [--traffic] [--json FILE]
    sim/smpi.py check                      # the ctest `smpi`: correctness and traffic
    sim/smpi.py bench [-p 64] [--platform NAME ...] [--bytes 8,65536] [--collective NAME ...]
                      [--placement spread] [--out FILE.md] [--json FILE]  # the tables of docs/smpi.md

Platforms (sim/platforms/*.xml, 1,024 nodes each): `dragonfly` (bine-cc spec
dragonfly:8,16,8), `fattree` (fattree:16), `torus` (torus:16,8,8). One rank per node. The
placement puts rank i on node i (`linear`), on node i * 1024 / p (`spread`: every group
gets ranks), or on p nodes drawn with a seed and sorted (`random:SEED`, like a job
allocation). The same host list and a node map go to `bine-cc traffic --machine
hosts:FILE,map=MAP`, so the simulation and bine-cc count the same placement.

The program is compiled against the build's generated header when p is in its verified
range (1..32), else against one compiled here with `bine-cc compile --verify-ranks P`
(`_applicable(p)` is -1 outside the verified range): build/smpi/pP/.

Timing runs use SMPI's network model (`network/model:SMPI`) with
`smpi/simulate-computation:no`: local work costs no simulated time, so the figures are
deterministic and compare message schedules only (SMPI's own algorithms get the same
treatment). Traffic runs use SimGrid's fluid model without latency (`network/model:CM02`,
`network/latency-factor:0`, `network/crosstraffic:0`, links slowed down 100,000-fold, see
TRAFFIC_SLOWDOWN and TRAFFIC_CFG) and SimGrid's link_load plugin, updated on every advance of the clock
(bench/smpi_bench.cpp says why), under which a link's cumulated load is the bytes it
carried: the payload plus 16 bytes per message (measured on SimGrid 3.32: a 0-byte message
loads every link of its route by 16). `--traffic` checks, for every generated schedule,
that the global links carried exactly bine-cc traffic's global bytes plus 16 per global
message (where the vector has fewer elements than the schedule has blocks, bine-cc counts
sends of empty blocks that the generated code skips: then the bytes must agree, the
messages on SimGrid's routes be no more than bine-cc's, and the load be the bytes plus 16
per message actually sent).

Exit status: 0 when every result matched the MPI library's own collective (and, with
--traffic, every global load matched bine-cc's count); 1 otherwise; 2 on bad usage or a
missing tool (smpicxx, smpirun, bine-cc).
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
NODES = 1024

# Per platform: bine-cc's machine spec for the whole platform, node -> (switch, group), and
# which links the bench sums as global.
PLATFORMS = {
    "dragonfly": {"spec": "dragonfly:8,16,8", "switch": lambda i: i // 8, "group": lambda i: i // 128, "global": "dragonfly"},
    # The fat tree's global links: up from a pod's top switches to the core (one per message
    # between pods). SimGrid's FAT_TREE puts node i on leaf i / 8 in pod i / 64 (measured:
    # route lengths 2, 4 and 6 between every 37th node and all nodes).
    "fattree": {"spec": "fattree:16", "switch": lambda i: i // 8, "group": lambda i: i // 64, "global": "fattree"},
    # The torus: every link between nodes is counted, so the figures are byte-hops (bytes
    # times links crossed), which bine-cc traffic reports as torus_hops given the nodes'
    # coordinates (map keys X Y Z, machine option torus=16x8x8; x fastest).
    "torus": {"spec": "torus:16,8,8", "switch": lambda i: i, "group": lambda i: i // 128, "global": "torus",
              "dims": (16, 8, 8)},
}

# SMPI's own algorithms compared with the generated schedules (`--builtins`, `bench`): the
# fair counterparts of the library's schedules (docs/smpi.md), none of them SMP-aware (one
# rank per node) or a vendor selector. Each runs as the MPI library's collective under
# --cfg=smpi/<selector>:<algorithm>; SMPI 3.32 serves MPI_Reduce_scatter_block with its
# reduce_scatter algorithms (measured: the selector changes its time), and has no
# selector for scan and exscan (only their default, linear algorithm runs).
BUILTINS = {
    "allreduce": ["rdb", "rab_rdb", "lr", "ompi_ring_segmented"],
    "bcast": ["binomial_tree", "scatter_rdb_allgather", "scatter_LR_allgather"],
    "reduce": ["binomial", "scatter_gather"],
    "allgather": ["bruck", "rdb", "ring"],
    "gather": ["ompi_binomial", "ompi_basic_linear"],
    "scatter": ["ompi_binomial", "ompi_basic_linear"],
    "reduce_scatter_block": ["ompi_basic_recursivehalving", "ompi_ring", "mpich_pair", "mpich_rdb"],
    "alltoall": ["bruck", "pair", "ring"],
    "barrier": ["ompi_bruck", "ompi_recursivedoubling"],
}
SELECTOR = {"reduce_scatter_block": "reduce_scatter"}  # SMPI's --cfg name where it differs

# Collectives whose BYTES is one rank's block (bine-cc traffic counts the whole vector).
RANK_INDEXED = {"allgather", "gather", "scatter", "reduce_scatter_block", "alltoall"}
COLLECTIVES = ["allreduce", "bcast", "reduce", "allgather", "gather", "scatter", "reduce_scatter_block", "alltoall",
               "scan", "exscan", "barrier"]
ENVELOPE = 16  # bytes SimGrid 3.32 adds to every message on every link of its route
# Traffic runs slow every link down by this factor (network/bandwidth-factor): SimGrid
# rounds event times to surf/precision (1e-9 s under smpirun), and a message of a few bytes
# at 12.5 GB/s lasts about a nanosecond, so concurrent small messages of unequal sizes ended
# at the same rounded instant and their links' loads came out short (measured: an 8-byte
# and a 4-byte message at once loaded the 8-byte one's links by 20 bytes, not 24). The
# plugin reports load against the nominal bandwidth, so the loads are divided back. The
# rounding left in the loads at p = 64 (alltoall, reduce_scatter_block and allgather of 8
# bytes and 4 KiB, dragonfly): 0.19 bytes at most with a factor of 1,000, 0.001 with
# 10,000, none with 100,000.
TRAFFIC_SLOWDOWN = 100000


def die(msg, code=2):
    print(f"smpi.py: {msg}", file=sys.stderr)
    sys.exit(code)


def tool(name):
    path = shutil.which(name)
    if not path:
        die(f"{name} not found (Debian package libsimgrid-dev)")
    return path


def build_dir():
    return os.environ.get("BINE_BUILD_DIR", os.path.join(SRC, "build"))


def verified_range(header):
    """(lo, hi) of the header's `verified by bine-cc for p = lo..hi` (or p = P), else None."""
    with open(header) as f:
        for line in f:
            m = re.search(r"verified by bine-cc for p = (\d+)(?:\.\.(\d+))?", line)
            if m:
                return int(m.group(1)), int(m.group(2) or m.group(1))
    return None


def header_for(p):
    """The generated header whose schedules apply at p: the build's (bine-cc compile
    --verify-ranks 1..32 by default) when p is in its verified range, else one compiled
    here with --verify-ranks P (bine-cc's `_applicable(p)` is -1 outside the verified range,
    so the build's header runs no schedule at p = 64). At p = 1024 that verification takes
    about 4 minutes and 1.5 GB on 2 cores; the header is kept in build/smpi/pP/."""
    header = os.path.join(build_dir(), "generated", "bine_lib.h")
    if not os.path.exists(header):
        die(f"{header} missing: build the project first (cmake --build build)")
    lo, hi = verified_range(header) or (1, 0)
    if lo <= p <= hi:
        return header
    own = os.path.join(build_dir(), "smpi", f"p{p}", "bine_lib.h")
    bine_cc = os.path.join(build_dir(), "bine-cc")
    lib = sorted(os.path.join("dsl", "lib", f) for f in os.listdir(os.path.join(SRC, "dsl", "lib")) if f.endswith(".bine"))
    if not os.path.exists(own) or newer(lib + [bine_cc], own):
        os.makedirs(os.path.dirname(own), exist_ok=True)
        print(f"smpi.py: verifying the library at p = {p} for {own}", file=sys.stderr)
        r = subprocess.run([bine_cc, "compile", *lib, "--target", "mpi", "--verify-ranks", str(p), "-o", own],
                           capture_output=True, text=True, cwd=SRC)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            die("bine-cc compile failed", 1)
    return own


def newer(sources, target):
    """Whether any of `sources` (paths relative to SRC or absolute) is newer than `target`."""
    t = os.path.getmtime(target)
    return any(os.path.getmtime(os.path.join(SRC, f)) > t for f in sources)


def bench_path(p):
    """The bench program for p ranks: one per generated header (see header_for)."""
    header = header_for(p)
    sub = os.path.dirname(header) if header.startswith(os.path.join(build_dir(), "smpi")) else os.path.join(build_dir(), "smpi")
    return os.path.join(sub, "bine-smpi-bench")


def build(p=16):
    """Compiles bench/smpi_bench.cpp against the generated MPI header for p (header_for) with
    smpicxx (-Wall -Wextra -Werror), unless the program is newer than its sources. Returns
    the program's path."""
    header = header_for(p)
    out = bench_path(p)
    sources = [header, os.path.join("bench", "smpi_bench.cpp"), os.path.join("bench", "bench_registry.hpp")]
    runtime = os.path.join(SRC, "runtime", "include", "bine")
    sources += [os.path.join(runtime, f) for f in os.listdir(runtime)]
    if os.path.exists(out) and not newer(sources, out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    # -fno-gnu-unique: the static locals of inline functions (the runtime's plan caches,
    # attribute keys) are otherwise one process-wide object shared by every rank's copy.
    cmd = [tool("smpicxx"), "-std=c++17", "-O2", "-fno-gnu-unique", "-Wall", "-Wextra", "-Werror", "-DBINE_IMPLEMENTATION",
           "-I" + os.path.join(SRC, "runtime", "include"), "-I" + os.path.dirname(header), "-I" + os.path.join(SRC, "bench"),
           os.path.join(SRC, "bench", "smpi_bench.cpp"), "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        die("smpicxx failed", 1)
    return out


def placement(kind, p):
    """The p nodes the ranks run on, rank i on the i-th."""
    if p < 1 or p > NODES:
        die(f"-p {p}: the platforms have {NODES} nodes, one rank each")
    if kind == "linear":
        return list(range(p))
    if kind == "spread":
        return [i * NODES // p for i in range(p)]
    if kind.startswith("random:"):
        return sorted(random.Random(int(kind[7:])).sample(range(NODES), p))
    die(f"--placement {kind}: expected linear, spread or random:SEED")


def write_allocation(tmp, platform, nodes):
    """The smpirun host file and the bine-cc node map of this placement; returns their paths."""
    geo = PLATFORMS[platform]
    hosts = os.path.join(tmp, "hosts.txt")
    nmap = os.path.join(tmp, "map.txt")
    with open(hosts, "w") as f:
        f.write("".join(f"node-{i}\n" for i in nodes))
    dims = geo.get("dims")
    coord = (lambda i: f" X {i % dims[0]} Y {i // dims[0] % dims[1]} Z {i // (dims[0] * dims[1])}") if dims else (lambda i: "")
    with open(nmap, "w") as f:
        f.write("".join(f"NODE node-{i} GROUP {geo['group'](i)} SWITCH {geo['switch'](i)}{coord(i)}\n" for i in range(NODES)))
    return hosts, nmap


# SMPI's collective selector (--cfg=smpi/coll-selector): its "default" algorithms are the
# naive ones (allgather and alltoall post p^2 messages at once), which also serve the
# runtime's own MPI_Allgather of node labels (bine/mpi_regions.hpp, once per communicator,
# by every schedule that reads regions): at p = 1024 that one call did not finish in 15
# minutes of simulation. `--coll-selector auto` (the default) keeps "default" up to p = 128
# (the published tables) and takes "mpich" (MPICH's size- and p-based choice: Bruck,
# recursive doubling, ring, ...) above; the oracle rows are named smpi:<selector>.
COLL_SELECTOR = "auto"


def coll_selector(p):
    if COLL_SELECTOR != "auto":
        return COLL_SELECTOR
    return "default" if p <= 128 else "mpich"


ONLY = []  # run --schedule: the generated schedules to time (empty: every applicable one)


def simulate(platform, hosts, p, sizes, colls, cfgs, mpi_only=False, loads=False):
    """Runs the bench under smpirun; returns (rows, ok). Each row as the bench prints it."""
    cmd = [tool("smpirun"), "-np", str(p), "-platform", os.path.join(HERE, "platforms", platform + ".xml"),
           "-hostfile", hosts, "--cfg=smpi/simulate-computation:no", "--log=root.thres:critical"]
    if coll_selector(p) != "default":
        cmd.append(f"--cfg=smpi/coll-selector:{coll_selector(p)}")
    cmd += cfgs
    cmd += [bench_path(p), ",".join(map(str, sizes)), PLATFORMS[platform]["global"]]
    cmd += (["--mpi-only"] if mpi_only else []) + colls
    env = dict(os.environ, BINE_SMPI_LINK_LOAD="1" if loads else "0", BINE_SMPI_SCHEDULES=",".join(ONLY))
    with tempfile.TemporaryDirectory() as tmp:
        # smpirun copies the program once per rank (privatization by dlopen) into smpi/tmpdir.
        cmd.insert(1, f"--cfg=smpi/tmpdir:{tmp}")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-4000:])
    return rows, r.returncode == 0 and all(row["ok"] for row in rows)


def traffic(hosts, nmap, p, coll, nbytes, platform=None):
    """bine-cc traffic's totals per schedule of the library for one collective and size: its
    global bytes and messages, or on the torus its byte-hops and message-hops (torus_hops)."""
    lib = sorted(os.path.join("dsl", "lib", f) for f in os.listdir(os.path.join(SRC, "dsl", "lib")) if f.endswith(".bine"))
    vector = nbytes * p if coll in RANK_INDEXED else nbytes
    dims = PLATFORMS.get(platform, {}).get("dims")
    machine = f"hosts:{hosts},map={nmap}" + (f",torus={dims[0]}x{dims[1]}x{dims[2]}" if dims else "")
    cmd = [os.path.join(build_dir(), "bine-cc"), "traffic", *lib, "-p", str(p), "--machine", machine,
           "--bytes", str(vector), "--elem-size", "4", "--commutative", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=SRC)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        die("bine-cc traffic failed", 1)
    out = {}
    for o in json.loads(r.stdout):
        if o.get("applicable", True) and o["collective"] == coll.replace("_block", ""):
            # bine-cc counts a send of empty blocks as a message; the generated code does not
            # send it. Every block has an element when the vector has as many as blocks.
            out[o["schedule"]] = dict(o["torus_hops"] if dims else o["total"]["global"], full=vector // 4 >= o["blocks"])
    return out


# crosstraffic:0: CM02 otherwise loads a flow's reverse route with 5% of its bytes (the
# acknowledgements; measured: every global load 5.0% high), which no schedule sends.
# latency-factor:0: no latency phase, fewer events to round (with latency the same runs
# left 1e-4 bytes of rounding, 0.27 with a slowdown of 1,000).
TRAFFIC_CFG = ["--cfg=network/model:CM02", "--cfg=network/latency-factor:0", "--cfg=network/crosstraffic:0",
               f"--cfg=network/bandwidth-factor:{1 / TRAFFIC_SLOWDOWN}", "--cfg=plugin:link_load"]


def check_traffic(platform, hosts, nmap, p, sizes, colls, quiet=False):
    """Global-link loads of every generated schedule against bine-cc traffic: the bytes
    counted on SimGrid's routes must equal bine-cc's global bytes and messages, and the
    link_load plugin's load those bytes plus ENVELOPE per global message. Returns (the
    number of mismatches, {(collective, schedule, bytes): row}) with each row's global_load
    divided back to bytes and bine-cc's figures added as `bine_cc` (None for SMPI's own)."""
    rows, ok = simulate(platform, hosts, p, sizes, colls, TRAFFIC_CFG, loads=True)
    for r in rows:
        r["global_load"] /= TRAFFIC_SLOWDOWN
    bad = 0 if ok else 1
    if not ok:
        print("  traffic run: a result differed from MPI's or a call failed")
    plugin = []  # (link_load plugin's global load, bine-cc's bytes + 16 per message)
    for coll in colls:
        for nbytes in sizes:
            want = traffic(hosts, nmap, p, coll, nbytes, platform)
            got = [r for r in rows if r["collective"] == coll and r["bytes"] == nbytes and r["schedule"] != "mpi"]
            same = 0
            for r in got:
                w = want.get(r["schedule"])
                r["bine_cc"] = w
                # Where some blocks are empty, bine-cc's messages include the empty sends that
                # the generated code skips: the bytes must agree, the messages be no more.
                if w is not None and r["global_bytes"] == w["bytes"] and (
                        r["global_messages"] == w["messages"] if w["full"] else r["global_messages"] <= w["messages"]):
                    same += 1
                else:
                    bad += 1
                    print(f"  MISMATCH {coll} {r['schedule']} {nbytes} B: on SimGrid's routes {r['global_bytes']} B in "
                          f"{r['global_messages']} global messages, bine-cc traffic {w and w['bytes']} B in "
                          f"{w and w['messages']}")
                if w is not None:
                    msgs = w["messages"] if w["full"] else r["global_messages"]
                    r["expected_load"] = w["bytes"] + ENVELOPE * msgs
                    plugin.append((r["global_load"], r["expected_load"]))
                    if abs(plugin[-1][0] - plugin[-1][1]) >= 0.5:
                        print(f"  MISMATCH {coll} {r['schedule']} {nbytes} B: link_load plugin {r['global_load']:.1f} B "
                              f"on the global links, expected {w['bytes']} B + {ENVELOPE} x {msgs} messages")
            if not quiet:
                print(f"  traffic {platform} p={p} {coll} {nbytes} B: {same}/{len(got)} schedules carry bine-cc's global "
                      "bytes")
    exact = sum(1 for got, want in plugin if abs(got - want) < 0.5)
    worst = max((abs(got - want) / want for got, want in plugin if want), default=0)
    print(f"  link_load plugin ({platform}, p={p}): {exact}/{len(plugin)} global loads equal bine-cc's bytes + "
          f"{ENVELOPE} per message; largest difference {100 * worst:.1f}%")
    return bad + len(plugin) - exact, {(r["collective"], r["schedule"], r["bytes"]): r for r in rows}


def measure(platform, p, where, sizes, colls, builtins=False, with_traffic=False):
    """Simulated times of every applicable generated schedule and of SMPI's collective (its
    default algorithm, named `smpi:default` (`smpi:mpich` under that selector), and with `builtins` every algorithm of
    BUILTINS, one simulation each), per (collective, size); with `with_traffic` on a
    platform with counted global links, every row also gets `global_load` (link_load
    plugin, bytes) and the generated ones `bine_cc` (bine-cc traffic's global bytes and
    messages), checked. Returns (rows, number of failures)."""
    nodes = placement(where, p)
    build(p)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        hosts, nmap = write_allocation(tmp, platform, nodes)
        rows, ok = simulate(platform, hosts, p, sizes, colls, [])
        bad += 0 if ok else 1
        for r in rows:
            if r["schedule"] == "mpi":
                r["schedule"] = f"smpi:{coll_selector(p)}"
        if builtins:
            for coll in colls:
                for algo in BUILTINS.get(coll, []):
                    brows, bok = simulate(platform, hosts, p, sizes, [coll],
                                          [f"--cfg=smpi/{SELECTOR.get(coll, coll)}:{algo}"], mpi_only=True)
                    for r in brows:
                        r["schedule"] = f"smpi:{algo}"
                    rows += brows
                    bad += 0 if bok else 1
        counted = [c for c in colls if c != "barrier"]
        if with_traffic and PLATFORMS[platform]["global"] != "none" and counted:
            tbad, loads = check_traffic(platform, hosts, nmap, p, sizes, counted, quiet=True)
            bad += tbad
            for r in rows:
                t = loads.get((r["collective"], "mpi" if r["schedule"] == f"smpi:{coll_selector(p)}" else r["schedule"], r["bytes"]))
                if t is not None:
                    r["global_load"] = t["global_load"]
                    r["bine_cc"] = t.get("bine_cc")
                    r["expected_load"] = t.get("expected_load")
    for r in rows:
        r["platform"], r["placement"] = platform, where
    return rows, bad


def is_smpi(row):
    return row["schedule"].startswith("smpi:")


def table(rows, out=sys.stdout):
    """Rows grouped by (collective, bytes): simulated us, ratio to the best SMPI algorithm."""
    keys = []
    for r in rows:
        if (r["collective"], r["bytes"]) not in keys:
            keys.append((r["collective"], r["bytes"]))
    for coll, nbytes in keys:
        group = [r for r in rows if r["collective"] == coll and r["bytes"] == nbytes]
        best = min((r["us"] for r in group if is_smpi(r)), default=None)
        print(f"{coll} {nbytes} B (p = {group[0]['p']}):", file=out)
        for r in sorted(group, key=lambda r: r["us"]):
            ratio = f"{r['us'] / best:6.2f}x" if best else ""
            gl = f"  global {r['global_load']:.0f} B" if r.get("global_load", -1) >= 0 else ""
            print(f"  {r['schedule']:40s} {r['us']:12.2f} us {ratio}{gl}", file=out)


def run(args):
    ONLY[:] = args.schedule or []
    sizes = [int(b) for b in args.bytes.split(",")]
    rows, bad = measure(args.platform, args.p, args.placement, sizes, args.collective or COLLECTIVES, args.builtins,
                        args.traffic)
    table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if bad else 0


def human(nbytes):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def summary(rows, sizes, out):
    """One table: per (collective, platform, size) the fastest generated schedule against the
    fastest SMPI algorithm (SMPI's default included), and their global-link loads where
    counted."""
    print("| collective | platform | size | fastest bine-cc schedule | us | fastest SMPI algorithm | us | ratio |"
          " global B (bine-cc / SMPI) |", file=out)
    print("|" + " --- |" * 9, file=out)
    keys = []
    for r in rows:
        if (r["collective"], r["platform"], r["bytes"]) not in keys:
            keys.append((r["collective"], r["platform"], r["bytes"]))
    for coll, platform, nbytes in keys:
        group = [r for r in rows if (r["collective"], r["platform"], r["bytes"]) == (coll, platform, nbytes)]
        ours = min((r for r in group if not is_smpi(r)), key=lambda r: (r["us"], r["schedule"]), default=None)
        smpi = min((r for r in group if is_smpi(r)), key=lambda r: (r["us"], r["schedule"]), default=None)
        if ours is None or smpi is None:
            continue
        loads = "" if ours.get("global_load", -1) < 0 else (
            f"{ours['global_load']:.0f} / " + (f"{smpi['global_load']:.0f}" if smpi.get("global_load", -1) >= 0 else "-"))
        size = human(nbytes) if coll != "barrier" else "-"
        print(f"| {coll} | {platform} | {size} | `{ours['schedule']}` | {ours['us']:.2f} | `{smpi['schedule']}` | "
              f"{smpi['us']:.2f} | {ours['us'] / smpi['us']:.2f} | {loads} |", file=out)
    print(file=out)


def markdown(rows, sizes, out):
    """One table per (collective, platform): a row per candidate, per size the simulated time,
    its ratio to the best SMPI algorithm and, where counted, the global-link load from the
    link_load plugin (bytes, SimGrid's 16 per message included; `=` where it equals bine-cc
    traffic's global bytes plus 16 per message, else bine-cc's count)."""
    groups = []
    for r in rows:
        if (r["collective"], r["platform"]) not in groups:
            groups.append((r["collective"], r["platform"]))
    for coll, platform in groups:
        group = [r for r in rows if r["collective"] == coll and r["platform"] == platform]
        sz = sizes if coll != "barrier" else [0]
        loads = any(r.get("global_load", -1) >= 0 for r in group)
        p = group[0]["p"]
        what = "one rank's block" if coll in RANK_INDEXED else "the vector"
        print(f"### {coll}, {platform}, p = {p} ({group[0]['placement']})\n", file=out)
        if coll != "barrier":
            print(f"Sizes: {what}. ", end="", file=out)
        print("Times in simulated microseconds; `x`: ratio to the fastest SMPI algorithm (below 1: faster).\n",
              file=out)
        head = ["schedule"]
        for b in sz:
            label = human(b) if coll != "barrier" else ""
            head += [f"{label} us".strip(), "x"] + ([f"{label} global B".strip()] if loads else [])
        print("| " + " | ".join(head) + " |", file=out)
        print("|" + " --- |" * len(head), file=out)
        cell = {(r["schedule"], r["bytes"]): r for r in group}
        best = {b: min((r["us"] for r in group if r["bytes"] == b and is_smpi(r)), default=None) for b in sz}
        fastest = {b: min((r["us"] for r in group if r["bytes"] == b), default=None) for b in sz}
        names = []
        for r in group:
            if r["schedule"] not in names:
                names.append(r["schedule"])
        last = sz[-1]
        names.sort(key=lambda n: (cell[(n, last)]["us"] if (n, last) in cell else float("inf"), n))
        for n in names:
            line = [f"`{n}`"]
            for b in sz:
                r = cell.get((n, b))
                if r is None:
                    line += ["", ""] + ([""] if loads else [])
                    continue
                t = f"{r['us']:.2f}"
                line += [f"**{t}**" if r["us"] == fastest[b] else t, f"{r['us'] / best[b]:.2f}" if best[b] else ""]
                if loads:
                    g = r.get("global_load", -1)
                    want = r.get("expected_load")
                    mark = "" if want is None else (" =" if abs(g - want) < 0.5 else f" (expected {want})")
                    line.append(f"{g:.0f}{mark}" if g >= 0 else "")
            print("| " + " | ".join(line) + " |", file=out)
        print(file=out)


def bench(args):
    """The table of docs/smpi.md: measure() with SMPI's algorithms and the global-link loads
    for every platform, written as Markdown."""
    sizes = [int(b) for b in args.bytes.split(",")]
    colls = args.collective or COLLECTIVES
    rows, bad = [], 0
    for platform in args.platform or ["dragonfly", "fattree", "torus"]:
        prow, pbad = measure(platform, args.p, args.placement, sizes, colls, builtins=True, with_traffic=True)
        print(f"smpi.py bench: {platform} p={args.p}: {len(prow)} rows{'' if not pbad else f', {pbad} failures'}",
              file=sys.stderr)
        rows += prow
        bad += pbad
    out = open(args.out, "w") if args.out else sys.stdout
    print(f"## p = {args.p}, placement {args.placement}\n", file=out)
    summary(rows, sizes, out)
    markdown(rows, sizes, out)
    if args.out:
        out.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if bad else 0


def check(_args):
    """The ctest: every generated schedule against SMPI's own collective on the three
    platforms (p = 16 spread over the machine and p = 12 on random nodes; 4 and 1000 bytes),
    the global-link bytes on the dragonfly and the fat tree against bine-cc traffic, and
    p = 64 on random dragonfly nodes (a header verified at 64: the build's stops at 32) for
    allreduce, bcast and reduce_scatter_block at 1000 bytes (with allgather and alltoall,
    whose SMPI defaults, the oracles, send p^2 messages at once, it took 43 s, not 8)."""
    build(16)
    bad = 0
    cases = [(platform, p, where, [4, 1000], COLLECTIVES) for platform in ["dragonfly", "fattree", "torus"]
             for p, where in [(16, "spread"), (12, "random:7")]]
    cases.append(("dragonfly", 64, "random:11", [1000], ["allreduce", "bcast", "reduce_scatter_block"]))
    for platform, p, where, sizes, colls in cases:
        build(p)
        with tempfile.TemporaryDirectory() as tmp:
            hosts, nmap = write_allocation(tmp, platform, placement(where, p))
            rows, ok = simulate(platform, hosts, p, sizes, colls, [])
            print(f"{platform} p={p} {where}: {len(rows)} calls, {'all match MPI' if ok else 'FAILED'}")
            bad += 0 if ok else 1
            if PLATFORMS[platform]["global"] != "none":
                bad += check_traffic(platform, hosts, nmap, p, [1000], [c for c in colls if c != "barrier"])[0]
    print("smpi check:", "ok" if bad == 0 else f"{bad} failures")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("-p", type=int, default=16, help="the program for p ranks (a header verified at p)")
    r = sub.add_parser("run")
    r.add_argument("--platform", choices=sorted(PLATFORMS), required=True)
    r.add_argument("-p", type=int, required=True)
    r.add_argument("--placement", default="spread")
    r.add_argument("--coll-selector", default="auto",
                    help="SMPI's collective selector: auto (default up to p = 128, mpich above), default, mpich, ompi, ...")
    r.add_argument("--bytes", default="8,65536")
    r.add_argument("--collective", action="append", choices=COLLECTIVES)
    r.add_argument("--builtins", action="store_true", help="also SMPI's own algorithms (one simulation each)")
    r.add_argument("--traffic", action="store_true", help="check global-link loads against bine-cc traffic")
    r.add_argument("--schedule", action="append",
                   help="time only these generated schedules (repeatable; SMPI's own collective always runs)")
    r.add_argument("--json")
    sub.add_parser("check")
    bn = sub.add_parser("bench")
    bn.add_argument("-p", type=int, default=64)
    bn.add_argument("--platform", action="append", choices=sorted(PLATFORMS))
    bn.add_argument("--placement", default="spread")
    bn.add_argument("--coll-selector", default="auto",
                    help="SMPI's collective selector: auto (default up to p = 128, mpich above), default, mpich, ompi, ...")
    bn.add_argument("--bytes", default="8,65536")
    bn.add_argument("--collective", action="append", choices=COLLECTIVES)
    bn.add_argument("--out", help="the Markdown tables (default: standard output)")
    bn.add_argument("--json", help="every row as JSON")
    args = ap.parse_args()
    global COLL_SELECTOR
    COLL_SELECTOR = getattr(args, "coll_selector", "auto")
    if args.cmd == "build":
        print(build(args.p))
        return 0
    return {"run": run, "check": check, "bench": bench}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
