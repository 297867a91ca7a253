#!/usr/bin/env bash
# The uTofu emulation's unit test (tests/utofu/emu_test.cpp) under mpirun, in the
# configurations that exercise its limits: BUSY with a 4-deep TOQ, puts chunked through a
# 4 KiB wire, the stress mode (cross-source reordering) on 16 processes, p = 1.
set -euo pipefail
bin=$1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
run() { timeout 60 mpirun "$@"; }
run -np 4 "$bin"
run -np 1 "$bin"
run -np 5 -x BINE_UTOFU_EMU_TOQ_DEPTH=4 "$bin" 4
run -np 6 -x BINE_UTOFU_EMU_RING_BYTES=4096 "$bin" 0 small-ring
run -np 16 -x BINE_UTOFU_EMU_STRESS=3 "$bin" 0 stress
