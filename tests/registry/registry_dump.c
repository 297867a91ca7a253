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
/* The rows of one collective's registry list. */
#define DUMP(name, LIST) \
  collective_name = name;  \
  LIST(ROW)

int main(void) {
  const char* collective_name;
  DUMP("allreduce", BCC_ALLREDUCE_SCHEDULES)
  DUMP("bcast", BCC_BCAST_SCHEDULES)
  DUMP("reduce", BCC_REDUCE_SCHEDULES)
  DUMP("allgather", BCC_ALLGATHER_SCHEDULES)
  DUMP("gather", BCC_GATHER_SCHEDULES)
  DUMP("scatter", BCC_SCATTER_SCHEDULES)
  DUMP("reduce_scatter", BCC_REDUCE_SCATTER_SCHEDULES)
  DUMP("alltoall", BCC_ALLTOALL_SCHEDULES)
  DUMP("scan", BCC_SCAN_SCHEDULES)
  DUMP("exscan", BCC_EXSCAN_SCHEDULES)
  DUMP("barrier", BCC_BARRIER_SCHEDULES)
  return 0;
}
