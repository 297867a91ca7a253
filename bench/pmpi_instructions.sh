#!/usr/bin/env bash
# The interposer's own work per call, in instructions (docs/pmpi.md, "Interception
# overhead"): 8 B MPI_Allreduce at p = 2 through libbine_pmpi.so (bench/pmpi_overhead.c's
# instruction mode), counted by callgrind on rank 0: the instructions inside the library's
# MPI_Allreduce (inclusive: the MPI queries it makes too) minus those inside the generated
# function it calls (bcc_bine_allreduce_lat, inclusive), (3000 calls - 1000 calls) / 2000.
# The generated call's waiting is in both and cancels, so the figure is deterministic.
# usage: bench/pmpi_instructions.sh [BINARY]   (default build/bench/bench_pmpi_overhead)
set -euo pipefail
bin=$(readlink -f "${1:-build/bench/bench_pmpi_overhead}")
args=(--oversubscribe); [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
own() {  # $1 calls: rank 0's inclusive MPI_Allreduce minus bcc_bine_allreduce_lat instructions
  rm -f "$tmp"/cg.*
  mpirun "${args[@]}" -np 2 valgrind -q --tool=callgrind --toggle-collect='measured_loop*' \
    --callgrind-out-file="$tmp/cg.%q{OMPI_COMM_WORLD_RANK}" "$bin" lib "$1" >/dev/null 2>&1
  # From /, so that callgrind_annotate prints whole paths and one entry per function and
  # object (inside the checkout it shortens some and splits them).
  (cd / && callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$tmp/cg.0" 2>/dev/null) | awk '
    /:MPI_Allreduce \[.*libbine_pmpi/ && !a { gsub(",", "", $1); a = $1 }
    /:bcc_bine_allreduce_lat \[.*libbine_pmpi/ && !b { gsub(",", "", $1); b = $1 }
    END { if (a && b) print a - b }'
}
a=$(own 1000); b=$(own 3000)
[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || { echo "pmpi_instructions: no measurement (did $bin run?)" >&2; exit 1; }
printf 'interposer instructions per 8 B MPI_Allreduce (p = 2, rank 0; libbine_pmpi.so minus the generated call): %s\n' \
  "$(( (b - a) / 2000 ))"
