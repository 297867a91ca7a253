#!/usr/bin/env bash
# The MPI end-to-end harness (check, check-thrice, flat, check-persistent, check-nonblocking) and the conformance
# program, built with AddressSanitizer + UBSan, under mpirun at a reduced set of p.
# Any sanitizer report aborts the process (halt_on_error, -fno-sanitize-recover), so a
# clean run is exit status 0.
# usage: run_sanitized.sh HARNESS_ASAN CONFORMANCE_ASAN
set -euo pipefail
harness=$1 conformance=$2
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
for p in 1 2 5; do
  echo -n "asan+ubsan "
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$harness" check || status=1
done
for p in 3; do
  echo -n "asan+ubsan thrice (replayed, then flat) "
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$harness" check-thrice || status=1
  echo -n "asan+ubsan "
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$harness" flat || status=1
  echo -n "asan+ubsan persistent "
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$harness" check-persistent || status=1
  echo "asan+ubsan nonblocking "
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$harness" check-nonblocking || status=1
done
for p in 1 3; do
  echo -n "asan+ubsan "
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$conformance" || status=1
done
exit $status
