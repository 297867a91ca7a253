#!/usr/bin/env bash
# Deterministic output (docs/architecture.md#determinism): the same .bine input gives the
# same bytes, whatever the checkout's location and from run to run. Compiles dsl/lib twice
# from the source tree and once from a copy elsewhere, and prints schedule/check/cost
# output twice, comparing bytes each time.
# With BUILD_HEADER (the library header the build made), also checks that the build's
# header has the same bytes as the documented command run in the source tree.
# usage: determinism.sh BINE_CC SOURCE_DIR [BUILD_HEADER]
set -euo pipefail
bine_cc=$1 src=$2 build_header=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/elsewhere/dsl"
cp -r "$src/dsl/lib" "$tmp/elsewhere/dsl/lib"
status=0
same() {  # same NAME FILE_A FILE_B
  if cmp -s "$2" "$3"; then
    echo "PASS $1"
  else
    echo "FAIL $1: outputs differ"; diff "$2" "$3" | head -5; status=1
  fi
}
(cd "$src" && "$bine_cc" compile dsl/lib/*.bine --target mpi --verify-ranks 1..8 -o "$tmp/a.h")
(cd "$src" && "$bine_cc" compile dsl/lib/*.bine --target mpi --verify-ranks 1..8 -o "$tmp/b.h")
(cd "$tmp/elsewhere" && "$bine_cc" compile dsl/lib/*.bine --target mpi --verify-ranks 1..8 -o "$tmp/c.h")
same "compile: two runs" "$tmp/a.h" "$tmp/b.h"
same "compile: another checkout location" "$tmp/a.h" "$tmp/c.h"
# The cuda target's two files (header and .cu part), two runs and another location.
(cd "$src" && "$bine_cc" compile dsl/lib/*.bine --target cuda --verify-ranks 1..8 -o "$tmp/ga.h" 2>/dev/null)
(cd "$src" && "$bine_cc" compile dsl/lib/*.bine --target cuda --verify-ranks 1..8 -o "$tmp/gb.h" 2>/dev/null)
(cd "$tmp/elsewhere" && "$bine_cc" compile dsl/lib/*.bine --target cuda --verify-ranks 1..8 -o "$tmp/gc.h" 2>/dev/null)
same "compile --target cuda: two runs (header)" "$tmp/ga.h" "$tmp/gb.h"
same "compile --target cuda: two runs (.cu)" "$tmp/ga.h.cu" "$tmp/gb.h.cu"
same "compile --target cuda: another checkout location (.cu)" "$tmp/ga.h.cu" "$tmp/gc.h.cu"
if [ -n "$build_header" ]; then
  (cd "$src" && "$bine_cc" compile dsl/lib/*.bine --target mpi --verify-ranks 1..32 -o "$tmp/d.h")
  same "compile: the build's header" "$tmp/d.h" "$build_header"
fi
grep -q "source: dsl/lib/" "$tmp/a.h" || { echo "FAIL compile: no relative 'source:' comment"; status=1; }
for i in 1 2; do
  (cd "$src" && "$bine_cc" schedule dsl/lib/*.bine --schedule rt_allreduce -p 12 --json) > "$tmp/s$i.json"
  (cd "$src" && "$bine_cc" check dsl/lib/*.bine --ranks 1..12) > "$tmp/c$i.txt" 2>&1
  (cd "$src" && "$bine_cc" cost dsl/lib/*.bine --schedule bine_allreduce_rsag -p 12 --bytes 1048576 \
      --alpha 2e-6 --beta 1e-10 --gamma 1e-10 --json) > "$tmp/k$i.json"
done
same "schedule --json: two runs" "$tmp/s1.json" "$tmp/s2.json"
same "check: two runs" "$tmp/c1.txt" "$tmp/c2.txt"
same "cost --json: two runs" "$tmp/k1.json" "$tmp/k2.json"
# Instances built and checked on several threads (docs/verifier.md, "Scale": rank ranges
# side by side, the structure beside the data flow) give the bytes of one thread: the
# library, its JSON report and the mutations' failures (instantiation errors on ranks of
# later ranges, deadlocks, double counting, ...), with every instance from p = 2 on run
# on three threads.
for n in 1 3; do
  (cd "$src" && BINE_PARALLEL_MIN_P=2 "$bine_cc" check dsl/lib/*.bine --ranks 1..20 --threads $n) > "$tmp/t$n.txt" 2>&1 || true
  (cd "$src" && BINE_PARALLEL_MIN_P=2 "$bine_cc" check dsl/lib/*.bine --ranks 1..12 --threads $n --json) > "$tmp/tj$n.json" 2>&1 || true
  for f in "$src"/tests/mutations/*.bine; do
    (cd "$src" && BINE_PARALLEL_MIN_P=2 "$bine_cc" check "$f" --ranks 1..12 --threads $n) 2>&1 || true
  done > "$tmp/tm$n.txt"
done
same "check: three threads per instance, library" "$tmp/t1.txt" "$tmp/t3.txt"
same "check --json: three threads per instance, library" "$tmp/tj1.json" "$tmp/tj3.json"
same "check: three threads per instance, mutations" "$tmp/tm1.txt" "$tmp/tm3.txt"
grep -q "error:" "$tmp/tm1.txt" || { echo "FAIL mutations report no error (the comparison above would be empty)"; status=1; }
exit $status
