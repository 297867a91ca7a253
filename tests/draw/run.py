#!/usr/bin/env python3
"""Tests of `bine-cc draw` and `bine-cc check --draw` (docs/draw.md).

Usage: run.py BINE_CC [--update]

1. Golden SVGs: every case of CASES is drawn and compared byte for byte with its file
   (tests/draw/golden/*.svg and the diagrams of docs/draw/). --update rewrites them; review
   the diff (and the rendering) before committing.
2. Structure against an independent path: for every case drawn from `bine-cc draw`, the
   SVG is parsed (xml.etree) and its arrows are compared with `bine-cc schedule --json` of
   the same instance: per round, the multiset of (sender, receiver, reduce?) equals the
   sends of the JSON, each matched here with the k-th receive of the peer (the round
   model's pairing, re-implemented in this script); the root row, the fold helper rows
   (from the fold's definition: the odd virtual ranks below 2 (p - 2^floor(log2 p))) and,
   with --ppn, the intra-/inter-node class of every arrow.
3. check --draw on mutations from tests/mutations: the highlighted rank, round and block
   are the ones of the text diagnostic; a deadlock's wait-for edges are the notes' chain;
   a race highlights the two receives; a double count tags the ranks named twice.
4. Determinism: the same drawing twice, and from a copy of the input in another directory.
5. Bad input: unwritable output, p above 64 (heat map and a note), a schedule that does
   not apply, --format png to stdout, check --draw when nothing fails, JSON diagnostics.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NS = "{http://www.w3.org/2000/svg}"
LIB = ["dsl/lib/" + f for f in sorted(os.listdir(os.path.join(ROOT, "dsl", "lib"))) if f.endswith(".bine")]

# (golden file, bine-cc arguments). `draw` cases write to stdout; `check` cases to --draw FILE.
CASES = [
    ("tests/draw/golden/bine_bcast_lat_p8.svg", ["draw", "dsl/lib/bine_bcast.bine", "-p", "8"]),
    ("tests/draw/golden/bine_bcast_lat_p6_root2.svg", ["draw", "dsl/lib/bine_bcast.bine", "-p", "6", "--root", "2"]),
    ("tests/draw/golden/bine_allreduce_lat_p4.svg", ["draw", "dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_lat", "-p", "4"]),
    ("tests/draw/golden/bine_allreduce_bdw_p6.svg", ["draw", "dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_bdw", "-p", "6"]),
    ("tests/draw/golden/pairwise_alltoall_p4.svg", ["draw", "dsl/lib/alltoall.bine", "--schedule", "pairwise_alltoall", "-p", "4"]),
    ("tests/draw/golden/recursive_doubling_allreduce_p6_ppn2.svg",
     ["draw", "dsl/lib/baselines.bine", "--schedule", "recursive_doubling_allreduce", "-p", "6", "--ppn", "2", "--bytes", "1024"]),
    ("tests/draw/golden/rt_fold_allreduce_p6.svg", ["draw"] + LIB + ["--schedule", "rt_fold_allreduce", "-p", "6"]),
    ("tests/draw/golden/binomial_gather_p8_root3.svg", ["draw", "dsl/lib/baselines.bine", "--schedule", "binomial_gather", "-p", "8", "--root", "3"]),
    ("tests/draw/golden/check_deadlock_p4.svg", ["check", "tests/mutations/mut_bar_wrong_partner.bine", "--ranks", "1..16"]),
    ("tests/draw/golden/check_race_p2.svg", ["check", "tests/mutations/mut_ring_two_recvs.bine", "--ranks", "1..16"]),
    # The diagrams of docs/draw.md.
    ("docs/draw/bine_bcast_lat_p8.svg", ["draw", "dsl/lib/bine_bcast.bine", "-p", "8"]),
    ("docs/draw/bine_allreduce_bdw_p8.svg", ["draw", "dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_bdw", "-p", "8"]),
    ("docs/draw/bine_allreduce_lat_p6.svg", ["draw", "dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_lat", "-p", "6"]),
    ("docs/draw/rt_fold_allreduce_p5.svg", ["draw"] + LIB + ["--schedule", "rt_fold_allreduce", "-p", "5"]),
    ("docs/draw/check_deadlock_p4.svg", ["check", "tests/mutations/mut_bar_wrong_partner.bine", "--ranks", "1..16"]),
]

failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def run(bine, args, cwd=ROOT):
    r = subprocess.run([bine] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


def render(bine, args, tmp):
    """The SVG bytes of a case (check cases draw into a file)."""
    if args[0] == "check":
        out = os.path.join(tmp, "check.svg")
        if os.path.exists(out):
            os.remove(out)
        rc, _, err = run(bine, args + ["--draw", out])
        if rc != 1 or not os.path.exists(out):
            raise RuntimeError("check --draw: exit %s, no drawing: %s" % (rc, err[:300]))
        with open(out, "rb") as f:
            return f.read()
    rc, out, err = run(bine, args + ["-o", "-"])
    if rc != 0:
        raise RuntimeError("exit %s: %s" % (rc, err[:300]))
    return out


def classes(el):
    return set(el.get("class", "").split())


def groups(svg, cls):
    return [g for g in svg.iter() if cls in classes(g)]


# ---- 1. goldens ----

def check_goldens(bine, update, tmp):
    for path, args in CASES:
        try:
            got = render(bine, args, tmp)
        except RuntimeError as e:
            fail("%s: %s" % (path, e))
            continue
        full = os.path.join(ROOT, path)
        if update:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(got)
            print("updated " + path)
            continue
        if not os.path.exists(full):
            fail("%s: missing (run with --update)" % path)
            continue
        with open(full, "rb") as f:
            want = f.read()
        if got != want:
            fail("%s: differs from `bine-cc %s` (run with --update and review)" % (path, " ".join(args)))
        else:
            print("PASS golden " + path)


# ---- 2. structure against schedule --json ----

def json_transfers(inst):
    """Per round, the multiset of (sender, receiver, reduce) from the JSON instance: the
    k-th send of x to y matches the k-th receive of y from x (None: no receive)."""
    out = {}
    for t in range(inst["num_rounds"]):
        recvs = {}
        for y, rounds in enumerate(inst["ranks"]):
            for op in rounds[t]:
                if op["op"] in ("recv_reduce", "recv_copy"):
                    recvs.setdefault((op["peer"], y), []).append(op["op"] == "recv_reduce")
        used = {}
        got = []
        for x, rounds in enumerate(inst["ranks"]):
            for op in rounds[t]:
                if op["op"] == "send":
                    k = used.get((x, op["peer"]), 0)
                    used[(x, op["peer"])] = k + 1
                    lst = recvs.get((x, op["peer"]), [])
                    got.append((x, op["peer"], lst[k] if k < len(lst) else None))
        out[t] = sorted(got, key=repr)
    return out


def svg_transfers(svg):
    out = {}
    for g in groups(svg, "transfer"):
        c = classes(g)
        reduce = None if "unmatched" in c else ("reduce" in c)
        out.setdefault(int(g.get("data-round")), []).append((int(g.get("data-from")), int(g.get("data-to")), reduce))
    return {t: sorted(v, key=repr) for t, v in out.items()}


def two_one_helpers(p, root):
    pv = 1 << (p.bit_length() - 1)
    extra = p - pv
    return {(v + root) % p for v in range(p) if v < 2 * extra and v % 2 == 1}


def option(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def check_structure(bine, tmp):
    for path, args in CASES:
        if args[0] != "draw":
            continue
        try:
            svg = ET.fromstring(render(bine, args, tmp))
        except (RuntimeError, ET.ParseError) as e:
            fail("%s: %s" % (path, e))
            continue
        rc, out, err = run(bine, ["schedule"] + [a for a in args[1:] if a not in ("--ppn", "--bytes", option(args, "--ppn"), option(args, "--bytes"))] + ["--json"])
        if rc != 0:
            fail("%s: schedule --json failed: %s" % (path, err[:200]))
            continue
        inst = json.loads(out)
        want = json_transfers(inst)
        got = svg_transfers(svg)
        problems = []
        for t in range(inst["num_rounds"]):
            if want.get(t, []) != got.get(t, []):
                problems.append("round %d: arrows %s, sends of the JSON %s" % (t, got.get(t, []), want.get(t, [])))
        n_sends = sum(1 for rk in inst["ranks"] for rd in rk for op in rd if op["op"] == "send")
        if len(groups(svg, "transfer")) != n_sends:
            problems.append("%d arrows for %d sends" % (len(groups(svg, "transfer")), n_sends))
        # Root and fold helpers.
        rooted = inst["collective"] in ("bcast", "reduce", "gather", "scatter")
        roots = [int(g.get("data-rank")) for g in groups(svg, "rank") if "root" in classes(g)]
        if roots != ([inst["root"]] if rooted else []):
            problems.append("root rows %s, expected %s" % (roots, [inst["root"]] if rooted else []))
        helpers = {int(g.get("data-rank")) for g in groups(svg, "rank") if "helper" in classes(g)}
        if inst.get("fold") and "fold_step" not in inst and "fold_ring" not in inst:
            expect = two_one_helpers(inst["p"], inst["root"])
        elif inst.get("fold_step") == "3-2" and inst["p"] == 5:
            expect = {2}  # extra 1: the 3-2 step on ranks 0, 1, 2, rank 2 helping virtual rank 1
        elif inst.get("fold_step") == "3-2" and inst["p"] == 6:
            expect = {2, 3}  # extra 2: one 2-1 pair of pairs, ranks 2 and 3 shadow 0 and 1
        elif inst.get("fold"):
            raise SystemExit("no helper oracle for %s at p = %d: add one" % (path, inst["p"]))
        else:
            expect = set()
        if helpers != expect:
            problems.append("fold helper rows %s, expected %s" % (sorted(helpers), sorted(expect)))
        # Link classes.
        ppn = option(args, "--ppn")
        for g in groups(svg, "transfer"):
            a, b = int(g.get("data-from")), int(g.get("data-to"))
            want_cls = "flat" if ppn is None else ("intra" if a // int(ppn) == b // int(ppn) else "inter")
            if want_cls not in classes(g):
                problems.append("arrow %d->%d lacks class %s" % (a, b, want_cls))
                break
        # Mirrored and fold rounds from the labels.
        for g in groups(svg, "round"):
            t = int(g.get("data-round"))
            label = inst["round_labels"][t]
            if ("mirror of" in label) != ("mirror" in classes(g)):
                problems.append("round %d: mirror class does not match label %r" % (t, label))
        if problems:
            fail("%s structure: %s" % (path, "; ".join(problems[:4])))
        else:
            print("PASS structure %s (%d arrows = %d sends of schedule --json)" % (path, n_sends, n_sends))


# ---- 3. check --draw on mutations ----

MSG_RE = re.compile(r"^p=(\d+)(?: root=(\d+))?: rank (\d+), round (\d+)(?:, block (\d+))?: (.*)$", re.S)
WAIT_RE = re.compile(r"rank (\d+) waits in round (\d+) for rank (\d+)")


def rank_set(text):
    """The ranks of a rank set as the verifier prints it, "0-3, 5" (ranges, docs/verifier.md)."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def legend_problems(svg):
    """The legend must explain what is drawn: an entry for red dotted arrows when there are
    unmatched sends, and one per frame colour of the counterexample's cells."""
    problems = []
    legend = [g for g in groups(svg, "legend")]
    texts = " ".join(t.text or "" for g in legend for t in g.iter(NS + "text"))
    if any("unmatched" in classes(g) for g in groups(svg, "transfer")) and "unmatched send" not in texts:
        problems.append("red dotted (unmatched) sends drawn, no legend entry for them")
    legend_strokes = {r.get("stroke") for g in legend for r in g.iter(NS + "rect")}
    for cls in ("cex-cell", "cex-match", "cex-write"):
        for c in groups(svg, cls):
            if c.get("stroke") not in legend_strokes:
                problems.append("frame %s in %s has no legend entry" % (cls, c.get("stroke")))
    return problems


def check_draw_mutation(bine, tmp, case, kind):
    out = os.path.join(tmp, case + ".svg")
    rc, _, err = run(bine, ["check", "tests/mutations/" + case + ".bine", "--ranks", "1..16", "--draw", out,
                            "--diagnostics-format", "json"])
    name = "check --draw %s (%s)" % (case, kind)
    try:
        diags = json.loads(err)
    except ValueError:
        fail("%s: stderr is not JSON: %r" % (name, err[:200]))
        return
    if rc != 1 or not os.path.exists(out):
        fail("%s: exit %s, drawing written: %s" % (name, rc, os.path.exists(out)))
        return
    first = [d for d in diags if d["severity"] == "error"][0]
    m = MSG_RE.match(first["message"])
    rank, rnd, block = int(m.group(3)), int(m.group(4)), int(m.group(5))
    svg = ET.parse(out).getroot()
    problems = []
    cex = groups(svg, "counterexample")
    if len(cex) != 1 or cex[0].get("data-kind") != kind:
        problems.append("counterexample group %s" % [g.attrib for g in cex])
    cells = groups(svg, "cex-cell")
    if [(int(c.get("data-rank")), int(c.get("data-round")), int(c.get("data-block"))) for c in cells] != [(rank, rnd, block)]:
        problems.append("cex-cell %s, diagnostic rank %d round %d block %d" % ([c.attrib for c in cells], rank, rnd, block))
    caption = " ".join(t.text or "" for g in groups(svg, "cex-caption") for t in g.iter(NS + "text"))
    if m.group(6).split(":")[0] not in caption:
        problems.append("caption does not repeat the message")
    hl = [g for g in groups(svg, "transfer") if "cex" in classes(g)]
    problems += legend_problems(svg)
    if kind == "deadlock":
        # The first edge is rank -> the peer the message names; then the notes' chain.
        peer = int(re.search(r"(?:send to|receive from) rank (\d+)", m.group(6)).group(1))
        want = [(rank, peer, rnd)] + [(int(a), int(b), int(t)) for n in first["notes"] for a, t, b in WAIT_RE.findall(n["message"])]
        got = [(int(g.get("data-from")), int(g.get("data-to")), int(g.get("data-round"))) for g in groups(svg, "cex-wait")]
        if got != want:
            problems.append("wait-for edges %s, notes say %s" % (got, want))
        if not any(int(g.get("data-from")) == rank and int(g.get("data-to")) == peer and int(g.get("data-round")) == rnd for g in hl):
            problems.append("the unmatched send %d->%d in round %d is not highlighted" % (rank, peer, rnd))
    elif kind == "race":
        ok = len(hl) == 2 and all(int(g.get("data-to")) == rank and int(g.get("data-round")) == rnd for g in hl)
        if not ok:
            problems.append("race: highlighted %s, expected the two receives of rank %d in round %d" % ([g.attrib for g in hl], rank, rnd))
    elif kind == "double-count":
        twice = rank_set(re.search(r"ranks? \{([\d, -]+)\}", m.group(6)).group(1))
        tags = sorted(int(g.get("data-rank")) for g in groups(svg, "rank")
                      for t in g.iter(NS + "text") if "twice" in classes(t))
        if tags != twice:
            problems.append("ranks tagged twice %s, message names %s" % (tags, twice))
        if not any(int(g.get("data-to")) == rank and int(g.get("data-round")) == rnd for g in hl):
            problems.append("no highlighted transfer into rank %d in round %d" % (rank, rnd))
    if problems:
        fail("%s: %s" % (name, "; ".join(problems)))
    else:
        print("PASS %s: rank %d, round %d, block %d highlighted" % (name, rank, rnd, block))


def check_heat_map_counterexample(bine, tmp):
    """A failing instance above p = 64 is a heat map with the counterexample's cell framed:
    the frame's colour must be in its legend (issue 47)."""
    out = os.path.join(tmp, "heat_cex.svg")
    rc, _, _ = run(bine, ["draw", "tests/mutations/mut_bar_wrong_partner.bine", "-p", "72", "--verify", "-o", out])
    name = "draw --verify of a failing instance at p = 72 (heat map)"
    if rc != 1 or not os.path.exists(out):
        fail("%s: exit %s, drawing written: %s" % (name, rc, os.path.exists(out)))
        return
    svg = ET.parse(out).getroot()
    problems = legend_problems(svg)
    if len(groups(svg, "cex-cell")) != 1:
        problems.append("%d framed cells, expected 1" % len(groups(svg, "cex-cell")))
    if problems:
        fail("%s: %s" % (name, "; ".join(problems)))
    else:
        print("PASS %s: the framed cell's colour is in the legend" % name)


# ---- 4. determinism ----

def check_determinism(bine, tmp):
    args = ["draw", "dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_bdw", "-p", "12", "--ppn", "4", "--bytes", "4096", "-o", "-"]
    a = run(bine, args)[1]
    b = run(bine, args)[1]
    other = os.path.join(tmp, "elsewhere")
    os.makedirs(os.path.join(other, "dsl", "lib"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "dsl", "lib", "bine_allreduce.bine"), os.path.join(other, "dsl", "lib"))
    c = run(bine, args, cwd=other)[1]
    heat = ["draw", "dsl/lib/bine_allreduce.bine", "--schedule", "bine_allreduce_bdw", "-p", "100", "-o", "-"]
    h1, h2 = run(bine, heat)[1], run(bine, heat)[1]
    if not a or a != b or a != c or not h1 or h1 != h2:
        fail("determinism: two runs or another directory give different bytes")
    else:
        print("PASS determinism (same bytes twice and from another directory; heat map too)")


# ---- 5. bad input ----

def check_bad_input(bine, tmp):
    bcast = ["draw", "dsl/lib/bine_bcast.bine", "-p", "8"]
    bad = "/nonexistent-dir-bine/x.svg"
    rc, out, err = run(bine, bcast + ["-o", bad])
    if rc != 1 or "bine-cc: error: cannot write '%s'" % bad not in err:
        fail("unwritable path: exit %s, stderr %r" % (rc, err))
    else:
        print("PASS unwritable output path")
    rc, out, err = run(bine, bcast + ["-o", bad, "--diagnostics-format", "json"])
    try:
        ok = rc == 1 and any("cannot write" in d["message"] for d in json.loads(err))
    except ValueError:
        ok = False
    if not ok:
        fail("unwritable path, JSON diagnostics: exit %s, stderr %r" % (rc, err))
    else:
        print("PASS unwritable output path (JSON diagnostics)")
    big = os.path.join(tmp, "big.svg")
    rc, out, err = run(bine, ["draw", "dsl/lib/bine_bcast.bine", "-p", "65", "-o", big])
    svg = ET.parse(big).getroot() if rc == 0 and os.path.exists(big) else None
    notes = [t.text for t in svg.iter(NS + "text") if "note" in classes(t)] if svg is not None else []
    if svg is None or not groups(svg, "heatmap") or groups(svg, "transfer") or not notes or "heat map" not in notes[0] \
            or "above 64" not in err:
        fail("p = 65: exit %s, heat map %s, note %s, stderr %r" % (rc, svg is not None and bool(groups(svg, "heatmap")), notes, err))
    else:
        print("PASS p = 65 drawn as a heat map with a note (%s)" % notes[0])
    rc, out, err = run(bine, ["draw", "dsl/lib/bine_bcast.bine", "-p", "64", "-o", "-"])
    if rc != 0 or b"class=\"heatmap\"" in out or b"class=\"transfer" not in out:
        fail("p = 64 is not a step diagram")
    else:
        print("PASS p = 64 is a step diagram")
    want = run(bine, ["schedule", "dsl/lib/alltoall.bine", "--schedule", "pairwise_alltoall_xor", "-p", "6"])
    got = run(bine, ["draw", "dsl/lib/alltoall.bine", "--schedule", "pairwise_alltoall_xor", "-p", "6", "-o", os.path.join(tmp, "na.svg")])
    if got[0] != 1 or got[2] != want[2] or "does not apply" not in got[2] or os.path.exists(os.path.join(tmp, "na.svg")):
        fail("not applicable: %r vs schedule's %r" % (got[2], want[2]))
    else:
        print("PASS schedule that does not apply: the error of `bine-cc schedule`")
    rc, out, err = run(bine, bcast + ["--format", "png"])
    if rc != 2 or "needs an output file" not in err:
        fail("--format png to stdout: exit %s, %r" % (rc, err))
    else:
        print("PASS --format png to stdout refused")
    none = os.path.join(tmp, "none.svg")
    rc, out, err = run(bine, ["check", "dsl/lib/bine_bcast.bine", "--ranks", "1..4", "--draw", none])
    if rc != 0 or os.path.exists(none) or "no instance failed" not in err:
        fail("check --draw on a verified schedule: exit %s, file %s, %r" % (rc, os.path.exists(none), err))
    else:
        print("PASS check --draw on a verified schedule draws nothing, with a warning")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bine = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        check_goldens(bine, update, tmp)
        if update:
            return 0
        check_structure(bine, tmp)
        check_draw_mutation(bine, tmp, "mut_bar_wrong_partner", "deadlock")
        check_draw_mutation(bine, tmp, "mut_ring_two_recvs", "race")
        check_draw_mutation(bine, tmp, "mut_babe_twice", "double-count")
        check_heat_map_counterexample(bine, tmp)
        check_determinism(bine, tmp)
        check_bad_input(bine, tmp)
    print("draw: %s (%d failure(s))" % ("PASS" if not failures else "FAIL", len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
