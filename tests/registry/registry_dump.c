/* Prints, for every function of the generated header's registry (the BINE_<C>_SCHEDULES
 * X-macro lists), what its _applicable and _requires functions answer for p = 0..P_MAX:
 *   <function> TAB <collective> TAB <p> TAB <applicable> TAB <requires or (null)>
 * Compiled as C against the header's C interface; check_registry.py compares the lines with
 * `bine-cc check --json`. Needs no MPI_Init (no collective is called). */
#include <stdio.h>

#include "bine_lib.h"

#define P_MAX 64

static void dump(const char* name, const char* collective, int (*applicable)(int), const char* (*why)(int)) {
  for (int p = 0; p <= P_MAX; ++p) {
    const char* reason = why(p);
    printf("%s\t%s\t%d\t%d\t%s\n", name, collective, p, applicable(p), reason ? reason : "(null)");
  }
}

#define ROW(f, order, same) dump(#f, collective_name, f##_applicable, f##_requires);

int main(void) {
  const char* collective_name;
  collective_name = "allreduce";
  BCC_ALLREDUCE_SCHEDULES(ROW)
  collective_name = "bcast";
  BCC_BCAST_SCHEDULES(ROW)
  collective_name = "reduce";
  BCC_REDUCE_SCHEDULES(ROW)
  collective_name = "allgather";
  BCC_ALLGATHER_SCHEDULES(ROW)
  collective_name = "gather";
  BCC_GATHER_SCHEDULES(ROW)
  collective_name = "scatter";
  BCC_SCATTER_SCHEDULES(ROW)
  collective_name = "reduce_scatter";
  BCC_REDUCE_SCATTER_SCHEDULES(ROW)
  collective_name = "alltoall";
  BCC_ALLTOALL_SCHEDULES(ROW)
  return 0;
}
