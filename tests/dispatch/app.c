/* A small MPI program for `bine-cc rewrite --dispatch` (tests/dispatch/run.py): every
   collective the rewriter knows, one of them on a derived datatype with a non-commutative
   user operator. It prints checksums; the rewritten program must print the same. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void matmul(void* in, void* inout, int* len, MPI_Datatype* type) {
  const unsigned* a = (const unsigned*)in;
  unsigned* b = (unsigned*)inout;
  (void)type;
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    unsigned c[4];
    c[0] = a[0] * b[0] + a[1] * b[2];
    c[1] = a[0] * b[1] + a[1] * b[3];
    c[2] = a[2] * b[0] + a[3] * b[2];
    c[3] = a[2] * b[1] + a[3] * b[3];
    memcpy(b, c, sizeof c);
  }
}

static long sum(const int* v, int n) {
  long s = 0;
  for (int i = 0; i < n; ++i) s = s * 31 + v[i];
  return s;
}

int main(int argc, char** argv) {
  int rank, p;
  enum { N = 64 };
  int a[N], b[N * 8], c[N * 8];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  for (int i = 0; i < N; ++i) a[i] = rank * 1000 + i;
  for (int i = 0; i < N * 8; ++i) b[i] = rank * 7 + i;

  int r[N];
  MPI_Allreduce(a, r, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d allreduce %ld\n", rank, sum(r, N));
  MPI_Bcast(a, N, MPI_INT, p - 1, MPI_COMM_WORLD);
  printf("rank %d bcast %ld\n", rank, sum(a, N));
  MPI_Reduce(b, r, N, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("rank %d reduce %ld\n", rank, sum(r, N));
  MPI_Allgather(a, 8, MPI_INT, c, 8, MPI_INT, MPI_COMM_WORLD);
  printf("rank %d allgather %ld\n", rank, sum(c, 8 * p));
  MPI_Alltoall(b, 2, MPI_INT, c, 2, MPI_INT, MPI_COMM_WORLD);
  printf("rank %d alltoall %ld\n", rank, sum(c, 2 * p));
  MPI_Gather(a, 3, MPI_INT, c, 3, MPI_INT, 1 % p, MPI_COMM_WORLD);
  if (rank == 1 % p) printf("rank %d gather %ld\n", rank, sum(c, 3 * p));
  MPI_Scatter(b, 5, MPI_INT, r, 5, MPI_INT, 0, MPI_COMM_WORLD);
  printf("rank %d scatter %ld\n", rank, sum(r, 5));
  MPI_Reduce_scatter_block(b, r, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d reduce_scatter_block %ld\n", rank, sum(r, 4));

  /* a derived datatype and a non-commutative operator */
  MPI_Datatype mat;
  MPI_Op op;
  unsigned m[8], out[8];
  MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
  MPI_Type_commit(&mat);
  MPI_Op_create(matmul, 0, &op);
  for (int i = 0; i < 8; ++i) m[i] = (unsigned)(rank + i) % 5;
  MPI_Allreduce(m, out, 2, mat, op, MPI_COMM_WORLD);
  printf("rank %d allreduce matmul %u %u %u %u %u %u %u %u\n", rank, out[0], out[1], out[2], out[3], out[4], out[5],
         out[6], out[7]);
  MPI_Op_free(&op);
  MPI_Type_free(&mat);
  MPI_Finalize();
  return 0;
}
