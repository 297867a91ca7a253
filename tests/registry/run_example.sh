#!/usr/bin/env bash
# The README's example (examples/allreduce_bcast.c) at process counts where some schedules
# do not apply: it must skip those with the header's reason and match Open MPI on the rest.
# The main job (scripts/run_main.sh) runs it at p = 8; this covers p = 1, 3, 6 and 9.
# usage: run_example.sh EXAMPLE [P...]
set -euo pipefail
example=$1; shift
ps=("$@"); [ ${#ps[@]} -gt 0 ] || ps=(1 3 6 9)
args=(--oversubscribe); [ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
status=0
for p in "${ps[@]}"; do
  out=$(timeout 120 mpirun "${args[@]}" -np "$p" "$example" 2>&1) || { echo "FAIL p=$p (exit $?)"; echo "$out"; status=1; continue; }
  if ! grep -q "all generated collectives match Open MPI on every rank" <<<"$out"; then
    echo "FAIL p=$p: no success line"; echo "$out"; status=1; continue
  fi
  echo "PASS p=$p: $(grep -c 'does not apply' <<<"$out" || true) schedules do not apply"
  grep "does not apply" <<<"$out" | sed 's/^/    /' || true
done
exit $status
