#!/usr/bin/env bash
# Per-call overhead of the generated collectives against the same algorithm in Open MPI
# (issue item 5, persistent plans): runs build/bench/bench_plan_overhead once per
# (schedule, Open MPI algorithm) pair and process count, forcing Open MPI's algorithm with
# coll_tuned_use_dynamic_rules and coll_tuned_<collective>_algorithm, and prints one table:
# bine us, MPI us, ratio, PASS/MISS against the targets, heap allocations per call.
# Algorithm numbers: Open MPI 4.1's coll tuned, `ompi_info --param coll tuned --level 9`.
# On a machine with fewer cores than ranks (oversubscribed) the times are software overhead,
# not network behaviour.
# usage: bench/plan_overhead.sh [BINARY] [PROCESS_COUNTS]   (default: build/bench/bench_plan_overhead "2 4")
#   REPS=N          repetitions up to 4 KiB (N/4 at 64 KiB, N/10 at 1 MiB; default 2000)
#   MPIRUN_ARGS=..  extra mpirun arguments
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bench/bench_plan_overhead}
procs=${2:-"2 4"}
reps=${REPS:-2000}
if [ ! -x "$bin" ]; then
  echo "plan_overhead.sh: $bin not found; build it: cmake --build build -j2 --target bench_plan_overhead" >&2
  exit 2
fi
args=(--oversubscribe --mca coll_tuned_use_dynamic_rules 1)
[ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
# shellcheck disable=SC2206
args+=(${MPIRUN_ARGS:-})

# collective, generated schedule, Open MPI algorithm number, its name (ompi_info)
pairs=(
  "allreduce recursive_doubling_allreduce 3 recursive_doubling"
  "allreduce rabenseifner_allreduce 6 rabenseifner"
  "allreduce ring_allreduce 4 ring"
  "bcast binomial_bcast_doubling 6 binomial"
  "bcast binomial_bcast_halving 6 binomial"
  "allgather recursive_doubling_allgather 3 recursive_doubling"
  "allgather ring_allgather 4 ring"
  "alltoall pairwise_alltoall 2 pairwise"
)

echo "# bench/plan_overhead.sh on $(nproc) cores, $(mpirun --version 2>/dev/null | head -1)"
oversub=""
for p in $procs; do [ "$p" -gt "$(nproc)" ] && oversub="$oversub $p"; done
[ -n "$oversub" ] && echo "# p =$oversub oversubscribes this machine: the times are software overhead, not network behaviour"
header=--header
status=0
for pair in "${pairs[@]}"; do
  read -r coll sched alg name <<<"$pair"
  for p in $procs; do
    mpirun "${args[@]}" -np "$p" --mca "coll_tuned_${coll}_algorithm" "$alg" \
      "$bin" "$coll" "$sched" --mpi-alg "$name ($alg)" --reps "$reps" $header || status=1
    header=
  done
done
exit $status
