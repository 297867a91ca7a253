#!/usr/bin/env bash
# Time and peak memory of `bine-cc check` on ONE instance of a schedule as p grows
# (p = 2^LO .. 2^HI; a rooted schedule's other roots follow from root 0 by the root
# symmetry, docs/verifier.md; --all-roots-up-to 0 would keep a schedule without it to the
# sampled roots 0, 1, p/2, p-1), and the growth exponent k of time ~ p^k between the first
# and the last p measured. An instance has about p log2 p operations, so k near 1 is the
# goal (issue 18: p = 2^20 in < 10 s and < 2 GB). Each run is limited to LIMIT seconds
# and MEM_KB of memory (ulimit -v); later p of a schedule are skipped once one fails.
# Wall time is printed with CPU time (user + system): on a loaded machine wall time
# overstates the cost; the exponent uses CPU time.
# From p = 256 on an instance is built and checked on the machine's hardware threads (at
# most 8; docs/verifier.md, "Two threads per instance"); THREADS=N runs it on N (THREADS=1:
# one thread), so both can be printed side by side.
# Needs GNU time (Debian package `time`).
# usage: [THREADS=N] bench/instance_scaling.sh [BINE_CC] [LO] [HI] [LIMIT] [MEM_KB]
set -uo pipefail
cd "$(dirname "$0")/.."
bine_cc=${1:-build/bine-cc}
lo=${2:-10}
hi=${3:-20}
limit=${4:-600}
mem_kb=${5:-8388608}
for s in bine_allreduce_lat bine_bcast_lat; do
  first_p= first_t= last_p= last_t=
  for ((k = lo; k <= hi; k += 2)); do
    p=$((1 << k))
    out=$( { ulimit -v "$mem_kb"; timeout "$limit" /usr/bin/time -f "TIME %e %U %S %M" "$bine_cc" check dsl/lib/*.bine \
             --schedule "$s" --ranks "$p" --all-roots-up-to 0 --quiet ${THREADS:+--threads "$THREADS"}; } 2>&1 )
    rc=$?
    line=$(echo "$out" | grep '^TIME' | tail -1)
    if [ $rc != 0 ] || [ -z "$line" ]; then
      echo "$s p=2^$k: failed or over the limits (exit $rc, ${limit} s, $((mem_kb / 1024)) MiB)"
      break
    fi
    read -r _ wall user sys rss <<< "$line"
    cpu=$(python3 -c "print(round($user + $sys, 2))")
    echo "$s p=2^$k: $wall s wall, $cpu s CPU (user + system), $((rss / 1024)) MiB peak RSS"
    if [ -z "$first_p" ]; then first_p=$p first_t=$cpu; fi
    last_p=$p last_t=$cpu
  done
  if [ -n "$first_p" ] && [ "$last_p" != "$first_p" ]; then
    python3 -c "import math; print('$s: growth exponent of CPU time from p=$first_p to p=$last_p: %.2f' % (math.log(max($last_t, 0.01) / max($first_t, 0.01)) / math.log($last_p / $first_p)))"
  fi
done
