#!/usr/bin/env bash
# The PMPI drop-in test (docs/pmpi.md): an unmodified MPI program (dropin_app.c) under
# mpirun at p = 1, 3, 4, 8 without and with LD_PRELOAD=libbine_pmpi.so: identical checksum
# lines, and the Finalize report (BINE_PMPI_REPORT=1) shows calls served by bine schedules
# (interception really happened). Then: a forced schedule (BINE_PMPI_ALLREDUCE) is named in
# the report, a bad forced name and a malformed table abort with the error text.
# usage: run_dropin.sh APP LIBBINE_PMPI
set -uo pipefail
app=$1 lib=$2
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
for p in 1 3 4 8; do
  run -np "$p" "$app" >"$tmp/ref$p" 2>&1 || fail "p=$p without LD_PRELOAD exited $?"
  run -np "$p" -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 "$app" >"$tmp/out$p" 2>"$tmp/err$p" ||
    fail "p=$p with LD_PRELOAD exited $?"
  if [ "$(grep -c '^checksum' "$tmp/ref$p")" != 5 ]; then fail "p=$p: reference output incomplete"; fi
  if ! diff <(grep '^checksum' "$tmp/ref$p") <(grep '^checksum' "$tmp/out$p"); then fail "p=$p: checksums differ"; fi
  # Interception: allreduce and bcast served by a bine schedule; the strided bcast too (the
  # generated code packs a non-contiguous type itself: no bcast fallback at all).
  grep -Eq '^  allreduce: [0-9]+ calls, [0-9]+ bytes; bine [1-9][0-9]* calls' "$tmp/err$p" || fail "p=$p: no bine allreduce in the report"
  grep -Eq '^  bcast: ([0-9]+) calls, ([0-9]+) bytes; bine \1 calls, \2 bytes' "$tmp/err$p" || fail "p=$p: a bcast (the strided one?) fell back"
  for c in reduce allgather gather scatter reduce_scatter_block alltoall scan exscan barrier; do
    grep -Eq "^  $c: .*bine [1-9][0-9]* calls" "$tmp/err$p" || fail "p=$p: no bine $c call in the report"
  done
  # MPI_Allgatherv (uneven counts, reversed displacements with gaps): served by an
  # irregular form, like every MPI_Allgather call: no allgather fallback at all.
  grep -Eq '^  allgather: ([0-9]+) calls, ([0-9]+) bytes; bine \1 calls, \2 bytes' "$tmp/err$p" ||
    fail "p=$p: an MPI_Allgather or MPI_Allgatherv call was not served by a schedule"
  # MPI_Reduce_scatter: the equal-count call and the unequal one (an irregular form,
  # <schedule>_v) both served, like every MPI_Reduce_scatter_block call: no fallback.
  grep -Eq '^  reduce_scatter_block: ([0-9]+) calls, ([0-9]+) bytes; bine \1 calls, \2 bytes' "$tmp/err$p" ||
    fail "p=$p: an MPI_Reduce_scatter (equal or unequal counts) was not served by a schedule"
  # MPI_Gatherv / MPI_Scatterv and every I collective (dropin_app.c's nonblocking part):
  # served like the blocking calls of their collective: no gather, scatter, scan, exscan,
  # alltoall or barrier fallback at all.
  for c in gather scatter scan exscan alltoall barrier reduce; do
    grep -Eq "^  $c: ([0-9]+) calls, ([0-9]+) bytes; bine \1 calls" "$tmp/err$p" ||
      fail "p=$p: an MPI_$c-family call (blocking, v or nonblocking) was not served by a schedule"
  done
  echo "p=$p: same checksums with and without LD_PRELOAD; report:"; cat "$tmp/err$p"
done
# A forced schedule (name without the bcc_ prefix) is the one used.
run -np 4 -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 -x BINE_PMPI_ALLREDUCE=ring_allreduce "$app" >"$tmp/f" 2>"$tmp/ferr" || fail "forced: exited $?"
diff <(grep '^checksum' "$tmp/ref4") <(grep '^checksum' "$tmp/f") || fail "forced: checksums differ"
grep -Eq '^  allreduce: .*\[forced bcc_ring_allreduce\]; bcc_ring_allreduce [1-9]' "$tmp/ferr" || fail "forced schedule not in the report"
echo "forced:"; grep allreduce "$tmp/ferr"
# A bad forced name: abort with the error text.
if run -np 2 -x LD_PRELOAD="$lib" -x BINE_PMPI_BCAST=no_such_bcast "$app" >"$tmp/b" 2>&1; then fail "bad name: exit 0"; fi
grep -q 'bine_pmpi: error: BINE_PMPI_BCAST=no_such_bcast: no bcast schedule of that name' "$tmp/b" || { cat "$tmp/b"; fail "bad name: no error text"; }
grep '^checksum' "$tmp/b" && fail "bad name: the program ran"
echo "bad name:"; grep 'bine_pmpi: error' "$tmp/b"
# A malformed table and a table naming an unknown schedule: abort with the error text.
echo '{"allreduce": [ {"schedule": "bine_allreduce_lat", }' >"$tmp/bad.json"
if run -np 2 -x LD_PRELOAD="$lib" -x BINE_PMPI_TABLE="$tmp/bad.json" "$app" >"$tmp/t" 2>&1; then fail "malformed table: exit 0"; fi
grep -q "bine_pmpi: error: selection table $tmp/bad.json is not valid JSON" "$tmp/t" || { cat "$tmp/t"; fail "malformed table: no error text"; }
echo "malformed table:"; grep 'bine_pmpi: error' "$tmp/t"
echo '{"bcast": [ {"p_max": 8, "schedule": "ring_allreduce"} ]}' >"$tmp/bad2.json"
if run -np 2 -x LD_PRELOAD="$lib" -x BINE_PMPI_TABLE="$tmp/bad2.json" "$app" >"$tmp/t2" 2>&1; then fail "wrong-collective table: exit 0"; fi
grep -q 'bcast rule 0: schedule "ring_allreduce" is not a bcast schedule' "$tmp/t2" || { cat "$tmp/t2"; fail "wrong-collective table: no error text"; }
# A valid table file: everything to MPI except allreduce at p >= 4 (rule "mpi" first).
echo '{"allreduce": [ {"p_max": 3, "schedule": "mpi"}, {"schedule": "recursive_doubling_allreduce"} ], "bcast": []}' >"$tmp/ok.json"
run -np 4 -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 -x BINE_PMPI_TABLE="$tmp/ok.json" "$app" >"$tmp/o" 2>"$tmp/oerr" || fail "table file: exited $?"
diff <(grep '^checksum' "$tmp/ref4") <(grep '^checksum' "$tmp/o") || fail "table file: checksums differ"
grep -Eq '^  allreduce: .*bcc_recursive_doubling_allreduce [1-9]' "$tmp/oerr" || fail "table file: schedule not used"
grep -Eq '^  bcast: .*bine 0 calls.*no table rule applies' "$tmp/oerr" || fail "table file: bcast not left to MPI"
echo "table file:"; cat "$tmp/oerr"
# A p bound above INT64_MAX means "no bound" (the parser every reader shares,
# bine/selection_table.hpp), as for compile --dispatch (this library used to refuse it as negative).
echo '{"allreduce": [ {"p_max": 18446744073709551615, "schedule": "recursive_doubling_allreduce"} ]}' >"$tmp/huge.json"
run -np 4 -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 -x BINE_PMPI_TABLE="$tmp/huge.json" "$app" >"$tmp/h" 2>"$tmp/herr" || fail "huge p_max: exited $?"
diff <(grep '^checksum' "$tmp/ref4") <(grep '^checksum' "$tmp/h") || fail "huge p_max: checksums differ"
grep -Eq '^  allreduce: .*bcc_recursive_doubling_allreduce [1-9]' "$tmp/herr" || { cat "$tmp/herr"; fail "huge p_max: the rule never matched"; }
[ $status = 0 ] && echo "pmpi_dropin: PASS" || echo "pmpi_dropin: FAIL"
exit $status
