/* A user's MPI program calling collectives generated at build time by bine_add_schedules():
 * its own rd_allreduce and the shipped bine_bcast_lat, each compared with the MPI library's
 * own collective on the same data, and the dispatchers of table.json (my_allreduce, my_bcast).
 * Exits non-zero on any difference. */
#include <mpi.h>
#include <stdio.h>

#include "consumer_bine.h"

#define N 13 /* not a multiple of the rank count */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, p = 1, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int in[N], got[N], want[N];
  for (int i = 0; i < N; ++i) in[i] = rank * 1000 + i * 7 + 1;
  int rc = my_rd_allreduce(in, got, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(in, want, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < N; ++i) bad |= rc != MPI_SUCCESS || got[i] != want[i];
  for (int root = 0; root < p; ++root) {
    for (int i = 0; i < N; ++i) got[i] = want[i] = rank == root ? root * 31 + i : -1;
    rc = my_bine_bcast_lat(got, N, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Bcast(want, N, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i) bad |= rc != MPI_SUCCESS || got[i] != want[i];
  }
  /* The dispatchers of table.json: rd_allreduce up to 64 bytes, MPI_Allreduce above;
   * bine_bcast_lat from p = 2 on. */
  for (int n = 1; n <= N; n += 12) {
    for (int i = 0; i < n; ++i) in[i] = rank * 100 + i;
    rc = my_allreduce(in, got, (size_t)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(in, want, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) bad |= rc != MPI_SUCCESS || got[i] != want[i];
  }
  for (int i = 0; i < N; ++i) got[i] = want[i] = rank == p - 1 ? i * 3 : -1;
  rc = my_bcast(got, N, MPI_INT, p - 1, MPI_COMM_WORLD);
  MPI_Bcast(want, N, MPI_INT, p - 1, MPI_COMM_WORLD);
  for (int i = 0; i < N; ++i) bad |= rc != MPI_SUCCESS || got[i] != want[i];
  if (rank == 0)
    printf("consumer: dispatch at p = %d: allreduce 4 B -> %s, 52 B -> %s, 80 B -> %s; bcast -> %s\n", p,
           my_allreduce_choice(p, 4, 1, 0), my_allreduce_choice(p, 52, 1, 0), my_allreduce_choice(p, 80, 1, 0),
           my_bcast_choice(p, N * sizeof(int), 1, 0));
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0) printf("consumer: p = %d, rd_allreduce and bine_bcast_lat vs MPI: %s\n", p, any ? "DIFFER" : "same");
  MPI_Finalize();
  return any;
}
