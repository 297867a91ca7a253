#!/usr/bin/env python3
"""Mutation suite for the verifier: deliberately broken copies of the library schedules.

Usage: run.py BINE_CC

Every mut_*.bine here holds one broken copy of a schedule from dsl/lib (first, named
mut_*; copies of the schedules it composes may follow under other names) and starts with
header comments giving the expectation, derived by hand from the broken schedule:

  // RUN: check --ranks 1..16
  // EXPECT: fail p=4 [root=R] kind=deadlock rank=0 round=0 block=0 line=12
  // EXPECT: pass [requires=is_pow2(p)] [excludes=11] [instances=5]
  // NOTE: rank 1 posts the matching receive in round 1      (optional, repeatable)

For `fail`, bine-cc must exit 1 and its first error must be the counterexample: the
instance (p, root), the rank, the round (`none` for "before any round"), the block, the
kind of failure and the source line in this file. p and line are required; the other
fields are checked when given. Kinds: deadlock, race, double-count, missing,
size-mismatch, no-data, wrong-data, and eval-error: the instance cannot be built because a
rank's evaluation fails ("p=3 root=2: rank 1: wrapping block range ... is reversed": a
domain error or a block set out of range, with no round or block). For `pass`, bine-cc
must exit 0 with no error, and the summary must name the unmet requirement, how many p it
excludes and how many instances were proved, when given. Each NOTE must be part of the message of one of the
first error's notes (the other ranks involved: matching operation, wait-for chain, the
sender of a double-counted contribution, the receive that last wrote a block, ...).

Before the cases, the unmodified library (dsl/lib/*.bine) must pass `check --ranks
1..16`, so that every failure below is caused by its mutation.
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KINDS = ("deadlock", "race", "double-count", "missing", "size-mismatch", "no-data", "wrong-data", "eval-error")
MIN_CASES = 20

# "p=4: rank 0, round 0, block 0: deadlock: ..." / "p=4 root=1: rank 2, before any round, ..."
MSG_RE = re.compile(
    r"^p=(?P<p>\d+)(?: root=(?P<root>\d+))?: rank (?P<rank>\d+), "
    r"(?:round (?P<round>\d+)|(?P<before>before any round))"
    r"(?:, block (?P<block>\d+))?: (?P<what>.*)$",
    re.S)
# An instantiation error: "p=3 root=2: rank 1: wrapping block range wrap[...) is reversed ..."
EVAL_RE = re.compile(r"^p=(?P<p>\d+)(?: root=(?P<root>\d+))?: rank (?P<rank>\d+): (?P<what>.*)$", re.S)


def classify(what):
    """Kind of failure named by the text after the location."""
    if what.startswith("deadlock:"):
        return "deadlock"
    if what.startswith("race:"):
        return "race"
    if what.startswith("message size mismatch"):
        return "size-mismatch"
    if "holds no data" in what:
        return "no-data"
    if "double-counted contribution" in what:
        return "double-count"
    if "postcondition of" in what:
        if "missing the contribution" in what or "never receives" in what or "can leave before" in what:
            return "missing"
        if "outside the prefix" in what:
            return "wrong-data"
        if "more than once" in what:
            return "double-count"
        if "instead of block" in what or "combined with data of another block" in what:
            return "wrong-data"
    if "combined with data of another block" in what:
        return "wrong-data"
    return None


def parse_header(path):
    run, expect, notes = None, None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("//"):
                break
            body = line[2:].strip()
            if body.startswith("RUN:"):
                run = body[len("RUN:"):].strip()
            elif body.startswith("EXPECT:"):
                expect = body[len("EXPECT:"):].strip()
            elif body.startswith("NOTE:"):
                notes.append(body[len("NOTE:"):].strip())
    return run, expect, notes


def parse_expect(text):
    words = text.split()
    if not words or words[0] not in ("fail", "pass"):
        raise ValueError("EXPECT must start with 'fail' or 'pass'")
    fields = {}
    for w in words[1:]:
        if "=" not in w:
            raise ValueError("EXPECT field without '=': %r" % w)
        k, v = w.split("=", 1)
        fields[k] = v
    allowed = {"fail": {"p", "root", "kind", "rank", "round", "block", "line"},
               "pass": {"requires", "excludes", "instances"}}[words[0]]
    unknown = set(fields) - allowed
    if unknown:
        raise ValueError("unknown EXPECT field(s) for %s: %s" % (words[0], ", ".join(sorted(unknown))))
    if words[0] == "fail":
        for req in ("p", "line", "kind"):
            if req not in fields:
                raise ValueError("EXPECT fail needs %s=" % req)
        if fields["kind"] not in KINDS:
            raise ValueError("unknown kind %r (one of %s)" % (fields["kind"], ", ".join(KINDS)))
    return words[0], fields


def run_bine(bine, args):
    cmd = [bine] + args + ["--diagnostics-format", "json"]
    try:
        r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "", [], "timed out: " + " ".join(cmd)
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    try:
        diags = json.loads(err) if err.strip() else []
    except ValueError:
        return r.returncode, out, [], "stderr is not a JSON array of diagnostics: %r" % err[:300]
    if not isinstance(diags, list):
        return r.returncode, out, [], "stderr JSON is not an array"
    return r.returncode, out, diags, None


def schedule_names(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r"^\s*schedule\s+(\w+)\s+implements", f.read(), re.M)


def check_library(bine):
    libs = sorted(glob.glob(os.path.join(ROOT, "dsl", "lib", "*.bine")))
    if not libs:
        return "no library files in dsl/lib"
    rc, out, diags, err = run_bine(bine, ["check"] + libs + ["--ranks", "1..16"])
    if err:
        return err
    errors = [d for d in diags if d.get("severity") == "error"]
    if rc != 0 or errors:
        first = errors[0]["message"] if errors else out.strip()
        return "library does not verify (exit %s): %s" % (rc, first)
    lines = [l for l in out.splitlines() if l.strip()]
    names = [n for f in libs for n in schedule_names(f)]
    for n in names:
        if not any(l.startswith(n + " (") and ": verified p=1..16" in l for l in lines):
            return "library schedule %s has no 'verified p=1..16' summary" % n
    return None


def check_fail(path, fields, notes, rc, out, diags):
    if rc != 1:
        return "expected exit status 1, got %s" % rc
    errors = [d for d in diags if d.get("severity") == "error"]
    if not errors:
        return "exit 1 but no error diagnostic"
    d = errors[0]
    msg = d.get("message", "")
    m = MSG_RE.match(msg)
    if m:
        got = {
            "p": m.group("p"),
            "root": m.group("root"),
            "rank": m.group("rank"),
            "round": "none" if m.group("before") else m.group("round"),
            "block": m.group("block"),
            "kind": classify(m.group("what")),
        }
    else:
        m = EVAL_RE.match(msg)
        if not m:
            return "first error is neither a verifier counterexample nor an evaluation error: %r" % msg
        got = {"p": m.group("p"), "root": m.group("root"), "rank": m.group("rank"), "round": None, "block": None,
               "kind": "eval-error"}
    got["line"] = str(d.get("line")) if "line" in d else None
    problems = []
    for k in ("p", "root", "kind", "rank", "round", "block", "line"):
        if k in fields and fields[k] != got[k]:
            problems.append("%s=%s expected, got %s" % (k, fields[k], got[k]))
    got_notes = [n.get("message", "") for n in d.get("notes", [])]
    for want_note in notes:
        if not any(want_note in n for n in got_notes):
            problems.append("no note %r among %s" % (want_note, got_notes))
    if "line" in d and os.path.realpath(d.get("file", "")) != os.path.realpath(path):
        problems.append("reported in %s, not in the case file" % d.get("file"))
    # The summary line on stdout names the same failing instance.
    want = "FAILED at p=" + fields["p"] + (" root=" + fields["root"] if "root" in fields else "")
    if not any(l.rstrip().endswith(want) for l in out.splitlines()):
        problems.append("summary does not say %r: %r" % (want, out.strip()))
    if problems:
        return "; ".join(problems) + "\n    message: " + msg
    return None


def check_pass(fields, rc, out, diags):
    errors = [d for d in diags if d.get("severity") == "error"]
    if rc != 0 or errors:
        first = errors[0].get("message") if errors else out.strip()
        return "expected exit status 0, got %s: %s" % (rc, first)
    if ": verified p=" not in out:
        return "no 'verified' summary: %r" % out.strip()
    problems = []
    if "requires" in fields or "excludes" in fields:
        m = re.search(r"\(requires '([^']*)' excludes (\d+) p\)", out)
        if not m:
            problems.append("summary does not report an excluding requirement: %r" % out.strip())
        else:
            if "requires" in fields and m.group(1) != fields["requires"]:
                problems.append("requires %r expected, got %r" % (fields["requires"], m.group(1)))
            if "excludes" in fields and m.group(2) != fields["excludes"]:
                problems.append("excludes %s expected, got %s" % (fields["excludes"], m.group(2)))
    if "instances" in fields:
        m = re.search(r", (\d+) instances?\b", out)
        if not m or m.group(1) != fields["instances"]:
            problems.append("instances=%s expected, got %s" % (fields["instances"], m.group(1) if m else None))
    return "; ".join(problems) or None


def run_case(bine, path):
    run, expect, notes = parse_header(path)
    if not run or not expect:
        return "missing '// RUN:' or '// EXPECT:' header"
    try:
        verdict, fields = parse_expect(expect)
    except ValueError as e:
        return "bad EXPECT: %s" % e
    if notes and verdict != "fail":
        return "NOTE lines need EXPECT: fail"
    names = schedule_names(path)
    # One mutated schedule, first; any others are unmodified helpers it composes
    # (`phase NAME = SCHEDULE`), copies of library schedules under other names.
    if not names or not names[0].startswith("mut_") or any(n.startswith("mut_") for n in names[1:]):
        return "a case holds exactly one schedule named mut_*, first (then the helpers it composes), found %s" % names
    args = shlex.split(run)
    if not args or args[0] != "check":
        return "RUN must be a 'check' command"
    rc, out, diags, err = run_bine(bine, ["check", path] + args[1:])
    if err:
        return err
    if verdict == "fail":
        return check_fail(path, fields, notes, rc, out, diags)
    return check_pass(fields, rc, out, diags)


def main():
    if len(sys.argv) != 2:
        print("usage: run.py BINE_CC", file=sys.stderr)
        return 2
    bine = os.path.abspath(sys.argv[1])
    failures = 0
    err = check_library(bine)
    print("%s library: dsl/lib/*.bine verifies for p=1..16%s" % ("FAIL" if err else "PASS", ": " + err if err else ""))
    failures += bool(err)
    cases = sorted(glob.glob(os.path.join(HERE, "*.bine")))
    for path in cases:
        reason = run_case(bine, path)
        name = os.path.basename(path)
        print("%s %s%s" % ("FAIL" if reason else "PASS", name, ": " + reason if reason else ""))
        failures += bool(reason)
    # Coverage (informative): every library schedule should have at least two mutations,
    # named by a "Mutation of NAME" header line.
    mutated = {}
    for path in cases:
        with open(path, encoding="utf-8") as f:
            for name in re.findall(r"^// Mutation of (\w+)", f.read(), re.M):
                mutated[name] = mutated.get(name, 0) + 1
    for lib in sorted(glob.glob(os.path.join(ROOT, "dsl", "lib", "*.bine"))):
        for name in schedule_names(lib):
            if mutated.get(name, 0) < 2:
                print("WARN library schedule %s has %d mutation case(s), want at least 2" % (name, mutated.get(name, 0)))
    if len(cases) < MIN_CASES:
        print("FAIL only %d mutation cases, want at least %d" % (len(cases), MIN_CASES))
        failures += 1
    print("%d case(s), %d failure(s)" % (len(cases), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
