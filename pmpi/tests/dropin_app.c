/* An unmodified MPI program for the PMPI drop-in test (pmpi/tests/run_dropin.sh): a
 * conjugate-gradient-like loop on a 1-D Laplacian (integer-valued doubles, so every sum is
 * exact and the output does not depend on the reduction order), with MPI_Allreduce and
 * MPI_Bcast every iteration, plus one call of each other collective the library intercepts
 * (MPI_Scan, MPI_Exscan and MPI_Barrier included)
 * and a few calls it must leave to MPI (non-contiguous datatype, MPI_IN_PLACE forms), the
 * irregular MPI_Gatherv / MPI_Scatterv and every nonblocking collective it intercepts.
 * Rank 0 prints "checksum NAME VALUE" lines; it knows nothing of bine. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long long sum_ll(const long long* v, int n) {
  long long s = 0;
  for (int i = 0; i < n; ++i) s = s * 31 + v[i];
  return s;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  /* CG-like loop: local slice of n elements, dot products by allreduce (8 B and 4 KiB and
   * 64 KiB vectors of doubles), a parameter broadcast from a rotating root. */
  enum { n = 64, big = 8192 };
  double x[n], r[n];
  double* wide = malloc(sizeof(double) * big);
  double* wide_out = malloc(sizeof(double) * big);
  for (int i = 0; i < n; ++i) x[i] = (double)((rank * n + i) % 7), r[i] = (double)((rank + i) % 5);
  double checksum = 0;
  for (int it = 0; it < 20; ++it) {
    double local = 0, global = 0;
    for (int i = 0; i < n; ++i) local += x[i] * r[i];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    long long params[4] = {it, (long long)global % 11, 0, 0};
    MPI_Bcast(params, 4, MPI_LONG_LONG, it % p, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) x[i] = (double)(((long long)x[i] + params[1] + i) % 13);
    double vec[512];
    for (int i = 0; i < 512; ++i) vec[i] = (double)((rank + i + it) % 9);
    MPI_Allreduce(MPI_IN_PLACE, vec, 512, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < 512; ++i) checksum += vec[i] * (i % 3 + 1);
    checksum += global;
  }
  for (int i = 0; i < big; ++i) wide[i] = (double)((rank * 3 + i) % 17);
  MPI_Allreduce(wide, wide_out, big, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < big; ++i) checksum += wide_out[i];
  if (rank == 0) printf("checksum cg %.1f\n", checksum);

  /* One call of each other intercepted collective (integers). */
  enum { k = 3 };
  int* all = malloc(sizeof(int) * k * p);
  int* all2 = malloc(sizeof(int) * k * p);
  int mine[k], red[k];
  long long cs = 0;
  for (int i = 0; i < k; ++i) mine[i] = rank * 10 + i;
  MPI_Reduce(mine, red, k, MPI_INT, MPI_SUM, p - 1, MPI_COMM_WORLD);
  if (rank == p - 1) MPI_Send(red, k, MPI_INT, 0, 5, MPI_COMM_WORLD);
  if (rank == 0) { MPI_Recv(red, k, MPI_INT, p - 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); printf("checksum reduce %d %d %d\n", red[0], red[1], red[2]); }
  MPI_Allgather(mine, k, MPI_INT, all, k, MPI_INT, MPI_COMM_WORLD);
  for (int i = 0; i < k * p; ++i) cs = cs * 7 + all[i];
  MPI_Gather(mine, k, MPI_INT, all2, k, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < k * p; ++i) cs = cs * 5 + all2[i];
  for (int i = 0; i < k * p; ++i) all[i] = i * 3 + 1;
  MPI_Scatter(all, k, MPI_INT, mine, k, MPI_INT, 0, MPI_COMM_WORLD);
  long long sc[k];
  for (int i = 0; i < k; ++i) sc[i] = mine[i] + rank;
  long long scall[64 * k];
  MPI_Gather(sc, k, MPI_LONG_LONG, scall, k, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) cs = cs * 3 + sum_ll(scall, k * p);
  for (int i = 0; i < k * p; ++i) all[i] = rank + i;
  MPI_Reduce_scatter_block(all, red, k, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Gather(red, k, MPI_INT, all2, k, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < k * p; ++i) cs = cs * 11 + all2[i];
  /* MPI_Reduce_scatter: equal counts (served as reduce_scatter_block), then counts 1, 2,
   * 1, 2, ... (an irregular form); rank 0 gathers each rank's first result element. */
  int* rcounts = malloc(sizeof(int) * p);
  for (int i = 0; i < p; ++i) rcounts[i] = k;
  for (int i = 0; i < k * p; ++i) all[i] = rank * 3 + i;
  MPI_Reduce_scatter(all, red, rcounts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Gather(red, k, MPI_INT, all2, k, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < k * p; ++i) cs = cs * 19 + all2[i];
  for (int i = 0; i < p; ++i) rcounts[i] = 1 + i % 2;
  MPI_Reduce_scatter(all, red, rcounts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Gather(red, 1, MPI_INT, all2, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < p; ++i) cs = cs * 23 + all2[i];
  /* MPI_Allgatherv: counts 1, 2, 0, 1, 2, 0, ... placed in reverse rank order with a gap of
   * one element (an irregular form of an allgather schedule). */
  int* disp = malloc(sizeof(int) * p);
  int at = 0;
  for (int i = p - 1; i >= 0; --i) rcounts[i] = (i + 1) % 3, disp[i] = at, at += (i + 1) % 3 + 1;
  for (int i = 0; i < at; ++i) all2[i] = -1;
  for (int i = 0; i < 2; ++i) red[i] = rank * 13 + i;
  MPI_Allgatherv(red, (rank + 1) % 3, MPI_INT, all2, rcounts, disp, MPI_INT, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < at; ++i) cs = cs * 29 + all2[i];
  free(disp);
  free(rcounts);
  for (int i = 0; i < k * p; ++i) all[i] = rank * 100 + i;
  MPI_Alltoall(all, k, MPI_INT, all2, k, MPI_INT, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, all2, k * p, MPI_INT, MPI_BXOR, MPI_COMM_WORLD);
  for (int i = 0; i < k * p; ++i) cs = cs * 13 + all2[i];
  /* Prefix reductions and a barrier: the prefixes gathered to rank 0 (exscan's rank 0
   * result is undefined and left out). */
  int pre[k], ex[k];
  for (int i = 0; i < k; ++i) mine[i] = rank * 7 + i + 1;
  MPI_Scan(mine, pre, k, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Exscan(mine, ex, k, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < k; ++i) ex[i] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Gather(pre, k, MPI_INT, all, k, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Gather(ex, k, MPI_INT, all2, k, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) for (int i = 0; i < k * p; ++i) cs = cs * 17 + all[i] * 3 + all2[i];
  if (rank == 0) printf("checksum blocks %lld\n", cs);

  /* MPI_Gatherv / MPI_Scatterv to and from the last rank (counts 2, 0, 1, 2, 0, 1, ...,
   * displacements in reverse rank order with a gap), then every nonblocking collective the
   * library intercepts in flight at once, with a point-to-point ring exchange among them,
   * completed by MPI_Waitany, MPI_Test loops, MPI_Waitsome and MPI_Waitall in
   * rank-dependent orders. */
  {
    const int root = p - 1, q = 4;
    int *vc = malloc(sizeof(int) * p), *vd = malloc(sizeof(int) * p), vat = 0;
    for (int i = p - 1; i >= 0; --i) vc[i] = (i + 2) % 3, vd[i] = vat, vat += vc[i] + 1;
    int *gv = malloc(sizeof(int) * (vat + 1)), sv2[2], rv2[2] = {-1, -1};
    for (int i = 0; i <= vat; ++i) gv[i] = -1;
    for (int i = 0; i < 2; ++i) sv2[i] = rank * 31 + i;
    MPI_Gatherv(sv2, vc[rank], MPI_INT, gv, vc, vd, MPI_INT, root, MPI_COMM_WORLD);
    long long ns = 0;
    if (rank == root) for (int i = 0; i < vat; ++i) ns = ns * 37 + gv[i];
    MPI_Scatterv(gv, vc, vd, MPI_INT, rv2, vc[rank], MPI_INT, root, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, rv2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ns = ns * 41 + rv2[0] * 3 + rv2[1];
    /* The nonblocking calls: one buffer set each. */
    /* MPI_Alltoallv: rank i sends (i + j) % 3 ints to rank j, reversed displacements. */
    int *asc = malloc(sizeof(int) * p), *asd = malloc(sizeof(int) * p), *arc = malloc(sizeof(int) * p),
        *ard = malloc(sizeof(int) * p), sat = 0, rat = 0;
    for (int j = p - 1; j >= 0; --j) {
      asc[j] = (rank + j) % 3, asd[j] = sat, sat += asc[j];
      arc[j] = (j + rank) % 3, ard[j] = rat, rat += arc[j] + 1;
    }
    int *asnd = malloc(sizeof(int) * (sat + 1)), *arcv = malloc(sizeof(int) * (rat + 1)),
        *arcv2 = malloc(sizeof(int) * (rat + 1));
    for (int i = 0; i <= sat; ++i) asnd[i] = rank * 100 + i;
    for (int i = 0; i <= rat; ++i) arcv[i] = arcv2[i] = -1;
    MPI_Alltoallv(asnd, asc, asd, MPI_INT, arcv, arc, ard, MPI_INT, MPI_COMM_WORLD);
    MPI_Request arq;
    MPI_Ialltoallv(asnd, asc, asd, MPI_INT, arcv2, arc, ard, MPI_INT, MPI_COMM_WORLD, &arq);
    MPI_Wait(&arq, MPI_STATUS_IGNORE);
    long long apart = 0;
    for (int i = 0; i <= rat; ++i) apart = apart * 47 + arcv[i] * 3 + arcv2[i];
    MPI_Allreduce(MPI_IN_PLACE, &apart, 1, MPI_LONG_LONG, MPI_BXOR, MPI_COMM_WORLD);
    ns = ns * 53 + apart;
    free(asc); free(asd); free(arc); free(ard); free(asnd); free(arcv); free(arcv2);
    enum { nreq = 17 };
    MPI_Request rq[nreq];
    int *in = malloc(sizeof(int) * q * p), *o[nreq];
    for (int j = 0; j < nreq; ++j) {
      o[j] = malloc(sizeof(int) * (q * p + vat + 1));
      for (int i = 0; i < q * p + vat + 1; ++i) o[j][i] = -1;
    }
    for (int i = 0; i < q * p; ++i) in[i] = rank * 1000 + i * 7 % 23;
    int* eq = malloc(sizeof(int) * p);
    for (int i = 0; i < p; ++i) eq[i] = 1 + i % 2;
    for (int i = 0; i < q; ++i) o[1][i] = rank == 0 ? 500 + i : -1;
    MPI_Iallreduce(in, o[0], q, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Ibcast(o[1], q, MPI_INT, 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Ireduce(in, o[2], q, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD, &rq[2]);
    MPI_Iallgather(in, q, MPI_INT, o[3], q, MPI_INT, MPI_COMM_WORLD, &rq[3]);
    MPI_Igather(in, q, MPI_INT, o[4], q, MPI_INT, root, MPI_COMM_WORLD, &rq[4]);
    MPI_Iscatter(in, q, MPI_INT, o[5], q, MPI_INT, root, MPI_COMM_WORLD, &rq[5]);
    MPI_Ireduce_scatter_block(in, o[6], q, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[6]);
    MPI_Ialltoall(in, q, MPI_INT, o[7], q, MPI_INT, MPI_COMM_WORLD, &rq[7]);
    MPI_Iscan(in, o[8], q, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[8]);
    MPI_Iexscan(in, o[9], q, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[9]);
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[10]);
    MPI_Iallgatherv(in, vc[rank], MPI_INT, o[11], vc, vd, MPI_INT, MPI_COMM_WORLD, &rq[11]);
    MPI_Ireduce_scatter(in, o[12], eq, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[12]);
    MPI_Igatherv(in, vc[rank], MPI_INT, o[13], vc, vd, MPI_INT, root, MPI_COMM_WORLD, &rq[13]);
    MPI_Iscatterv(in, vc, vd, MPI_INT, o[14], vc[rank], MPI_INT, root, MPI_COMM_WORLD, &rq[14]);
    MPI_Irecv(o[15], q, MPI_INT, (rank + p - 1) % p, 9, MPI_COMM_WORLD, &rq[15]);
    MPI_Isend(in, q, MPI_INT, (rank + 1) % p, 9, MPI_COMM_WORLD, &rq[16]);
    /* Complete: the point-to-point receive first (every rank waits on a request that is
     * not a collective while the collectives are in flight), then by rank-dependent means. */
    MPI_Wait(&rq[15], MPI_STATUS_IGNORE);
    if (rank % 2) {
      for (int left = 1; left;) {
        int idx = -1;
        MPI_Waitany(nreq, rq, &idx, MPI_STATUS_IGNORE);
        left = idx != MPI_UNDEFINED;
      }
    } else {
      int flag = 0;
      while (!flag) MPI_Test(&rq[rank % nreq], &flag, MPI_STATUS_IGNORE);
      int outc = 0, idx[nreq];
      MPI_Waitsome(nreq, rq, &outc, idx, MPI_STATUSES_IGNORE);
      MPI_Waitall(nreq, rq, MPI_STATUSES_IGNORE);
    }
    if (rank == 0) for (int i = 0; i < q; ++i) o[9][i] = 0; /* exscan: undefined at rank 0 */
    const int len[nreq] = {q, q, rank == root ? q : 0, q * p, rank == root ? q * p : 0, q, q, q * p, q, q, 0,
                           vat, eq[rank], rank == root ? vat : 0, vc[rank], q, 0};
    long long part = 0;
    for (int j = 0; j < nreq; ++j)
      for (int i = 0; i < len[j]; ++i) part = part * 43 + o[j][i] + j;
    long long* parts = malloc(sizeof(long long) * p);
    MPI_Gather(&part, 1, MPI_LONG_LONG, parts, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("checksum nonblocking %lld %lld\n", ns, sum_ll(parts, p));
    for (int j = 0; j < nreq; ++j) free(o[j]);
    free(parts); free(eq); free(in); free(gv); free(vc); free(vd);
  }

  /* Left to MPI by the library: a non-contiguous datatype (every other int). */
  MPI_Datatype strided;
  MPI_Type_vector(4, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  int sv[8];
  for (int i = 0; i < 8; ++i) sv[i] = rank == 1 % p ? 100 + i : -1;
  MPI_Bcast(sv, 1, strided, 1 % p, MPI_COMM_WORLD);
  MPI_Type_free(&strided);
  long long svs = 0;
  for (int i = 0; i < 8; ++i) svs = svs * 17 + sv[i];
  MPI_Allreduce(MPI_IN_PLACE, &svs, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("checksum strided %lld\n", svs);

  free(all); free(all2); free(wide); free(wide_out);
  MPI_Finalize();
  return 0;
}
