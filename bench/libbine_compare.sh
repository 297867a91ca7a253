#!/usr/bin/env bash
# Generated collectives vs libbine (the Bine authors' hand-written C) vs the MPI library's
# own collectives, side by side (bench/libbine_compare.cpp, docs/performance.md). libbine is
# built here from a checkout of https://github.com/HLC-Lab/pico (its include/ and libbine/;
# nothing of it is committed to bine-cc): PICO_DIR=<checkout>, else it is cloned into
# build/pico (network needed). The generated library comes from build/ (bine_lib_impl).
# usage: bench/libbine_compare.sh [PROCESS_COUNTS] (default "2 4")   REPS=N (default 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
procs=${1:-"2 4"}
reps=${REPS:-1000}
pico=${PICO_DIR:-build/pico}
if [ ! -d "$pico/libbine" ]; then
  git clone -q --depth 1 https://github.com/HLC-Lab/pico "$pico"
fi
out=build/libbine
mkdir -p "$out"
for f in "$pico"/libbine/*.c; do
  mpicc -O3 -I"$pico/include" -I"$pico/libbine" -c "$f" -o "$out/$(basename "${f%.c}").o"
done
rm -f "$out/libbine.a"
ar rcs "$out/libbine.a" "$out"/*.o
cmake --build build -j "$(nproc)" --target bine_lib_impl >/dev/null
mpicxx -DOMPI_SKIP_MPICXX -std=c++17 -O2 -Ibuild/generated -Iruntime/include bench/libbine_compare.cpp \
  build/libbine_lib_impl.a "$out/libbine.a" -lm -o "$out/bench_libbine_compare"
args=(--oversubscribe)
[ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
echo "# bench/libbine_compare.sh on $(nproc) cores, $(mpirun --version 2>/dev/null | head -1), pico $(git -C "$pico" rev-parse --short HEAD 2>/dev/null || echo '(not a git checkout)')"
status=0
for p in $procs; do
  mpirun "${args[@]}" -np "$p" "$out/bench_libbine_compare" "$reps" || status=1
done
exit $status
