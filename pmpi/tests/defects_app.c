/* An unmodified MPI program (plain MPI, knows nothing of bine) that checks six behaviours
 * MPI guarantees and a drop-in must keep (issues 45 and 48, docs/pmpi.md "What MPI guarantees"):
 *
 *  freed   an operation in flight completes normally after MPI_Op_free / MPI_Type_free of
 *          its operator and datatypes (MPI 4.0 Sec. 6.9.5, 5.1.9): MPI_Iallreduce,
 *          MPI_Ireduce, MPI_Iscan, MPI_Iexscan, MPI_Ireduce_scatter_block with a user
 *          operator freed before MPI_Wait, MPI_Igather / MPI_Ibcast with a derived type freed.
 *  exscan  MPI_Exscan / MPI_Iexscan leave rank 0's recvbuf untouched (not significant), also
 *          with MPI_IN_PLACE, and accept NULL there.
 *  typemap root and non-root ranks pass different type maps of one signature (a strided
 *          vector at one side, contiguous ints at the other): gather, scatter, bcast,
 *          allgather and alltoall (odd ranks strided).
 *  bits    a float and a double MPI_Allreduce (MPI_SUM) ends with the same bits on every rank
 *          (MPI 4.0 Sec. 6.9.1, advice to implementors), for sizes on both sides of the
 *          default table's 4 KiB bound; data chosen so that another bracketing rounds
 *          otherwise.
 *  order   a non-commutative user operator (2x2 matrix product mod 2^32) through MPI_Reduce at
 *          every root, MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Scan and MPI_Exscan, against
 *          the product in rank order computed here (brute force).
 *  reuse   handles freed and made again (the drop-in keeps each call's decision by its
 *          arguments' values, docs/pmpi.md "Interception overhead"): a communicator of half
 *          the ranks freed and one of all ranks in reverse order made (Open MPI usually gives
 *          it the same handle; rank 0 prints how often), each used by repeated
 *          MPI_Allreduce / MPI_Bcast / MPI_Gather calls; a commutative user operator on a
 *          derived type freed and a non-commutative one on a new type of the same size
 *          made, through MPI_Allreduce in rank order.
 *
 * Every result is checked against a value computed locally from the inputs (each rank's input
 * is a function of its rank); a failure prints "FAIL ..." and the exit status is 1.
 * `--bits-may-differ`: print whether the float bits agreed ("bits: same" / "bits: differ")
 * instead of failing (the test's own sensitivity check forces a schedule that is not proved
 * same-bracketing).
 * usage: mpirun -np P defects_app [--bits-may-differ] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_p, g_fail;

static void fail(const char* what, int detail) {
  printf("FAIL rank %d: %s (%d)\n", g_rank, what, detail);
  g_fail = 1;
}

/* ---- user operators ---- */
/* Integer sum (commutative), on MPI_INT or on a contiguous derived type of ints. */
static void int_sum(void* in, void* inout, int* len, MPI_Datatype* t) {
  int size = 0;
  MPI_Type_size(*t, &size);
  const int n = *len * (size / (int)sizeof(int));
  for (int i = 0; i < n; ++i) ((int*)inout)[i] += ((int*)in)[i];
}
/* 2x2 matrices of uint32 (4 per element, row major): inout = in x inout (non-commutative). */
static void mat_mul(void* in, void* inout, int* len, MPI_Datatype* t) {
  (void)t;
  for (int e = 0; e < *len; ++e) {
    const uint32_t* a = (const uint32_t*)in + 4 * e;
    uint32_t* b = (uint32_t*)inout + 4 * e;
    const uint32_t c0 = a[0] * b[0] + a[1] * b[2], c1 = a[0] * b[1] + a[1] * b[3];
    const uint32_t c2 = a[2] * b[0] + a[3] * b[2], c3 = a[2] * b[1] + a[3] * b[3];
    b[0] = c0, b[1] = c1, b[2] = c2, b[3] = c3;
  }
}
static void mat_of(int rank, int e, uint32_t* m) {
  m[0] = 1u + (uint32_t)rank, m[1] = 2u * (uint32_t)e + 1u, m[2] = (uint32_t)(rank * rank) + 3u, m[3] = 7u + (uint32_t)e;
}
/* The rank-order product x_lo x ... x x_{hi-1} of element e. */
static void mat_prefix(int lo, int hi, int e, uint32_t* out) {
  out[0] = 1, out[1] = 0, out[2] = 0, out[3] = 1;
  for (int r = lo; r < hi; ++r) {
    uint32_t m[4];
    mat_of(r, e, m);
    int one = 1;
    uint32_t tmp[4];
    memcpy(tmp, m, sizeof tmp);
    /* out = out x m: mat_mul computes inout = in x inout, so in = out, inout = m. */
    mat_mul(out, tmp, &one, NULL);
    memcpy(out, tmp, sizeof tmp);
  }
}

/* A gather's result in blocks of 2n ints per rank r, element i at 2i (r * scale + i) and the
 * gap at 2i + 1 untouched (`gap`); `what` names the failure (with the rank). */
static void expect_strided(const int* buf, int n, int scale, int gap, const char* what) {
  for (int r = 0; r < g_p; ++r)
    for (int i = 0; i < n; ++i)
      if (buf[2 * n * r + 2 * i] != r * scale + i || buf[2 * n * r + 2 * i + 1] != gap) {
        fail(what, r);
        return;
      }
}

/* ---- freed: handles freed while the operation is in flight ---- */
static void check_freed(void) {
  enum { N = 1000 };
  int* in = malloc(sizeof(int) * N * (size_t)g_p);
  int* out = malloc(sizeof(int) * N * (size_t)g_p);
  for (int i = 0; i < N * g_p; ++i) in[i] = g_rank * 1000 + i;
  const long sum_r = (long)g_p * (g_p - 1) / 2;
  for (int which = 0; which < 5; ++which) {
    MPI_Op op;
    MPI_Op_create(int_sum, 1, &op);
    MPI_Request rq;
    for (int i = 0; i < N * g_p; ++i) out[i] = -1;
    const int root = g_p - 1;
    switch (which) {
      case 0: MPI_Iallreduce(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &rq); break;
      case 1: MPI_Ireduce(in, out, N, MPI_INT, op, root, MPI_COMM_WORLD, &rq); break;
      case 2: MPI_Iscan(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &rq); break;
      case 3: MPI_Iexscan(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &rq); break;
      default: MPI_Ireduce_scatter_block(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &rq); break;
    }
    MPI_Op_free(&op);
    if (op != MPI_OP_NULL) fail("MPI_Op_free did not set MPI_OP_NULL", which);
    MPI_Op other; /* a new operator may take the freed one's memory */
    MPI_Op_create(mat_mul, 0, &other);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Op_free(&other);
    for (int i = 0; i < N; ++i) {
      long want;
      switch (which) {
        case 0: want = sum_r * 1000 + (long)g_p * i; break;
        case 1: want = g_rank == root ? sum_r * 1000 + (long)g_p * i : -1; break;
        case 2: want = (long)g_rank * (g_rank + 1) / 2 * 1000 + (long)(g_rank + 1) * i; break;
        case 3: want = g_rank == 0 ? -1 : (long)g_rank * (g_rank - 1) / 2 * 1000 + (long)g_rank * i; break;
        default: want = sum_r * 1000 + (long)g_p * (g_rank * N + i); break;
      }
      if (which == 3 && g_rank == 0) break; /* not significant */
      if (out[i] != (int)want) {
        fail("freed operator: wrong result (collective 0..4)", which);
        break;
      }
    }
  }
  /* A derived type freed in flight: a user operator on pairs, a strided gather, a bcast. */
  MPI_Datatype pair, strided;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  MPI_Op op;
  MPI_Op_create(int_sum, 1, &op);
  MPI_Request rq[3];
  MPI_Iallreduce(in, out, N / 2, pair, op, MPI_COMM_WORLD, &rq[0]);
  MPI_Type_free(&pair);
  MPI_Op_free(&op);
  MPI_Waitall(1, rq, MPI_STATUSES_IGNORE);
  for (int i = 0; i < N; ++i)
    if (out[i] != (int)(sum_r * 1000 + (long)g_p * i)) {
      fail("freed pair type: wrong allreduce result", i);
      break;
    }
  /* Gather N ints per rank; the root receives them with a stride of 2 ints. */
  int* strided_buf = malloc(sizeof(int) * 2 * N * (size_t)g_p);
  for (int i = 0; i < 2 * N * g_p; ++i) strided_buf[i] = -5;
  MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
  MPI_Datatype strided_block;
  MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * N * sizeof(int)), &strided_block);
  MPI_Type_free(&strided);
  MPI_Type_commit(&strided_block);
  MPI_Igather(in, N, MPI_INT, strided_buf, 1, strided_block, 0, MPI_COMM_WORLD, &rq[1]);
  MPI_Type_free(&strided_block);
  MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
  if (g_rank == 0) expect_strided(strided_buf, N, 1000, -5, "freed strided type: wrong gather result at rank");
  free(strided_buf);
  free(in);
  free(out);
}

/* ---- exscan: rank 0's recvbuf untouched, NULL accepted ---- */
static void check_exscan(void) {
  enum { N = 300 };
  int in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = g_rank + i;
  for (int form = 0; form < 5; ++form) {
    for (int i = 0; i < N; ++i) out[i] = -77;
    void* rb = out;
    if (g_rank == 0 && (form == 3 || form == 4)) rb = NULL; /* legal: not significant */
    MPI_Request rq;
    if (form == 2) { /* in place: the input is recvbuf */
      for (int i = 0; i < N; ++i) out[i] = g_rank + i;
      MPI_Exscan(MPI_IN_PLACE, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (form == 1 || form == 4) {
      MPI_Iexscan(in, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else {
      MPI_Exscan(in, rb, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    for (int i = 0; i < N; ++i) {
      const int want = g_rank == 0 ? (form == 2 ? i : -77) : g_rank * (g_rank - 1) / 2 + g_rank * i;
      if (g_rank == 0 && (form == 3 || form == 4)) break;
      if (out[i] != want) {
        fail(g_rank == 0 ? "exscan wrote rank 0's recvbuf (form 0..4)" : "exscan: wrong result (form 0..4)", form);
        break;
      }
    }
  }
}

/* ---- typemap: different type maps of one signature ---- */
static void check_typemaps(void) {
  enum { N = 257 };
  const int root = g_p / 2;
  MPI_Datatype vec, vec_block; /* N ints with a stride of 2 ints, extent 2N ints */
  MPI_Type_vector(N, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)(2 * N * sizeof(int)), &vec_block);
  MPI_Type_commit(&vec);
  MPI_Type_commit(&vec_block);
  int* wide = malloc(sizeof(int) * 2 * N * (size_t)g_p);
  int* flat = malloc(sizeof(int) * N * (size_t)g_p);
  int mine[N];
  for (int i = 0; i < N; ++i) mine[i] = g_rank * 10000 + i;
  /* gather: the root receives strided blocks, the others send contiguous ints. */
  for (int i = 0; i < 2 * N * g_p; ++i) wide[i] = -3;
  if (g_rank == root) {
    MPI_Datatype mine_strided; /* the root itself sends strided too: another type map */
    int src[2 * N];
    for (int i = 0; i < N; ++i) src[2 * i] = mine[i], src[2 * i + 1] = -9;
    MPI_Type_vector(N, 1, 2, MPI_INT, &mine_strided);
    MPI_Type_commit(&mine_strided);
    MPI_Gather(src, 1, mine_strided, wide, 1, vec_block, root, MPI_COMM_WORLD);
    MPI_Type_free(&mine_strided);
    expect_strided(wide, N, 10000, -3, "gather with a strided root type: wrong block of rank");
  } else {
    MPI_Gather(mine, N, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD);
  }
  /* scatter: the root sends strided blocks, the others receive contiguous ints. */
  if (g_rank == root)
    for (int r = 0; r < g_p; ++r)
      for (int i = 0; i < N; ++i) wide[2 * N * r + 2 * i] = r * 10000 + i + 5, wide[2 * N * r + 2 * i + 1] = -4;
  int got[N];
  for (int i = 0; i < N; ++i) got[i] = -1;
  MPI_Scatter(wide, 1, vec_block, got, N, MPI_INT, root, MPI_COMM_WORLD);
  for (int i = 0; i < N; ++i)
    if (got[i] != g_rank * 10000 + i + 5) {
      fail("scatter with a strided root type: wrong element", i);
      break;
    }
  /* bcast: the root passes one strided vector, the others N contiguous ints. */
  int bwide[2 * N];
  for (int i = 0; i < 2 * N; ++i) bwide[i] = g_rank == root ? (i % 2 ? -6 : 3 * i) : -2;
  if (g_rank == root) {
    MPI_Bcast(bwide, 1, vec, root, MPI_COMM_WORLD);
  } else {
    MPI_Bcast(bwide, N, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i)
      if (bwide[i] != 6 * i) {
        fail("bcast with a strided root type: wrong element", i);
        break;
      }
  }
  /* allgather and alltoall: odd ranks receive strided, even ranks contiguous. */
  MPI_Datatype rtype = g_rank % 2 ? vec_block : MPI_INT;
  const int rcount = g_rank % 2 ? 1 : N;
  int* rbuf = g_rank % 2 ? wide : flat;
  for (int i = 0; i < 2 * N * g_p; ++i) wide[i] = -8;
  MPI_Allgather(mine, N, MPI_INT, rbuf, rcount, rtype, MPI_COMM_WORLD);
  for (int r = 0; r < g_p; ++r)
    for (int i = 0; i < N; ++i) {
      const int v = g_rank % 2 ? wide[2 * N * r + 2 * i] : flat[N * r + i];
      if (v != r * 10000 + i) {
        fail("allgather with per-rank type maps: wrong block of rank", r);
        r = g_p;
        break;
      }
    }
  int* a2a_in = malloc(sizeof(int) * N * (size_t)g_p);
  for (int r = 0; r < g_p; ++r)
    for (int i = 0; i < N; ++i) a2a_in[N * r + i] = g_rank * 100000 + r * 1000 + i;
  for (int i = 0; i < 2 * N * g_p; ++i) wide[i] = -8;
  MPI_Alltoall(a2a_in, N, MPI_INT, rbuf, rcount, rtype, MPI_COMM_WORLD);
  for (int r = 0; r < g_p; ++r)
    for (int i = 0; i < N; ++i) {
      const int v = g_rank % 2 ? wide[2 * N * r + 2 * i] : flat[N * r + i];
      if (v != r * 100000 + g_rank * 1000 + i) {
        fail("alltoall with per-rank type maps: wrong block from rank", r);
        r = g_p;
        break;
      }
    }
  free(a2a_in);
  MPI_Type_free(&vec);
  MPI_Type_free(&vec_block);
  free(wide);
  free(flat);
}

/* ---- bits: the same floating-point result on every rank ---- */
/* Values of very different magnitudes and signs: the rounded sum depends on the bracketing. */
static double value(int rank, int i) {
  uint32_t h = (uint32_t)rank * 2654435761u ^ (uint32_t)i * 40503u;
  h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
  const double mag[] = {1e16, 1e8, 1.0, 1e-3, 3e15, 7.0};
  return ((h & 1) ? -1.0 : 1.0) * mag[(h >> 1) % 6] * (1.0 + 0.001 * i) + 0.37 * rank + 1.0 / (i + 1);
}
static int check_bits(int may_differ) {
  const int counts[] = {1, 3, 64, 511, 1024, 1025, 5000};
  int differ = 0;
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; ++k) {
    const int n = counts[k];
    float* fin = malloc(sizeof(float) * (size_t)n);
    float* fout = malloc(sizeof(float) * (size_t)n);
    double* din = malloc(sizeof(double) * (size_t)n);
    double* dout = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; ++i) din[i] = value(g_rank, i), fin[i] = (float)(din[i] * 1e-8);
    MPI_Allreduce(fin, fout, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    /* Rank 0's bits to everyone (a bcast of bytes is exact whatever serves it). */
    float* f0 = malloc(sizeof(float) * (size_t)n);
    double* d0 = malloc(sizeof(double) * (size_t)n);
    memcpy(f0, fout, sizeof(float) * (size_t)n);
    memcpy(d0, dout, sizeof(double) * (size_t)n);
    MPI_Bcast(f0, (int)sizeof(float) * n, MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Bcast(d0, (int)sizeof(double) * n, MPI_BYTE, 0, MPI_COMM_WORLD);
    int mine = memcmp(f0, fout, sizeof(float) * (size_t)n) != 0 || memcmp(d0, dout, sizeof(double) * (size_t)n) != 0;
    int any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (any) {
      differ = 1;
      if (!may_differ && mine) fail("float/double MPI_Allreduce: other bits than rank 0 at count", n);
    }
    free(fin), free(fout), free(din), free(dout), free(f0), free(d0);
  }
  return differ;
}

/* ---- order: a non-commutative operator ---- */
/* The n matrices at `got` must be the rank-order products x_lo x ... x x_{hi-1} of elements
 * first .. first + n - 1; `what` names the collective in the failure. */
static void expect_products(const uint32_t* got, int n, int lo, int hi, int first, const char* what) {
  uint32_t want[4];
  for (int e = 0; e < n; ++e) {
    mat_prefix(lo, hi, first + e, want);
    if (memcmp(want, got + 4 * e, sizeof want) != 0) {
      fail(what, e);
      return;
    }
  }
}

static void check_order(void) {
  enum { E = 6 }; /* matrices per rank (per block for reduce_scatter_block) */
  MPI_Datatype mat;
  MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
  MPI_Type_commit(&mat);
  MPI_Op op;
  MPI_Op_create(mat_mul, 0, &op);
  uint32_t* in = malloc(sizeof(uint32_t) * 4 * E * (size_t)g_p);
  uint32_t* out = malloc(sizeof(uint32_t) * 4 * E * (size_t)g_p);
  for (int b = 0; b < g_p; ++b)
    for (int e = 0; e < E; ++e) mat_of(g_rank, b * E + e, in + 4 * (b * E + e));
  for (int root = 0; root < g_p; ++root) {
    memset(out, 0, sizeof(uint32_t) * 4 * E);
    MPI_Reduce(in, out, E, mat, op, root, MPI_COMM_WORLD);
    if (g_rank == root) expect_products(out, E, 0, g_p, 0, "non-commutative MPI_Reduce: not the rank-order product");
  }
  MPI_Allreduce(in, out, E, mat, op, MPI_COMM_WORLD);
  expect_products(out, E, 0, g_p, 0, "non-commutative MPI_Allreduce: not the rank-order product");
  MPI_Reduce_scatter_block(in, out, E, mat, op, MPI_COMM_WORLD);
  expect_products(out, E, 0, g_p, g_rank * E, "non-commutative MPI_Reduce_scatter_block: not the rank-order product");
  MPI_Scan(in, out, E, mat, op, MPI_COMM_WORLD);
  expect_products(out, E, 0, g_rank + 1, 0, "non-commutative MPI_Scan: not the rank-order prefix");
  MPI_Exscan(in, out, E, mat, op, MPI_COMM_WORLD);
  if (g_rank > 0) expect_products(out, E, 0, g_rank, 0, "non-commutative MPI_Exscan: not the rank-order prefix");
  MPI_Op_free(&op);
  MPI_Type_free(&mat);
  free(in);
  free(out);
}

static void check_reuse(void) {
  int reused = 0;
  for (int k = 0; k < 4; ++k) {
    MPI_Comm half, all;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
    long in = g_rank + 1, out = 0, want = 0;
    for (int r = g_rank % 2; r < g_p; r += 2) want += r + 1;
    for (int i = 0; i < 3; ++i) {
      out = 0;
      MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, half);
      if (out != want) fail("reuse: MPI_Allreduce on half the ranks", (int)out);
    }
    const MPI_Comm old = half;
    MPI_Comm_free(&half);
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_p - g_rank, &all); /* rank 0 of `all` is world rank p - 1 */
    reused += all == old;
    for (int i = 0; i < 3; ++i) {
      out = 0;
      MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, all);
      if (out != (long)g_p * (g_p + 1) / 2) fail("reuse: MPI_Allreduce after a communicator was freed", (int)out);
      long b = g_rank;
      MPI_Bcast(&b, 1, MPI_LONG, 0, all);
      if (b != g_p - 1) fail("reuse: MPI_Bcast after a communicator was freed", (int)b);
      long* g = malloc(sizeof(long) * (size_t)g_p);
      MPI_Gather(&in, 1, MPI_LONG, g, 1, MPI_LONG, 0, all);
      if (g_rank == g_p - 1)
        for (int r = 0; r < g_p; ++r)
          if (g[r] != g_p - r) fail("reuse: MPI_Gather after a communicator was freed", r);
      free(g);
    }
    MPI_Comm_free(&all);
  }
  if (g_rank == 0) printf("reuse: communicator handle reused %d of 4 times\n", reused);
  /* A commutative sum on a contiguous type of 4 ints, freed; then the non-commutative product on
   * a new type of the same size. */
  enum { E = 3 };
  uint32_t* in = malloc(sizeof(uint32_t) * 4 * E);
  uint32_t* out = malloc(sizeof(uint32_t) * 4 * E);
  for (int e = 0; e < E; ++e) mat_of(g_rank, e, in + 4 * e);
  for (int k = 0; k < 2; ++k) {
    MPI_Datatype quad, mat;
    MPI_Op sum, mul;
    MPI_Type_contiguous(4, MPI_INT, &quad);
    MPI_Type_commit(&quad);
    MPI_Op_create(int_sum, 1, &sum);
    for (int i = 0; i < 2; ++i) MPI_Allreduce(in, out, E, quad, sum, MPI_COMM_WORLD);
    MPI_Op_free(&sum);
    MPI_Type_free(&quad);
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat);
    MPI_Type_commit(&mat);
    MPI_Op_create(mat_mul, 0, &mul);
    for (int i = 0; i < 2; ++i) {
      memset(out, 0, sizeof(uint32_t) * 4 * E);
      MPI_Allreduce(in, out, E, mat, mul, MPI_COMM_WORLD);
      expect_products(out, E, 0, g_p, 0, "reuse: non-commutative MPI_Allreduce after a commutative operator was freed");
    }
    MPI_Op_free(&mul);
    MPI_Type_free(&mat);
  }
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_p);
  const int may_differ = argc > 1 && strcmp(argv[1], "--bits-may-differ") == 0;
  check_freed();
  check_exscan();
  check_typemaps();
  const int differ = check_bits(may_differ);
  check_order();
  check_reuse();
  int any = 0;
  MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (may_differ) printf("bits: %s\n", differ ? "differ" : "same");
    printf("defects_app p=%d: %s\n", g_p, any ? "FAIL" : "pass");
  }
  MPI_Finalize();
  return any ? 1 : 0;
}
