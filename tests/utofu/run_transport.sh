#!/usr/bin/env bash
# The uTofu transport below the round pipeline (tests/utofu/transport_test.cpp): ports,
# step tags, per-pair order across ports; p = 7 (six peers: all six TNIs), 3, 2, and
# p = 7 and 5 in the emulation's stress mode (puts on different VCQs land out of their
# posting order).
set -euo pipefail
bin=$1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
run() { timeout 120 mpirun "$@"; }
run -np 7 "$bin"
run -np 3 "$bin"
run -np 2 "$bin" refuse
run -np 7 -x BINE_UTOFU_EMU_STRESS=5 "$bin"
run -np 5 -x BINE_UTOFU_EMU_STRESS=11 -x BINE_UTOFU_EMU_TOQ_DEPTH=4 "$bin"
