#!/usr/bin/env python3
"""ctest `bbs_mpi`: BBS frames from `bine-cc synth bbs --bine` through the whole pipeline
(docs/bbs.md "Frames in the language", docs/language.md "frames", docs/testing.md).

    tests/bbs/run.py BUILD_DIR

For the 4x4 grid (16 ranks) and the 2x2x4 grid (16 ranks), with the three packet rules
(lowest, potential, and stream: the streams schedule, docs/bbs.md "Streams"):
1. `synth bbs --bine` writes the frames as a .bine schedule; twice: same bytes.
2. The model's T that synth states (its own simulator, compiler/synth/bbs.cpp) equals the
   rounds of the compiler's instance (`bine-cc schedule`, compiler/ir/frames.cpp): two
   independent runs of the frames.
3. `bine-cc check` proves it for every root (p = 1..32: it applies at p = 16 only).
4. `bine-cc compile` emits the header (twice: same bytes); bbs_bcast (mpicxx -Wall -Wextra
   -Werror) under mpirun -np 16 against MPI_Bcast: 4 roots, 8 counts (0 to 100003, not
   divisible by N), MPI_INT, MPI_DOUBLE, a strided vector type, the persistent form; at
   -np 4 the call must be refused (the frames fix p).
5. Bad frames: a frame arc off the links, a node in two arcs of a frame, frames that cannot
   finish (a link never used), an arc without a stream under `packet stream K`, a stream
   outside 0..K-1, a stream under another rule, K = 0: a diagnostic with file:line:col, exit 1.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import mpitest  # noqa: E402  (tests/mpitest.py)
from mpitest import mpirun, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
failures = []


def must(r, what):
    return mpitest.must(r, "bbs_mpi", what)


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build"))
    bcc = os.path.join(build, "bine-cc")
    out = os.path.join(build, "bbs_mpi")
    os.makedirs(out, exist_ok=True)
    cases = [("grid:4x4", "lowest", "bfs"), ("grid:4x4", "potential", "alternate"),
             ("grid:2x2x4", "lowest", "bfs"), ("grid:2x2x4", "potential", "bfs"),
             ("grid:4x4", "stream", "bfs"), ("grid:2x2x4", "stream", "bfs")]
    for topo, rule, orient in cases:
        tag = re.sub(r"\W", "_", topo) + "_" + rule
        name = "bbs_" + tag
        bine = os.path.join(out, tag + ".bine")
        synth = ["synth", "bbs", "--topology", topo, "--packets", "100", "--orient", orient, "--packet", rule,
                 "--name", name, "--bine", bine]
        r = must(run([bcc, *synth]), f"synth {topo}")
        first = open(bine).read()
        must(run([bcc, *synth]), f"synth {topo} (again)")
        if open(bine).read() != first:
            failures.append(f"{tag}: synth --bine wrote different bytes on a second run")
        m = re.search(r"T = (\d+) steps in the model", r.stdout)
        inst = must(run([bcc, "schedule", bine, "-p", "16", "--root", "5"]), f"schedule {tag}").stdout
        rounds = re.search(r"rounds = (\d+)", inst)
        if not m or not rounds or m.group(1) != rounds.group(1):
            failures.append(f"{tag}: synth's model says T = {m and m.group(1)}, the compiler's instance has "
                            f"{rounds and rounds.group(1)} rounds")
        chk = must(run([bcc, "check", bine, "--ranks", "1..32", "--all-roots-up-to", "16"]), f"check {tag}").stdout
        if "verified" not in chk or "16 instances" not in chk:
            failures.append(f"{tag}: check did not prove 16 roots at p = 16: {chk.strip()}")
        header = os.path.join(out, "bbs_lib.h")
        must(run([bcc, "compile", bine, "--verify-ranks", "16", "-o", header]), f"compile {tag}")
        h1 = open(header).read()
        must(run([bcc, "compile", bine, "--verify-ranks", "16", "-o", header]), f"compile {tag} (again)")
        if open(header).read() != h1:
            failures.append(f"{tag}: compile wrote different bytes on a second run")
        exe = os.path.join(out, "bbs_bcast_" + tag)
        must(run(["mpicxx", "-std=c++17", "-O1", "-DOMPI_SKIP_MPICXX", "-DMPICH_SKIP_MPICXX", "-Wall", "-Wextra", "-Werror",
                  "-I" + out, "-I" + os.path.join(SRC, "runtime", "include"), os.path.join(HERE, "bbs_bcast.cpp"), "-o", exe]),
             f"mpicxx {tag}")
        for np_, extra in ((16, []), (4, ["refused"])):
            r = run([*mpirun(np_), exe, "0", *extra], timeout=600)
            if r.returncode != 0 or "ok:" not in r.stdout:
                failures.append(f"{tag} at -np {np_}: exit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
            else:
                print(r.stdout.strip())
    bad(bcc, out)
    if failures:
        sys.exit("bbs_mpi: FAILED\n" + "\n".join(failures))
    print("bbs_mpi: all passed")


BAD = {
    "off_link": ("lowest", "frame 0>1 2>3\n    frame 1>3", r":8:11: error: arc 1>3 of frame 1 is not along a link"),
    "two_arcs": ("lowest", "frame 0>1 1>2", r":7:15: error: node 1 is in two arcs of frame 0"),
    "stall": ("lowest", "frame 0>1\n    frame 1>2", r"error: .*the frames cannot finish: no packet moves .*node 3 lacks packet 0"),
    "no_stream": ("stream 2", "frame 0>1:0 2>3\n    frame 1>2:1",
                  r":7:17: error: arc 2>3 names no stream \('packet stream 2': write U>V:J, J in 0..1\)"),
    "stream_range": ("stream 2", "frame 0>1:2", r":7:11: error: stream 2 of arc 0>1 outside 0..1"),
    "stream_rule": ("lowest", "frame 0>1:0", r":7:11: error: arc 0>1 names a stream, but the packet rule is 'lowest'"),
    "stream_count": ("stream 0", "frame 0>1:0", r":5:27: error: stream count 0 outside 1..65536"),
}


def bad(bcc, out):
    for name, (rule, frames, want) in BAD.items():
        path = os.path.join(out, f"bad_{name}.bine")
        with open(path, "w") as f:
            f.write("// a path 0-1-2-3\nschedule bad implements bcast {\n  blocks 3\n  frames {\n"
                    "    nodes 4 root 0 packet " + rule + "\n    links 0-1 1-2 2-3\n    " + frames + "\n  }\n}\n")
        r = run([bcc, "check", path, "--ranks", "4"])
        text = r.stdout + r.stderr
        if r.returncode != 1 or not re.search(want, text) or "^" not in text:
            failures.append(f"bad input {name}: expected exit 1 and /{want}/ with a caret, got exit {r.returncode}:\n{text}")
        else:
            print(f"bad input {name}: {text.splitlines()[0]}")


if __name__ == "__main__":
    main()
