#!/usr/bin/env bash
# The MPI conformance program (conformance.c) under mpirun for the given process counts.
# usage: run.sh CONFORMANCE P...   (issue 19's full set: run.sh BIN 1 2 3 4 5 6 7 8 9 16;
# CI runs a reduced set, tests/CMakeLists.txt)
set -euo pipefail
bin=$1
shift
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
status=0
for p in "$@"; do
  timeout 300 mpirun "${mpirun_args[@]}" -np "$p" "$bin" || status=1
done
exit $status
