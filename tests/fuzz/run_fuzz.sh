#!/usr/bin/env bash
# ctest `fuzz` (docs/testing.md): builds tests/fuzz (fuzz_check, libFuzzer with ASan and
# UBSan) with clang++-14 into BUILD_DIR/fuzz, then fuzzes the front end and `check` from the
# seed corpus for SECONDS (default 60), or, with `runs=N` instead (ctest: runs=20000), for
# N inputs from libFuzzer's seed BINE_FUZZ_SEED (default 20261202, printed): a bounded,
# repeatable CI run of about 35 s here (issue 44). New inputs go to a scratch directory, not
# into the committed corpus. Exit 77 (skipped) when clang++-14 or its fuzzer runtime is missing;
# non-zero when libFuzzer reports a crash, sanitizer error, timeout or memory blow-up (the
# reproducer is in BUILD_DIR/fuzz/artifacts/).
# Usage: run_fuzz.sh SOURCE_DIR BUILD_DIR [SECONDS | runs=N]
set -euo pipefail
src=$1
bld=$2/fuzz
limit=(-max_total_time="${3:-60}")
if [[ ${3:-} == runs=* ]]; then
  seed=${BINE_FUZZ_SEED:-20261202}
  limit=(-runs="${3#runs=}" -seed="$seed")
  echo "fuzz: ${3#runs=} inputs from seed $seed (BINE_FUZZ_SEED)"
fi
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
"$bld/fuzz_check" "$scratch" "$src/tests/fuzz/corpus" "${limit[@]}" -rss_limit_mb=2048 -timeout=10 \
  -max_len=8192 -artifact_prefix="$bld/artifacts/" -print_final_stats=1 2>&1 | tail -40
exit "${PIPESTATUS[0]}"
