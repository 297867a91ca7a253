#!/usr/bin/env bash
# The utofu target end to end (tests/CMakeLists.txt, mpi_harness_utofu): every schedule of
# dsl/lib compiled with --target utofu, every byte moved by uTofu puts through the
# emulation (runtime/utofu_emu), checked by tests/mpi/harness.cpp against Open MPI's own
# collectives; then with the emulation's stress mode (puts from different sources landing
# in adversarial order); the registrations of send buffers (per call, per persistent plan,
# freed with the call, the plan or the communicator); then translation validation: the data puts of every traced call,
# per (step tag, destination), against the verified Schedule (tests/utofu/validate_traces.py).
# CI runs p = 1, 2, 3 (traces at 3, 5, 6); BINE_UTOFU_E2E_RANKS="..." and
# BINE_UTOFU_TRACE_RANKS="..." run others.
# usage: run_e2e.sh HARNESS_UTOFU BINE_CC SOURCE_DIR
set -euo pipefail
bin=$1 bine_cc=$2 src=$3
libs=("$src"/dsl/lib/*.bine)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
for p in ${BINE_UTOFU_E2E_RANKS:-1 2 3}; do
  timeout 300 mpirun -np "$p" "$bin" check
done
echo -n "stress (BINE_UTOFU_EMU_STRESS=1) "
timeout 300 mpirun -np 4 -x BINE_UTOFU_EMU_STRESS=1 "$bin" check
echo -n "persistent forms (_init, start twice, free) "
timeout 300 mpirun -np 3 "$bin" check-persistent
echo -n "persistent forms in stress mode (direct landing: puts into the receivers' buffers) "
timeout 300 mpirun -np 4 -x BINE_UTOFU_EMU_STRESS=3 "$bin" check-persistent
echo "nonblocking forms (complete at their start over uTofu: kConcurrent is false) "
timeout 300 mpirun -np 3 "$bin" check-nonblocking
echo "send-buffer registrations: once per call, once per persistent plan, none left behind"
timeout 300 mpirun -np 4 "$bin" registrations
timeout 300 mpirun -np 3 -x BINE_UTOFU_EMU_STRESS=2 "$bin" registrations | tail -2
status=0
for p in ${BINE_UTOFU_TRACE_RANKS:-3 5 6}; do
  mkdir -p "$tmp/$p"
  timeout 300 mpirun -np "$p" "$bin" trace "$tmp/$p"
  python3 "$src/tests/utofu/validate_traces.py" "$bine_cc" "$tmp/$p" "$p" "${libs[@]}" || status=1
done
exit $status
