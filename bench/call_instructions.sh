#!/usr/bin/env bash
# Instructions per 8-byte call (plain, and persistent start where the pair has one) in the program's own code (the generated runtime, or libbine's
# C; the MPI library's shared objects and libc excluded), p = 2, measured with callgrind:
# (instructions for 3000 calls - for 1000 calls) / 2000, rank 0, which is deterministic.
# usage: bench/call_instructions.sh BINARY [NAMES...]   BINARY: built from
#   bench/call_instructions.cpp with the generated header and libbine (see docs/performance.md)
set -euo pipefail
bin=$1; shift
names=${*:-"recursive_doubling_allreduce bine_allreduce_lat bine_alltoall recursive_doubling_allgather"}
args=(--oversubscribe); [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
export OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
own() {  # $1 impl, $2 name, $3 calls: rank 0's instructions in the binary's own object
  rm -f "$tmp"/cg.*
  mpirun "${args[@]}" -np 2 valgrind -q --tool=callgrind --toggle-collect='measured_loop*' \
    --callgrind-out-file="$tmp/cg.%q{OMPI_COMM_WORLD_RANK}" "$bin" "$1" "$2" "$3" >/dev/null 2>&1 || { echo -; return; }
  callgrind_annotate --inclusive=no --threshold=100 "$tmp/cg.0" 2>/dev/null |
    awk -v obj="[$(readlink -f "$bin")]" '$NF == obj { gsub(",", "", $1); s += $1 } END { print s + 0 }'
}
printf '%-32s %10s %10s %10s\n' schedule generated start libbine
for n in $names; do
  row=()
  for impl in gen start lib; do  # start: the persistent form's bcc_plan_start (allreduce pairs)
    a=$(own $impl "$n" 1000); b=$(own $impl "$n" 3000)
    if [ "$a" = - ] || [ "$b" = - ]; then row+=(-); else row+=("$(( (b - a) / 2000 ))"); fi
  done
  printf '%-32s %10s %10s %10s\n' "$n" "${row[0]}" "${row[1]}" "${row[2]}"
done
