#!/usr/bin/env bash
# Set up, then run every test: unit tests, golden diagnostics, verifier mutations, and the
# generated code under mpirun against Open MPI (with translation validation). The suites run
# $(nproc) at a time (BINE_TEST_JOBS overrides), the longest first (ctest's COST, from the
# times in tests/suite_times.txt; the suites that start mpirun alone, PROCESSORS 2), each
# under a timeout just above 3x its measured time;
# at the end, a table of each suite's wall time (docs/testing.md, "Suite times").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
jobs=${BINE_TEST_JOBS:-$(nproc)}
log=build/ctest.log
set +e
ctest --test-dir build --output-on-failure -j "$jobs" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "== suite times (ctest -j $jobs, $(nproc) cores)"
python3 scripts/suite_times.py "$log" tests/suite_times.txt
exit "$rc"
