#!/usr/bin/env bash
# The drop-in keeps what MPI guarantees (issue 45, docs/pmpi.md "What MPI guarantees"):
# defects_app.c (plain MPI: freed operator and datatypes in flight, MPI_Exscan's rank 0,
# different type maps of one signature, the same float bits on every rank, a non-commutative
# operator at every root) at p = 2..8 without and with LD_PRELOAD=libbine_pmpi.so. With the
# library every call must be served by a generated schedule (report: no fallback at all, so
# the checks ran on generated code). Then the selection's own switches, each of which must
# change what the program sees:
# - BINE_PMPI_SAME_BRACKETING=0 with bine_allreduce_lat forced (not proved same-bracketing)
#   and a table rule "any_bracketing": true for it: ranks end with other bits at p = 8 (the
#   bits check can fail, and the proofs are what keep it passing);
#   (every other check must pass there: the forced schedule serves the commutative calls
#   and not the non-commutative ones, which the reuse check tells apart on reused handles);
# - bine_allreduce_lat forced with the default: it does not serve float calls; one warning
#   on stderr, and the report's reasons name the missing proofs.
# usage: run_defects.sh APP LIBBINE_PMPI
set -uo pipefail
app=$1 lib=$2
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
for p in 2 3 4 5 6 7 8; do
  run -np "$p" "$app" >"$tmp/ref$p" 2>&1 || { cat "$tmp/ref$p"; fail "p=$p without LD_PRELOAD exited $?"; }
  run -np "$p" -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 "$app" >"$tmp/out$p" 2>"$tmp/err$p" ||
    { cat "$tmp/out$p" "$tmp/err$p"; fail "p=$p with LD_PRELOAD exited $?"; }
  grep -q "^defects_app p=$p: pass" "$tmp/out$p" || fail "p=$p: no pass line"
  grep -q '^bine_pmpi report' "$tmp/err$p" || fail "p=$p: no report"
  if grep -E 'fallback [1-9]' "$tmp/err$p"; then fail "p=$p: calls fell back to MPI (above)"; fi
  echo "p=$p: pass without and with LD_PRELOAD, every call on a generated schedule"
done
grep -E '^  (reduce|allreduce):' "$tmp/err8"
run -np 8 -x LD_PRELOAD="$lib" -x BINE_PMPI_SAME_BRACKETING=0 -x BINE_PMPI_ALLREDUCE=bine_allreduce_lat \
  "$app" --bits-may-differ >"$tmp/sb" 2>&1 || { cat "$tmp/sb"; fail "BINE_PMPI_SAME_BRACKETING=0: exited $?"; }
grep -q '^bits: differ' "$tmp/sb" || { cat "$tmp/sb"; fail "BINE_PMPI_SAME_BRACKETING=0, bine_allreduce_lat forced: the bits agreed"; }
# Everything else must still pass there: with a commutative user operator's decision (the
# forced schedule) kept for the non-commutative one made on the reused handles, the reuse
# check fails (measured: MPI_ERR_OP at p = 8).
grep -q '^defects_app p=8: pass' "$tmp/sb" || { cat "$tmp/sb"; fail "BINE_PMPI_SAME_BRACKETING=0, bine_allreduce_lat forced: a check failed"; }
echo '{"allreduce": [ {"schedule": "bine_allreduce_lat", "any_bracketing": true}, {"schedule": "rt_allreduce"} ]}' >"$tmp/any.json"
run -np 8 -x LD_PRELOAD="$lib" -x BINE_PMPI_TABLE="$tmp/any.json" "$app" --bits-may-differ >"$tmp/any" 2>&1 ||
  { cat "$tmp/any"; fail "any_bracketing table: exited $?"; }
grep -q '^bits: differ' "$tmp/any" || { cat "$tmp/any"; fail "\"any_bracketing\": true: the bits agreed"; }
echo "opt-outs: ranks end with other bits at p = 8 (BINE_PMPI_SAME_BRACKETING=0; \"any_bracketing\": true)"
run -np 8 -x LD_PRELOAD="$lib" -x BINE_PMPI_REPORT=1 -x BINE_PMPI_ALLREDUCE=bine_allreduce_lat "$app" \
  >"$tmp/f" 2>"$tmp/ferr" || { cat "$tmp/f" "$tmp/ferr"; fail "forced: exited $?"; }
grep -q '^defects_app p=8: pass' "$tmp/f" || fail "forced: no pass line"
n=$(grep -c 'bine_pmpi: BINE_PMPI_ALLREDUCE=bcc_bine_allreduce_lat does not serve an MPI allreduce call at p = 8' "$tmp/ferr")
[ "$n" = 1 ] || { cat "$tmp/ferr"; fail "forced: $n warnings, want 1"; }
grep -Eq '^  allreduce: .*forced schedule not proved same-bracketing, operator needs it: [1-9]' "$tmp/ferr" ||
  { cat "$tmp/ferr"; fail "forced: the report does not say why"; }
grep -E 'bine_pmpi: BINE|^  allreduce' "$tmp/ferr"
[ $status = 0 ] && echo "pmpi_defects: PASS" || echo "pmpi_defects: FAIL"
exit $status
