#!/bin/sh
# The pipeline_oracle test: the round pipeline's instances against the reference
# instantiation, byte for byte (pipeline_vs_reference.cpp): p = 1..128 (every root up to
# 32) with the default layout (one region), then p = 1..24 (every root up to 8) under
# region layouts, where the locality-aware Bruck allgather and the phases on sub-groups
# (dsl/lib/hierarchical.bine) take other shapes.
# usage: run.sh PIPELINE_VS_REFERENCE FILE.bine...
set -e
bin=$1
shift
"$bin" 128 32 "$@"
for spec in 2 4 3 rr:2 rr:3; do
  "$bin" --regions "$spec" 24 8 "$@"
done
