#!/bin/sh
# device_rounds: the messages of every schedule's device plans against `bine-cc schedule
# --json`, at p = 5, 8, 13 and 16 with counts that do not divide evenly (validate_rounds.py).
# usage: run_rounds.sh DEVICE_HOST BINE_CC SOURCE_DIR
set -eu
host=$1 bine_cc=$2 src=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for p in 5 8 13 16; do
  mkdir -p "$dir/$p"
  "$host" trace "$dir/$p" "$p" 37
  python3 "$src/tests/device/validate_rounds.py" "$bine_cc" "$dir/$p" "$src"/dsl/lib/*.bine
done
