#!/usr/bin/env bash
# The Fortran drop-in test (docs/pmpi.md, "Fortran"): an unmodified `use mpi` program
# (dropin_app.f90) under mpirun at p = 1, 3, 4 without and with LD_PRELOAD=libbine_pmpi.so:
# identical checksum lines, and the report shows the Fortran calls served by bine schedules
# (MPI_IN_PLACE from Fortran included: the second allreduce).
# usage: run_fortran.sh APP LIBBINE_PMPI
set -uo pipefail
app=$1 lib=$2
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
for p in 1 3 4; do
  run -np "$p" "$app" >"$tmp/ref$p" 2>&1 || fail "p=$p without LD_PRELOAD exited $?"
  run -np "$p" -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 "$app" >"$tmp/out$p" 2>"$tmp/err$p" ||
    fail "p=$p with LD_PRELOAD exited $?"
  if [ "$(grep -c '^checksum' "$tmp/ref$p")" != 2 ]; then fail "p=$p: reference output incomplete"; cat "$tmp/ref$p"; fi
  diff <(grep '^checksum' "$tmp/ref$p") <(grep '^checksum' "$tmp/out$p") || fail "p=$p: checksums differ"
  grep -Eq '^  allreduce: 2 calls, [0-9]+ bytes; bine 2 calls' "$tmp/err$p" || fail "p=$p: the Fortran allreduces were not served"
  for c in bcast reduce allgather alltoall gather scan reduce_scatter_block barrier; do
    grep -Eq "^  $c: [1-9][0-9]* calls.*bine [1-9][0-9]* calls" "$tmp/err$p" || fail "p=$p: no bine $c call from Fortran"
  done
  echo "p=$p: same checksums with and without LD_PRELOAD; report:"; cat "$tmp/err$p"
done
[ $status = 0 ] && echo "pmpi_fortran: PASS" || echo "pmpi_fortran: FAIL"
exit $status
