#!/usr/bin/env bash
# The utofu target end to end (tests/CMakeLists.txt, mpi_harness_utofu): every schedule of
# dsl/lib compiled with --target utofu, every byte moved by uTofu puts through the
# emulation (runtime/utofu_emu), checked by tests/mpi/harness.cpp against Open MPI's own
# collectives; then with the emulation's stress mode (puts from different sources landing
# in adversarial order). CI runs p = 1, 2, 3; BINE_UTOFU_E2E_RANKS="..." runs others.
set -euo pipefail
bin=$1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
for p in ${BINE_UTOFU_E2E_RANKS:-1 2 3}; do
  timeout 300 mpirun -np "$p" "$bin" check
done
echo -n "stress (BINE_UTOFU_EMU_STRESS=1) "
timeout 300 mpirun -np 4 -x BINE_UTOFU_EMU_STRESS=1 "$bin" check
echo -n "persistent forms (_init, start twice, free) "
timeout 300 mpirun -np 3 "$bin" check-persistent
echo "nonblocking forms (complete at their start over uTofu: kConcurrent is false) "
timeout 300 mpirun -np 3 "$bin" check-nonblocking
