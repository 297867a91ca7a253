#!/usr/bin/env bash
# The PMPI thread test (docs/pmpi.md#threads): threads_app.cpp, T threads each running
# MPI_Allreduce / MPI_Bcast / MPI_Allgather on its own communicator under
# MPI_THREAD_MULTIPLE, at p = 2 and 4, without and with LD_PRELOAD=libbine_pmpi.so. Both
# runs check every result against the locally computed value; with the library, the
# Finalize report (BINE_PMPI_REPORT=1) must count exactly the calls the program made (no
# update lost between threads) and show all of them served by bine schedules, none by the
# fallback. Exit 77 (CTest: skipped) when MPI does not provide MPI_THREAD_MULTIPLE.
# usage: run_threads.sh APP LIBBINE_PMPI [THREADS [ITERATIONS]]
set -uo pipefail
app=$1 lib=$2 threads=${3:-4} iters=${4:-200}
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
for p in 2 4; do
  run -np "$p" "$app" "$threads" "$iters" >"$tmp/ref$p" 2>&1 || fail "p=$p without LD_PRELOAD exited $?"
  if grep -q '^SKIP' "$tmp/ref$p"; then cat "$tmp/ref$p"; echo "pmpi_threads: SKIP"; exit 77; fi
  grep -q 'threads: PASS p = ' "$tmp/ref$p" || { cat "$tmp/ref$p"; fail "p=$p without LD_PRELOAD: results wrong"; }
  run -np "$p" -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 "$app" "$threads" "$iters" >"$tmp/out$p" 2>"$tmp/err$p" ||
    fail "p=$p with LD_PRELOAD exited $?"
  grep -q 'threads: PASS p = ' "$tmp/out$p" || { cat "$tmp/out$p"; fail "p=$p with LD_PRELOAD: results wrong"; }
  # The report counts every call (exactly), all served by bine schedules.
  read -r _ _ na _ nb _ ng < <(grep '^expected' "$tmp/out$p")
  for c in "allreduce $na" "bcast $nb" "allgather $ng"; do
    set -- $c
    grep -Eq "^  $1: $2 calls, [0-9]+ bytes; bine $2 calls, .*; fallback 0\$" "$tmp/err$p" ||
      fail "p=$p: report line of $1 is not '$2 calls; bine $2 calls; fallback 0'"
  done
  echo "p=$p: $(grep '^threads' "$tmp/ref$p") (without LD_PRELOAD)"
  echo "p=$p: $(grep '^threads' "$tmp/out$p") (with LD_PRELOAD); report:"
  cat "$tmp/err$p"
done
[ $status = 0 ] && echo "pmpi_threads: PASS" || echo "pmpi_threads: FAIL"
exit $status
