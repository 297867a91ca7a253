#!/usr/bin/env python3
"""ctest rewrite: `bine-cc rewrite` on the sample programs of tests/rewrite/samples.

1. --dry-run (compile flags after `--`): the diff and the notes (sites left alone) equal the
   reviewed goldens tests/rewrite/golden/{rewrite.diff,rewrite.notes}.
2. In place, through a compile_commands.json (-p DIR): the files written equal the originals
   with the golden diff applied (diff -u of the two is the golden).
3. The originals and the rewritten programs compile with mpicc/mpicxx -Wall -Wextra -Werror
   (the rewritten ones with the generated header, linked with its definitions) and print the
   same lines under mpirun -np 4: Open MPI's own collectives are the oracle.
4. Errors: no function chosen, a bad name, a source that does not parse (nothing written),
   and bine-cc without bine-cc-rewrite next to it.

usage: run.py BINE_CC GENERATED_DIR IMPL_LIB SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

bine_cc, gen_dir, impl_lib, src_dir = sys.argv[1:5]
here = os.path.dirname(os.path.abspath(__file__))
samples_dir = os.path.join(here, "samples")
golden_dir = os.path.join(here, "golden")
samples = ["app.c", "app.cpp"]
choices = ["--allreduce", "bcc_bine_allreduce_lat", "--bcast", "bcc_bine_bcast_lat", "--reduce", "bcc_bine_reduce_lat",
           "--allgather", "bcc_bine_allgather", "--gather", "bcc_binomial_gather", "--scatter", "bcc_binomial_scatter",
           "--reduce-scatter-block", "bcc_bine_reduce_scatter"]
mpi_flags = subprocess.run(["mpicc", "--showme:compile"], capture_output=True, text=True, check=True).stdout.split()
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name)
    if not ok:
        failures.append(name)
        if detail:
            print(detail)


def run(args, cwd=None):
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env)


def read(path):
    with open(path) as f:
        return f.read()


tmp = tempfile.mkdtemp(prefix="bine-rewrite-")
try:
    # 1. Dry run from the samples directory: paths in the output are relative to it.
    originals = {s: read(os.path.join(samples_dir, s)) for s in samples}
    r = run([bine_cc, "rewrite", "--dry-run"] + choices + samples + ["--"] + mpi_flags, cwd=samples_dir)
    check("dry run exits 0", r.returncode == 0, r.stderr)
    golden_diff = read(os.path.join(golden_dir, "rewrite.diff"))
    check("dry-run diff equals golden/rewrite.diff", r.stdout == golden_diff, r.stdout)
    check("notes equal golden/rewrite.notes", r.stderr == read(os.path.join(golden_dir, "rewrite.notes")), r.stderr)
    check("dry run writes nothing", all(read(os.path.join(samples_dir, s)) == originals[s] for s in samples))

    # 2. In place, reading compile_commands.json.
    def workdir(name):
        """A copy of the samples with a compile_commands.json naming them."""
        d = os.path.join(tmp, name)
        os.makedirs(d)
        cmds = []
        for s in samples:
            shutil.copy(os.path.join(samples_dir, s), d)
            cc = "cc" if s.endswith(".c") else "c++"
            cmds.append({"directory": d, "file": s, "arguments": [cc] + mpi_flags + ["-I", gen_dir, "-Wall", "-Wextra", "-Werror", "-c", s,
                                                                       "-o", s + ".o"]})
        shutil.copy(os.path.join(samples_dir, "helpers.h"), d)
        with open(os.path.join(d, "compile_commands.json"), "w") as f:
            json.dump(cmds, f)
        return d

    work = workdir("work")
    r = run([bine_cc, "rewrite", "-p", work] + choices + [os.path.join(work, s) for s in samples], cwd=work)
    check("in-place rewrite exits 0", r.returncode == 0, r.stderr)
    d = ""
    for s in samples:
        d += run(["diff", "-u", "--label", "a/" + s, "--label", "b/" + s, os.path.join(samples_dir, s),
                  os.path.join(work, s)]).stdout
    check("in-place files equal the originals with the golden diff applied", d == golden_diff, d)
    once = {s: read(os.path.join(work, s)) for s in samples}
    work2, outdir = workdir("work2"), os.path.join(tmp, "out")
    r = run([bine_cc, "rewrite", "-p", work2, "-o", outdir] + choices + [os.path.join(work2, s) for s in samples],
            cwd=tmp)
    check("-o DIR writes the same files as in place, the sources untouched",
          r.returncode == 0 and all(read(os.path.join(outdir, s)) == once[s] for s in samples)
          and all(read(os.path.join(work2, s)) == originals[s] for s in samples), r.stderr)
    check("notes name files relative to the working directory, not the compile directory",
          r.stderr.startswith("work2/helpers.h:5:56: note:") and "\nwork2/app.c:19:57: note:" in r.stderr, r.stderr)
    # In place, started outside the compile directory (the database names files relative to it).
    work3 = workdir("work3")
    r = run([bine_cc, "rewrite", "-p", work3] + choices + [os.path.join(work3, s) for s in samples], cwd=tmp)
    check("in place from another directory writes the sources of the database",
          r.returncode == 0 and all(read(os.path.join(work3, s)) == once[s] for s in samples)
          and not os.path.exists(os.path.join(tmp, "app.c")), r.stderr)
    r2 = run([bine_cc, "rewrite", "-p", work] + choices + [os.path.join(work, s) for s in samples], cwd=work)
    check("a second rewrite changes nothing",
          r2.returncode == 0 and all(read(os.path.join(work, s)) == once[s] for s in samples)
          and "0 calls rewritten" in r2.stderr, r2.stderr)

    # A source that already includes the header: its calls are rewritten, no second include.
    pre = os.path.join(tmp, "pre")
    os.makedirs(pre)
    shutil.copy(os.path.join(samples_dir, "helpers.h"), pre)
    with open(os.path.join(pre, "app.c"), "w") as f:
        f.write('#include "bine_lib.h"\n' + originals["app.c"])
    r = run([bine_cc, "rewrite", "--dry-run"] + choices + ["app.c", "--"] + mpi_flags + ["-I", gen_dir], cwd=pre)
    check("a source that includes the header already gets no second include",
          r.returncode == 0 and "+  bcc_bine_bcast_lat(" in r.stdout and "bine_lib.h" not in r.stdout, r.stdout + r.stderr)

    # Warnings (an unused variable under the build's -Werror) do not stop a rewrite.
    with open(os.path.join(pre, "warn.c"), "w") as f:
        f.write("#include <mpi.h>\nint f(int* v) {\n  int unused;\n  return MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD);\n}\n")
    r = run([bine_cc, "rewrite", "--dry-run", "--bcast", "bcc_bine_bcast_lat", "warn.c", "--"] + mpi_flags +
            ["-Wall", "-Werror"], cwd=pre)
    check("-Werror and a warning in the source do not stop the rewrite",
          r.returncode == 0 and "+  return bcc_bine_bcast_lat(v," in r.stdout, r.stdout + r.stderr)

    # 3. Build both versions, run both, compare.
    # MPI's headers as system headers (as CMake's MPI::MPI_CXX gives them): Open MPI's C++
    # bindings do not build with -Wextra -Werror. GCC ignores the wrappers' -I for these.
    warn = ["-Wall", "-Wextra", "-Werror", "-O1"] + sum(
        (["-isystem", f[2:]] for f in mpi_flags if f.startswith("-I")), [])
    outputs = {}
    for s in samples:
        cc = "mpicc" if s.endswith(".c") else "mpicxx"
        std = ["-std=c11"] if s.endswith(".c") else ["-std=c++17"]
        for kind, path in (("original", os.path.join(samples_dir, s)), ("rewritten", os.path.join(work, s))):
            obj = os.path.join(tmp, kind + "_" + s + ".o")
            exe = os.path.join(tmp, kind + "_" + s + ".exe")
            inc = ["-I", gen_dir] if kind == "rewritten" else []
            r = run([cc] + std + warn + inc + ["-c", path, "-o", obj])
            check("%s %s compiles with -Wall -Wextra -Werror" % (kind, s), r.returncode == 0, r.stderr)
            libs = [impl_lib] if kind == "rewritten" else []
            r = run(["mpicxx", obj] + libs + ["-o", exe])
            check("%s %s links" % (kind, s), r.returncode == 0, r.stderr)
            r = run(["mpirun", "-np", "4", exe])
            check("%s %s runs under mpirun -np 4" % (kind, s), r.returncode == 0, r.stdout + r.stderr)
            outputs[kind] = r.stdout
        print(outputs["original"], end="")
        lines = outputs["original"].splitlines()
        check("%s: the original prints one line per rank" % s, len(lines) == 4 and lines[0].startswith("rank 0:"),
              outputs["original"])
        check("%s: the rewritten program prints what the original prints" % s,
              len(lines) == 4 and outputs["rewritten"] == outputs["original"],
              "original:\n" + outputs["original"] + "rewritten:\n" + outputs["rewritten"])
        nm = run(["nm", "-u", os.path.join(tmp, "rewritten_" + s + ".o")]).stdout
        check("%s: the rewritten program calls generated functions" % s, "bcc_bine_allreduce_lat" in nm, nm)

    # 4. Errors.
    r = run([bine_cc, "rewrite", "--dry-run", "app.c", "--"] + mpi_flags, cwd=samples_dir)
    check("no function chosen: exit 2, named options", r.returncode == 2 and "--allreduce" in r.stderr, r.stderr)
    r = run([bine_cc, "rewrite", "--dry-run", "--bcast", "bcc-x", "app.c", "--"] + mpi_flags, cwd=samples_dir)
    check("a name that is not an identifier: exit 2", r.returncode == 2 and "not a C identifier" in r.stderr, r.stderr)
    bad = os.path.join(tmp, "bad.c")
    with open(bad, "w") as f:
        f.write("#include <mpi.h>\nint f(int* v) { return MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD) }\n")
    before = read(bad)
    r = run([bine_cc, "rewrite", "--bcast", "bcc_bine_bcast_lat", bad, "--"] + mpi_flags)
    check("a source that does not parse: exit 1, clang's error, nothing written",
          r.returncode == 1 and "bad.c:2:" in r.stderr and "nothing written" in r.stderr and read(bad) == before,
          r.stderr)
    clash = os.path.join(tmp, "clash")
    r = run([bine_cc, "rewrite", "-o", clash, "--bcast", "bcc_bine_bcast_lat", os.path.join(work, "app.c"),
             os.path.join(work2, "app.c"), "--"] + mpi_flags + ["-I", gen_dir])
    check("-o with two sources of one file name: exit 2, nothing written",
          r.returncode == 2 and "same file name" in r.stderr and not os.path.exists(clash), r.stderr)
    lone = os.path.join(tmp, "lone")
    os.makedirs(lone)
    shutil.copy(bine_cc, lone)
    r = run([os.path.join(lone, "bine-cc"), "rewrite", "--help"])
    check("bine-cc without bine-cc-rewrite: exit 2, says what to install",
          r.returncode == 2 and "bine-cc-rewrite" in r.stderr and "libclang-14-dev" in r.stderr, r.stderr)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
