#!/usr/bin/env bash
# The main job: set up, verify the schedule library for p = 1..64 (every root), compile it to
# a header, build the example MPI application and run it on 8 ranks next to Open MPI.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the main job runs, bine-cc first (its first verification line comes before the
# rest is built); the test programs are the test command's (scripts/run_tests.sh).
./scripts/setup.sh bine-cc
echo "== bine-cc check dsl/lib/*.bine --ranks 1..64"
./build/bine-cc check dsl/lib/*.bine --ranks 1..64
echo "== bine-cc compile dsl/lib/*.bine --target mpi -o build/generated/bine_lib.h"
# Written beside the build's copy and copied over it only when the bytes differ, so the
# test run that follows does not rebuild every program that includes an unchanged header.
./build/bine-cc compile dsl/lib/*.bine \
  --target mpi --verify-ranks 1..32 -o build/generated/bine_lib.main.h
cmp -s build/generated/bine_lib.main.h build/generated/bine_lib.h ||
  cp build/generated/bine_lib.main.h build/generated/bine_lib.h
cmake --build build -j "$(nproc)" --target allreduce_bcast bine_pmpi pmpi_dropin_app >/dev/null
echo "== mpirun -np 8 build/allreduce_bcast"
args=(--oversubscribe); [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
mpirun "${args[@]}" -np 8 build/allreduce_bcast
# The drop-in: an unmodified MPI program (a CG-like loop plus every intercepted collective)
# with and without LD_PRELOAD=libbine_pmpi.so; the checksums must agree, and the Finalize
# report shows which calls bine schedules served (docs/pmpi.md).
echo "== mpirun -np 8 build/pmpi/pmpi_dropin_app (plain MPI, then LD_PRELOAD=build/pmpi/libbine_pmpi.so)"
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun "${args[@]}" -np 8 build/pmpi/pmpi_dropin_app >build/dropin_plain.txt
mpirun "${args[@]}" -np 8 -x LD_PRELOAD="$PWD/build/pmpi/libbine_pmpi.so" -x BINE_PMPI_REPORT=1 \
  build/pmpi/pmpi_dropin_app >build/dropin_bine.txt
grep '^checksum' build/dropin_bine.txt
if ! diff <(grep '^checksum' build/dropin_plain.txt) <(grep '^checksum' build/dropin_bine.txt); then
  echo "the drop-in changed the program's results" >&2
  exit 1
fi
echo "same checksums with and without the drop-in"
