#!/usr/bin/env python3
"""The table of each test suite's wall time, from a ctest log (issue 44, docs/testing.md).

Reads the lines ctest prints per suite ("12/38 Test #4: mpi_e2e ....   Passed  591.23 sec")
and prints, slowest first, each suite's status, wall time and the ctest timeout it runs
under (the TIMEOUT property, from tests/suite_times.txt: just above 3x the measured time),
then the sum of the suite times and the ctest run's own wall time. `--markdown` prints the
same as a Markdown table (for docs/testing.md).

usage: suite_times.py CTEST_LOG [SUITE_TIMES] [--markdown]
"""
import re
import sys

LINE = re.compile(r"Test\s+#\d+:\s+(\S+)\s+\.*\s*(\*\*\*)?(\w[\w ]*?)\s+([\d.]+)\s+sec")
TOTAL = re.compile(r"Total Test time \(real\) =\s+([\d.]+) sec")


def budgets(path):
    out = {}
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if len(line) >= 2:
            out[line[0]] = int(line[1])
    return out


def timeout_for(measured):
    """The TIMEOUT tests/CMakeLists.txt sets: 3x the measured time plus 30 s, at least 60 s."""
    return max(60, int(3 * measured + 30))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    markdown = "--markdown" in sys.argv
    rows, total = [], None
    for line in open(args[0], errors="replace"):
        m = LINE.search(line)
        if m:
            rows.append((m.group(1), m.group(3).strip(), float(m.group(4))))
        t = TOTAL.search(line)
        if t:
            total = float(t.group(1))
    measured = budgets(args[1]) if len(args) > 1 else {}
    rows.sort(key=lambda r: -r[2])
    if markdown:
        print("| suite | status | wall (s) | measured for the timeout (s) | timeout (s) |")
        print("| --- | --- | --- | --- | --- |")
    else:
        print(f"{'suite':24} {'status':10} {'wall s':>8} {'timeout s':>10}")
    for name, status, secs in rows:
        m = measured.get(name)
        to = str(timeout_for(m)) if m is not None else "1500 (default)"
        if markdown:
            print(f"| `{name}` | {status} | {secs:.1f} | {m if m is not None else '-'} | {to} |")
        else:
            print(f"{name:24} {status:10} {secs:8.1f} {to:>10}")
    s = sum(r[2] for r in rows)
    tail = f"{len(rows)} suites, {s:.0f} s of suite time" + (f", {total:.0f} s wall (ctest)" if total else "")
    print(("\n" if markdown else "") + tail)


if __name__ == "__main__":
    main()
