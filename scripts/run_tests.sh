#!/usr/bin/env bash
# Set up, then run every test: unit tests, golden diagnostics, verifier mutations, and the
# generated code under mpirun against Open MPI (with translation validation).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir build --output-on-failure
