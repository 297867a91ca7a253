#!/usr/bin/env bash
# ctest `fuzz` (docs/testing.md): builds tests/fuzz (fuzz_check, libFuzzer with ASan and
# UBSan) with clang++-14 into BUILD_DIR/fuzz, then fuzzes the front end and `check` from the
# seed corpus for SECONDS (default 60). New inputs go to a scratch directory, not into the
# committed corpus. Exit 77 (skipped) when clang++-14 or its fuzzer runtime is missing;
# non-zero when libFuzzer reports a crash, sanitizer error, timeout or memory blow-up (the
# reproducer is in BUILD_DIR/fuzz/artifacts/).
# Usage: run_fuzz.sh SOURCE_DIR BUILD_DIR [SECONDS]
set -euo pipefail
src=$1
bld=$2/fuzz
secs=${3:-60}
cxx=$(command -v clang++-14 || true)
rt=$(ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -1 || true)
if [ -z "$cxx" ] || [ -z "$rt" ]; then
  echo "fuzz: skipped: needs clang++-14 and its fuzzer runtime (Debian: clang-14 libclang-rt-14-dev)"
  exit 77
fi
cmake -S "$src/tests/fuzz" -B "$bld" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$bld" -j2 >/dev/null
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$bld/artifacts"
# -timeout: one input may take at most 10 s; -rss_limit_mb: 2 GiB; -max_len: 8 KiB inputs
# (every library file but rabenseifner_traff.bine, whose seed libFuzzer truncates).
"$bld/fuzz_check" "$scratch" "$src/tests/fuzz/corpus" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
  -max_len=8192 -artifact_prefix="$bld/artifacts/" -print_final_stats=1 2>&1 | tail -40
exit "${PIPESTATUS[0]}"
