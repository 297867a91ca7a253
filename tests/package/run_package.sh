#!/usr/bin/env bash
# The CMake package as a user meets it (docs/cmake.md): install the build into a fresh
# prefix, build examples/cmake_consumer against it with find_package(bine_cc) and
# bine_add_schedules(), run its tests (the re-check and the program at p = 4 against the MPI
# library's own collectives), then add a schedule that fails verification and check that the
# build stops with its counterexample and leaves no header.
# Usage: run_package.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in bin/bine-cc include/bine/mpi_runtime.hpp share/bine-cc/lib/bine_bcast.bine lib/cmake/bine_cc/bine_ccConfig.cmake; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
[ -n "$(find "$tmp/prefix" -name libbine_pmpi.so)" ] || { echo "FAIL: libbine_pmpi.so not installed"; exit 1; }

cmake -S "$src/examples/cmake_consumer" -B "$tmp/ok" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
if ! cmake --build "$tmp/ok" >"$tmp/ok.log" 2>&1; then
  cat "$tmp/ok.log"
  echo "FAIL: the consumer project does not build against the installed package"
  exit 1
fi
grep -q "bine_add_schedules\|bine-cc: verifying" "$tmp/ok.log" || true
ctest --test-dir "$tmp/ok" --output-on-failure -V >"$tmp/ctest.log" 2>&1 || { cat "$tmp/ctest.log"; echo "FAIL: consumer tests"; exit 1; }
grep -q "bine_check_consumer .*Passed" "$tmp/ctest.log" || { cat "$tmp/ctest.log"; echo "FAIL: no re-check test"; exit 1; }
grep -q "consumer_p4 .*Passed" "$tmp/ctest.log" || { cat "$tmp/ctest.log"; echo "FAIL: no run test"; exit 1; }
grep -q "consumer: dispatch at p = 4: allreduce 4 B -> my_rd_allreduce, 52 B -> my_rd_allreduce, 80 B -> mpi; bcast -> my_bine_bcast_lat" "$tmp/ctest.log" ||
  { cat "$tmp/ctest.log"; echo "FAIL: the dispatchers of table.json did not choose as the table says"; exit 1; }
echo "PASS installed package: consumer built (with DISPATCH table.json), re-checked and run at p = 4"

cmake -S "$src/examples/cmake_consumer" -B "$tmp/broken" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DBROKEN=ON >/dev/null
if cmake --build "$tmp/broken" >"$tmp/broken.log" 2>&1; then
  echo "FAIL: a schedule that fails verification did not stop the build"
  exit 1
fi
if ! grep -Eq "broken\.bine:[0-9]+:[0-9]+: error: p=2: rank [01], round 1, block 0: double-counted" "$tmp/broken.log"; then
  cat "$tmp/broken.log"
  echo "FAIL: the build log lacks the counterexample"
  exit 1
fi
[ ! -e "$tmp/broken/bine_generated/consumer/consumer_bine.h" ] || { echo "FAIL: a header was written"; exit 1; }
echo "PASS verification failure stops the build with its counterexample, no header written"
