#!/usr/bin/env bash
# How long `bine-cc check` takes on the whole schedule library, and its peak memory, for
# p = 1..P_MAX (default 1024). Roots: every root up to p = 64, then 0, 1, p/2, p-1.
# usage: bench/check_scaling.sh [BINE_CC] [P_MAX]
set -euo pipefail
cd "$(dirname "$0")/.."
bine_cc=${1:-build/bine-cc}
pmax=${2:-1024}
for range in 1..64 1..256 "1..$pmax"; do
  out=$( { /usr/bin/time -f "%e s wall, %M KiB peak RSS" "$bine_cc" check dsl/lib/*.bine --ranks "$range" --quiet; } 2>&1 )
  echo "check dsl/lib/*.bine --ranks $range: $(echo "$out" | tail -1)"
done
for f in dsl/lib/*.bine; do
  for s in $(grep -oP '^schedule \K\w+' "$f"); do
    t=$( { /usr/bin/time -f "%e s, %M KiB" "$bine_cc" check "$f" --schedule "$s" --ranks "1..$pmax" --quiet; } 2>&1 | tail -1)
    echo "  $s p=1..$pmax: $t"
  done
done
