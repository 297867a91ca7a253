#!/usr/bin/env python3
"""Golden diagnostics for bine-cc: malformed .bine inputs with the expected diagnostics
annotated in the input (the clang/LLVM -verify style), plus a robustness pass over
mutated library schedules.

Usage: run.py BINE_CC [CASE_NAME_SUBSTRING ...]

Case format (one file per case, tests/diagnostics/NAME.bine):

  // RUN: check --ranks 1..4
      First line: the bine-cc arguments; the case file is inserted after the
      subcommand (`bine-cc check FILE --ranks 1..4`).
  let x = true + 1   // expected-error@+0 {{invalid operands to '+'}}
      An error on this line whose message contains the text between {{ and }}.
  // expected-error@+1:11 {{use of undeclared name 'q'}}
  let y = q
      @+N / @-N: the line N below / above the comment's line; :C also fixes the column.
  // expected-error@* {{...}}
      An error without a source location (or at any location).
  // expected-note@+1 {{...}}
      Notes are only checked when annotated: each annotated note must appear (attached
      to any diagnostic); unannotated notes are ignored. Warnings are expected like
      errors, with expected-warning.

Every reported error must be expected and every expected error must be reported. Each
case must exit with status 1, is run once with `--diagnostics-format json` (compared
against the annotations) and once in text mode (each error must render as
`file:line:col: error: message`, the source line and a caret line under the column).

Robustness pass: deterministic (seeded) mutations of dsl/lib/*.bine -- a deleted token,
a duplicated line, two swapped characters, an inserted punctuation character, a
truncated file -- each checked with `check --ranks 1..8`: exit status 0 or 1 within 10
seconds, JSON that parses, and every error located at file:line:col unless its message
is one of the known location-less ones.
"""
import concurrent.futures
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CASE_TIMEOUT_S = 60
MUTATION_TIMEOUT_S = 10
NUM_MUTATIONS = 300
MUTATION_SEED = 20250601

# Errors that legitimately carry no source location (driver and verifier messages about
# the whole input or instance).
LOCATIONLESS = [
    re.compile(r"schedules need 'blocks p'"),
    re.compile(r"alltoall needs the p x p block grid"),
    re.compile(r"^no schedule named '"),
    re.compile(r"^the input holds \d+ schedules"),
    re.compile(r"^cannot open '"),
]

ANNOTATION = re.compile(
    r"expected-(error|warning|note)@(?:(\*)|([+-])(\d+)(?::(\d+))?)\s*\{\{(.*?)\}\}")
CARET = re.compile(r"^[ \t]*\^~*$")


class Expectation:
    def __init__(self, severity, line, column, text, where):
        self.severity, self.line, self.column, self.text, self.where = severity, line, column, text, where

    def matches(self, d):
        if d.get("severity") != self.severity or self.text not in d.get("message", ""):
            return False
        if self.line is None:
            return True
        return d.get("line") == self.line and (self.column is None or d.get("column") == self.column)

    def describe(self):
        loc = "*" if self.line is None else str(self.line) + ("" if self.column is None else ":%d" % self.column)
        return "%s at %s {{%s}} (annotation on line %d)" % (self.severity, loc, self.text, self.where)


def parse_case(path):
    lines = path.read_text(encoding="utf-8").split("\n")
    m = re.match(r"^//\s*RUN:\s*(.*)$", lines[0])
    if not m:
        raise ValueError("first line must be `// RUN: <subcommand> [args]`")
    args = shlex.split(m.group(1))
    if not args:
        raise ValueError("RUN line names no subcommand")
    expected = []
    for i, text in enumerate(lines, start=1):
        for sev, star, sign, off, col, msg in ANNOTATION.findall(text):
            if star:
                expected.append(Expectation(sev, None, None, msg, i))
            else:
                line = i + int(off) if sign == "+" else i - int(off)
                expected.append(Expectation(sev, line, int(col) if col else None, msg, i))
    return args, expected, lines


def match(expected, actual):
    """Maximum bipartite matching between expectations and diagnostics. Returns the
    unmatched expectations and the unmatched diagnostics."""
    owner = {}  # actual index -> expectation index

    def augment(e, seen):
        for a, d in enumerate(actual):
            if a in seen or not expected[e].matches(d):
                continue
            seen.add(a)
            if a not in owner or augment(owner[a], seen):
                owner[a] = e
                return True
        return False

    matched = set()
    for e in range(len(expected)):
        if augment(e, set()):
            matched.add(e)
    matched = set(owner.values())
    return ([x for i, x in enumerate(expected) if i not in matched],
            [d for i, d in enumerate(actual) if i not in owner])


def fmt(d):
    loc = "%s:%s" % (d["line"], d["column"]) if "line" in d else "<no location>"
    return "%s at %s: %s" % (d.get("severity"), loc, d.get("message"))


def run(cmd, timeout):
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")


def status_problem(rc, allowed):
    if rc < 0:
        return "killed by signal %d" % -rc
    if rc not in allowed:
        return "exit status %d (expected %s)" % (rc, " or ".join(map(str, allowed)))
    return None


def check_case(bine, path):
    """Returns a list of failure messages (empty: pass)."""
    try:
        args, expected, lines = parse_case(path)
    except ValueError as e:
        return [str(e)]
    if not expected:
        return ["the case expects no diagnostics (annotate at least one expected-error)"]
    rel = str(path)
    cmd = [bine, args[0], rel] + args[1:]
    problems = []

    # JSON mode: compare with the annotations.
    res = run(cmd + ["--diagnostics-format", "json"], CASE_TIMEOUT_S)
    if res is None:
        return ["timed out after %d s (json mode)" % CASE_TIMEOUT_S]
    rc, _, err = res
    p = status_problem(rc, (1,))
    if p:
        problems.append("json mode: " + p)
    try:
        diags = json.loads(err)
    except ValueError:
        return problems + ["stderr is not a JSON array of diagnostics:\n" + err[:2000]]
    for d in diags:
        if "line" in d and d.get("file") != rel:
            problems.append("diagnostic in another file %r: %s" % (d.get("file"), fmt(d)))
    errs = [d for d in diags if d.get("severity") in ("error", "warning")]
    notes = [n for d in diags for n in d.get("notes", [])]
    missing, unexpected = match([e for e in expected if e.severity != "note"], errs)
    missing_notes, _ = match([e for e in expected if e.severity == "note"], notes)
    for e in missing + missing_notes:
        problems.append("expected but not seen: " + e.describe())
    for d in unexpected:
        problems.append("seen but not expected: " + fmt(d))

    # Text mode: clang-style rendering of every error.
    res = run(cmd + ["--diagnostics-format", "text"], CASE_TIMEOUT_S)
    if res is None:
        return problems + ["timed out after %d s (text mode)" % CASE_TIMEOUT_S]
    rc, _, text = res
    p = status_problem(rc, (1,))
    if p:
        problems.append("text mode: " + p)
    out = text.split("\n")
    for d in errs:
        sev = d["severity"]
        if "line" not in d:
            head = "bine-cc: %s: %s" % (sev, d["message"])
            if head not in out:
                problems.append("text mode lacks the line %r" % head)
            continue
        head = "%s:%d:%d: %s: %s" % (rel, d["line"], d["column"], sev, d["message"])
        if head not in out:
            problems.append("text mode lacks the line %r" % head)
            continue
        i = out.index(head)
        src = lines[d["line"] - 1].rstrip("\r") if d["line"] <= len(lines) else ""
        if i + 2 >= len(out) or out[i + 1] != src:
            problems.append("text mode: %r is not followed by the source line %r" % (head, src))
        elif not CARET.match(out[i + 2]) or out[i + 2].index("^") != min(d["column"] - 1, len(src)):
            problems.append("text mode: no caret under column %d after %r (got %r)" % (d["column"], head, out[i + 2]))
    n = len([d for d in diags if d.get("severity") == "error"])
    summary = "%d error%s generated." % (n, "" if n == 1 else "s")
    if summary not in out:
        problems.append("text mode lacks the summary %r" % summary)
    return problems


# ---- robustness pass ----

TOKEN = re.compile(r"[A-Za-z_0-9]+|\.\.|<<|>>|==|!=|<=|>=|&&|\|\||\S")
PUNCT = "{}()[],;:?.=!<>+-*/%&|^~@#$'\"\\`"


def mutate(text, rng):
    """One random edit; returns (new text, description)."""
    kind = rng.randrange(5)
    if kind == 0:
        toks = [m.span() for m in TOKEN.finditer(text)]
        if toks:
            a, b = toks[rng.randrange(len(toks))]
            return text[:a] + text[b:], "delete %r at offset %d" % (text[a:b], a)
    if kind == 1:
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines), "duplicate line %d" % (i + 1)
    if kind == 2 and len(text) >= 2:
        i, j = rng.randrange(len(text)), rng.randrange(len(text))
        c = list(text)
        c[i], c[j] = c[j], c[i]
        return "".join(c), "swap offsets %d and %d" % (i, j)
    if kind == 3:
        i = rng.randrange(len(text) + 1)
        ch = rng.choice(PUNCT)
        return text[:i] + ch + text[i:], "insert %r at offset %d" % (ch, i)
    i = rng.randrange(len(text) + 1)
    return text[:i], "truncate at offset %d" % i


def mutations(n, seed):
    libs = sorted((REPO / "dsl" / "lib").glob("*.bine"))
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in libs]
    rng = random.Random(seed)
    out = []
    for k in range(n):
        name, text = texts[rng.randrange(len(texts))]
        how = []
        for _ in range(1 + rng.randrange(3)):
            text, d = mutate(text, rng)
            how.append(d)
        out.append((k, name, "; ".join(how), text))
    return out


def check_mutation(bine, workdir, item):
    k, name, how, text = item
    path = os.path.join(workdir, "mutation_%03d_%s" % (k, name))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    res = run([bine, "check", path, "--ranks", "1..8", "--diagnostics-format", "json"], MUTATION_TIMEOUT_S)
    problems = []
    if res is None:
        problems.append("timed out after %d s" % MUTATION_TIMEOUT_S)
    else:
        rc, _, err = res
        p = status_problem(rc, (0, 1))
        if p:
            problems.append(p)
        try:
            diags = json.loads(err)
        except ValueError:
            diags = []
            problems.append("stderr is not JSON: " + err[:500])
        for d in diags:
            if d.get("severity") != "error" or "line" in d:
                continue
            if not any(r.search(d.get("message", "")) for r in LOCATIONLESS):
                problems.append("error without a location: " + d.get("message", ""))
    if not problems:
        os.unlink(path)
    return k, name, how, path, problems


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bine = os.path.abspath(sys.argv[1])
    filters = sys.argv[2:]
    os.chdir(REPO)  # case paths in diagnostics are relative to the repository root
    cases = sorted(p.relative_to(REPO) for p in HERE.glob("*.bine"))
    if filters:
        cases = [c for c in cases if any(f in c.name for f in filters)]
    failed = 0
    for case in cases:
        problems = check_case(bine, case)
        print("%s: %s" % ("PASS" if not problems else "FAIL", case.name))
        for p in problems:
            print("    " + p.replace("\n", "\n    "))
        failed += bool(problems)
    print("%d of %d diagnostics cases passed" % (len(cases) - failed, len(cases)))

    mfailed = 0
    if not filters:
        keep = tempfile.mkdtemp(prefix="bine-diag-mutations-")
        items = mutations(NUM_MUTATIONS, MUTATION_SEED)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda it: check_mutation(bine, keep, it), items))
        for k, name, how, path, problems in results:
            if problems:
                mfailed += 1
                print("FAIL: mutation %d of %s (%s), input kept in %s" % (k, name, how, path))
                for p in problems:
                    print("    " + p)
        print("robustness: %d of %d mutated library files handled (exit 0/1, no signal or timeout, "
              "located errors)" % (len(items) - mfailed, len(items)))
        if not mfailed:
            os.rmdir(keep)
    ok = failed == 0 and mfailed == 0
    print("diagnostics: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
