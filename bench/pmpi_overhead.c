/* Interception overhead of libbine_pmpi.so (docs/pmpi.md): in one run, MPI_Allreduce of
 * 8 B (one double, MPI_SUM) through the library (this program links libbine_pmpi.so ahead of
 * libmpi, as LD_PRELOAD would put it) against the generated function the library picks,
 * called directly (bcc_bine_allreduce_lat, forced with BINE_PMPI_ALLREDUCE so both sides
 * run the same schedule; BINE_PMPI_SAME_BRACKETING=0, since that schedule is not proved
 * same-bracketing and would otherwise not serve a double sum: docs/pmpi.md). Alternating batches of `batch` calls; per batch the mean per call;
 * rank 0 prints the median over batches of each side and the difference, in us.
 * usage: mpirun -np 2 build/bench/bench_pmpi_overhead [batches] [batch]
 * Instruction mode (bench/pmpi_instructions.sh): bench_pmpi_overhead lib|direct CALLS runs
 * CALLS calls of one side only, in measured_loop() (callgrind's --toggle-collect target). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bine_lib.h"

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* CALLS calls of one side (instruction mode). Not inlined: callgrind collects inside it. */
__attribute__((noinline)) void measured_loop(int through_lib, int calls, const double* in, double* out, MPI_Comm dup) {
  for (int i = 0; i < calls; ++i) {
    if (through_lib) MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else bcc_bine_allreduce_lat(in, out, 1, MPI_DOUBLE, MPI_SUM, dup);
  }
}

int main(int argc, char** argv) {
  setenv("BINE_PMPI_ALLREDUCE", "bcc_bine_allreduce_lat", 1);
  setenv("BINE_PMPI_SAME_BRACKETING", "0", 1);
  MPI_Init(&argc, &argv);
  const int batches = argc > 1 ? atoi(argv[1]) : 200, batch = argc > 2 ? atoi(argv[2]) : 100;
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  /* The library runs schedules on a private duplicate; the direct calls get one too. */
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  double in = rank + 1, out = 0;
  double* lib = malloc(sizeof(double) * batches);
  double* direct = malloc(sizeof(double) * batches);
  for (int w = 0; w < 50; ++w) {
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    bcc_bine_allreduce_lat(&in, &out, 1, MPI_DOUBLE, MPI_SUM, dup);
  }
  if (argc > 2 && (strcmp(argv[1], "lib") == 0 || strcmp(argv[1], "direct") == 0)) {
    measured_loop(strcmp(argv[1], "lib") == 0, atoi(argv[2]), &in, &out, dup);
    MPI_Comm_free(&dup);
    free(lib); free(direct);
    MPI_Finalize();
    return 0;
  }
  for (int b = 0; b < batches; ++b) {
    for (int side = 0; side < 2; ++side) {
      const int through_lib = (side + b) % 2 == 0;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < batch; ++i) {
        if (through_lib) MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else bcc_bine_allreduce_lat(&in, &out, 1, MPI_DOUBLE, MPI_SUM, dup);
      }
      const double t = (MPI_Wtime() - t0) / batch * 1e6;
      if (through_lib) lib[b] = t; else direct[b] = t;
    }
  }
  if (out != p * (p + 1) / 2.0) { fprintf(stderr, "wrong result %f\n", out); MPI_Abort(MPI_COMM_WORLD, 1); }
  qsort(lib, batches, sizeof(double), cmp);
  qsort(direct, batches, sizeof(double), cmp);
  if (rank == 0)
    printf("p = %d, 8 B allreduce (bcc_bine_allreduce_lat), %d batches of %d calls: through libbine_pmpi %.3f us, "
           "direct %.3f us, overhead %.3f us per call (medians)\n",
           p, batches, batch, lib[batches / 2], direct[batches / 2], lib[batches / 2] - direct[batches / 2]);
  MPI_Comm_free(&dup);
  free(lib); free(direct);
  MPI_Finalize();
  return 0;
}
