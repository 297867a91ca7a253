#!/usr/bin/env bash
# How long `bine-cc check` takes on the schedule library, and its peak memory, for
# p = 1..P_MAX (default 1024). Roots: every root up to p = 64, then 0, 1, p/2, p-1.
# Prints the whole library for 1..64 and 1..256, then every schedule alone for 1..P_MAX
# (each under a time limit, LIMIT seconds, default 1800; "timeout" when it ran out).
# COMPARE=1 also runs each schedule with --no-symmetry (every root and every rank built
# and run: no root or translation symmetry, docs/verifier.md) on the next line, so the
# symmetries' gain is measured side by side in one run.
# Needs GNU time (Debian package `time`).
# usage: [COMPARE=1] bench/check_scaling.sh [BINE_CC] [P_MAX] [LIMIT]
set -uo pipefail
cd "$(dirname "$0")/.."
bine_cc=${1:-build/bine-cc}
pmax=${2:-1024}
limit=${3:-1800}
measure() {  # label, args...
  local label=$1; shift
  local out
  out=$( { timeout "$limit" /usr/bin/time -f "%e s wall, %M KiB peak RSS" "$bine_cc" check "$@" --quiet; } 2>&1 )
  local rc=$?
  if [ $rc = 124 ]; then echo "$label: timeout after ${limit} s"; else echo "$label: $(echo "$out" | tail -1)"; fi
}
for range in 1..64 1..256; do
  measure "library ($(ls dsl/lib/*.bine | wc -l) files) p=$range" dsl/lib/*.bine --ranks "$range"
done
for f in dsl/lib/*.bine; do
  for s in $(grep -oP '^schedule \K\w+' "$f"); do
    measure "  $s p=1..$pmax" dsl/lib/*.bine --schedule "$s" --ranks "1..$pmax"
    [ "${COMPARE:-0}" = 1 ] && measure "  $s p=1..$pmax --no-symmetry" dsl/lib/*.bine --schedule "$s" --ranks "1..$pmax" --no-symmetry
  done
done
