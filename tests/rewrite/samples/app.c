/* Sample C program for `bine-cc rewrite` (tests/rewrite/run.py): MPI collectives called in
 * several styles. Rank 0 prints every rank's results, so the output of the program before
 * and after the rewrite can be compared under mpirun. */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "helpers.h"

#define ALLREDUCE_SUM(buf, n) MPI_Allreduce(MPI_IN_PLACE, (buf), (n), MPI_LONG, MPI_SUM, MPI_COMM_WORLD)
#define CHECK(call)                                  \
  do {                                               \
    if ((call) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1); \
  } while (0)

typedef int (*bcast_fn)(void*, int, MPI_Datatype, int, MPI_Comm);

static int through_pointer(bcast_fn f, int* v) { return f(v, 1, MPI_INT, 0, MPI_COMM_WORLD); }

static void int_max(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i)
    if (((int*)in)[i] > ((int*)inout)[i]) ((int*)inout)[i] = ((int*)in)[i];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char line[1024];
  int len = 0;

  long a[8], sum[8];
  for (int i = 0; i < 8; ++i) a[i] = rank * 10 + i;
  /* A plain statement. */
  MPI_Allreduce(a, sum, 8, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  /* Split over lines, comments between the arguments, result used. */
  int rc = MPI_Allreduce(MPI_IN_PLACE, a /* in place */, 8,
                         MPI_LONG,  // element type
                         MPI_MAX, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return 1;
  /* In a condition, the name in parentheses. */
  double d = rank + 0.5, dsum = 0;
  if ((MPI_Allreduce)(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) return 1;
  len += snprintf(line + len, sizeof line - len, "rank %d: sum %ld %ld max %ld %ld dsum %.1f", rank, sum[0], sum[7],
                  a[0], a[7], dsum);

  /* Rooted collectives, root not 0. */
  int v = rank == 1 ? 42 : 0;
  MPI_Bcast(&v, 1, MPI_INT, 1, MPI_COMM_WORLD);
  int in = rank + 1, prod = 0;
  MPI_Reduce(&in, &prod, 1, MPI_INT, MPI_PROD, 2, MPI_COMM_WORLD);
  int all[64];
  MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
  len += snprintf(line + len, sizeof line - len, " bcast %d prod %d allgather %d..%d", v, prod, all[0],
                  all[size - 1]);

  /* Left alone: the call comes from a macro body, or sits inside a macro argument. */
  long m[2] = {rank, 1};
  ALLREDUCE_SUM(m, 2);
  int w = rank == 3 ? 5 : 0;
  CHECK(MPI_Bcast(&w, 1, MPI_INT, 3, MPI_COMM_WORLD));
  /* Left alone: MPI_Bcast passed as a function pointer, and the call through it. */
  int f = rank == 0 ? 7 : 0;
  through_pointer(MPI_Bcast, &f);
  /* Left alone: a user-defined operator, a derived datatype. */
  MPI_Op op;
  MPI_Op_create(int_max, 1, &op);
  int mx = 0;
  MPI_Allreduce(&rank, &mx, 1, MPI_INT, op, MPI_COMM_WORLD);
  MPI_Op_free(&op);
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  int pr[2] = {rank, rank};
  MPI_Bcast(pr, 1, pair, 0, MPI_COMM_WORLD);
  MPI_Type_free(&pair);
  /* Left alone: the call in helpers.h. */
  int h = rank == 2 ? 11 : 0;
  bcast_int(&h, 2);
  /* Left alone: no generated function chosen for alltoall. */
  int to[64], from[64];
  for (int i = 0; i < size; ++i) to[i] = rank * 100 + i;
  MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD);
  len += snprintf(line + len, sizeof line - len, " macro %ld %ld %d pointer %d op %d type %d header %d alltoall %d", m[0],
                  m[1], w, f, mx, pr[0], h, from[size - 1]);

  if (rank == 0) {
    printf("%s\n", line);
    for (int r = 1; r < size; ++r) {
      MPI_Recv(line, sizeof line, MPI_CHAR, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("%s\n", line);
    }
  } else {
    MPI_Send(line, (int)strlen(line) + 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
