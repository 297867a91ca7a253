#!/usr/bin/env bash
# The main job: set up, verify the schedule library for p = 1..64 (every root), compile it to
# a header, build the example MPI application and run it on 8 ranks next to Open MPI.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "== bine-cc check dsl/lib/*.bine --ranks 1..64"
./build/bine-cc check dsl/lib/*.bine --ranks 1..64
echo "== bine-cc compile dsl/lib/*.bine --target mpi -o build/generated/bine_lib.h"
./build/bine-cc compile dsl/lib/*.bine \
  --target mpi --verify-ranks 1..32 -o build/generated/bine_lib.h
cmake --build build --target allreduce_bcast >/dev/null
echo "== mpirun -np 8 build/allreduce_bcast"
args=(--oversubscribe); [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
mpirun "${args[@]}" -np 8 build/allreduce_bcast
