# Shared set-up of the PMPI test scripts (sourced by run_dropin.sh, run_threads.sh,
# run_threads_tsan.sh): mpirun arguments (oversubscription; root allowed when running as
# root), a temporary directory removed on exit, and the failure bookkeeping: fail MSG
# records a failure in $status, run ARGS... is mpirun with a 120 s limit.
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
run() { timeout 120 mpirun "${mpirun_args[@]}" "$@"; }
