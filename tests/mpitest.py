"""Helpers shared by the Python test drivers that build and run generated code
(tests/dispatch/run.py, tests/bbs/run.py): subprocess capture, a step that must succeed,
and the mpirun prefix (oversubscribed; --allow-run-as-root when run as root, as in CI)."""
import os
import subprocess
import sys


def run(cmd, **kw):
    """Runs `cmd`, capturing stdout and stderr as text."""
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def must(r, test, what):
    """Returns `r`; on a non-zero exit prints the tail of its output and exits naming `test`
    and the step `what`."""
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
        sys.exit(f"{test}: {what} failed (exit {r.returncode})")
    return r


def mpirun(n):
    """The command prefix that starts `n` ranks on this machine."""
    args = ["mpirun", "--oversubscribe", "-np", str(n)]
    if os.geteuid() == 0:
        args.insert(1, "--allow-run-as-root")
    return args
