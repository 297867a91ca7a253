/* MPI conformance of the generated collectives (issue 19, docs/conformance.md).
 *
 * Every function of the generated header's registry (BCC_<COLLECTIVE>_SCHEDULES) is called
 * as the MPI collective it replaces would be, with the arguments the MPI standard (MPI 3.1,
 * Chapter 5) allows, and its result compared byte for byte with the MPI library's own
 * collective on the same arguments and the same initial buffers (receive buffers pre-filled
 * with a sentinel, so a byte written outside the type map shows):
 *   - datatypes: vector, indexed, struct {int; double} (padding), resized (gaps), a
 *     contiguous derived type, MPI_DOUBLE_INT / MPI_2INT with MPI_MINLOC / MPI_MAXLOC;
 *   - different send and receive types of equal signature, and different types on root and
 *     non-root (gather, scatter); MPI_IN_PLACE in every form MPI defines;
 *   - user operators, commutative and not (each checks it receives the user's datatype);
 *   - predefined operators on derived types of one predefined type: MPI applies them
 *     element-wise to the type map (Open MPI refuses these calls with MPI_ERR_OP), so the
 *     oracle packs the data with MPI_Pack, reduces the predefined elements with the
 *     library's collective and unpacks with MPI_Unpack;
 *   - count 0, NULL buffers with count 0, zero-size datatypes (no-ops);
 *   - argument errors: the error class of the library's collective where it checks the
 *     same argument (MPI_IN_PLACE misuse, aliasing, root, a predefined operator on a mixed
 *     struct), else the class the standard names (NULL buffer: MPI_ERR_BUFFER, count
 *     overflow: MPI_ERR_COUNT, block sizes that cannot match: MPI_ERR_TRUNCATE); every
 *     error explained by MPI_Error_string ("bine: ...") and no user buffer written.
 * Errors only the root can see are tested on MPI_COMM_SELF (on a larger communicator the
 * other ranks would enter the collective and wait).
 * Exit status 0 when every rank saw only matches. Usage: mpirun -np P conformance */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bine_lib.h"

static int rank, size, failures, cases, refusals;
static const char* cur = "";
static int bad_datatype; /* a user operator was called with another datatype than the call's */

#define FAIL(...)                                           \
  do {                                                      \
    fprintf(stderr, "p=%d rank %d: %s: ", size, rank, cur); \
    fprintf(stderr, __VA_ARGS__);                           \
    fputc('\n', stderr);                                    \
    ++failures;                                             \
  } while (0)

/* The datatypes. */
static MPI_Datatype t_vec, t_idx, t_struct, t_res, t_int3, t_pair, t_zero;

typedef struct {
  MPI_Datatype type;
  const char* name;
} Type;

/* A struct {int; double} element: the layout of t_struct (extent 16). */
typedef struct {
  int i;
  double d;
} IntDouble;

static void op_struct_sum(void* in, void* inout, int* len, MPI_Datatype* dt) {
  if (*dt != t_struct) bad_datatype = 1;
  IntDouble* a = (IntDouble*)in;
  IntDouble* b = (IntDouble*)inout;
  for (int k = 0; k < *len; ++k) {
    b[k].i += a[k].i;
    b[k].d += a[k].d;
  }
}
/* Composition of affine maps x -> a x + b over uint32 (t_pair: a at byte 0, b at byte 8 of
 * a 16-byte element): associative, not commutative; inout = in o inout. */
static void op_affine(void* in, void* inout, int* len, MPI_Datatype* dt) {
  if (*dt != t_pair) bad_datatype = 1;
  for (int k = 0; k < *len; ++k) {
    const uint32_t* f = (const uint32_t*)((const char*)in + 16 * k);
    uint32_t* g = (uint32_t*)((char*)inout + 16 * k);
    const uint32_t a = f[0] * g[0], b = f[0] * g[2] + f[2];
    g[0] = a;
    g[2] = b;
  }
}
static MPI_Op op_sum_struct, op_aff;

/* Buffers: sized generously, pre-filled with patterns. */
#define BUF_BYTES (1 << 16)
static unsigned char* bufs[6];
enum { SEND, GOT, WANT, SEND_COPY, TMP1, TMP2 };

static MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  return ext;
}
static int size_of(MPI_Datatype t) {
  int s;
  MPI_Type_size(t, &s);
  return s;
}
/* Fills `bytes` with data of rank `r`: ints (small, so sums and products stay exact), and
 * struct elements with an int and a double of small integer value. */
static void fill(unsigned char* b, size_t bytes, int r, MPI_Datatype t, int salt) {
  if (t == t_struct || t == MPI_DOUBLE_INT) {
    for (size_t k = 0; k + 16 <= bytes; k += 16) {
      double d = (double)((r * 7 + (int)(k / 16) * 3 + salt) % 11);
      int i = (r * 5 + (int)(k / 16) + salt) % 13;
      if (t == t_struct) {
        memcpy(b + k, &i, 4);
        memset(b + k + 4, 0x5A, 4);
        memcpy(b + k + 8, &d, 8);
      } else {
        memcpy(b + k, &d, 8);
        memcpy(b + k + 8, &i, 4);
        memset(b + k + 12, 0x5A, 4);
      }
    }
    return;
  }
  for (size_t k = 0; k + 4 <= bytes; k += 4) {
    const int v = (r * 31 + (int)(k / 4) * 7 + salt) % 97 + 1;
    memcpy(b + k, &v, 4);
  }
}

/* ---- the registry ---- */
typedef int (*AllreduceFn)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*ReduceFn)(const void*, void*, size_t, MPI_Datatype, MPI_Op, int, MPI_Comm);
typedef int (*BcastFn)(void*, size_t, MPI_Datatype, int, MPI_Comm);
typedef int (*AllBlocksFn)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, MPI_Comm);
typedef int (*RootBlocksFn)(const void*, size_t, MPI_Datatype, void*, size_t, MPI_Datatype, int, MPI_Comm);
typedef int (*RsbFn)(const void*, void*, size_t, MPI_Datatype, MPI_Op, MPI_Comm);
typedef struct {
  const char* name;
  void (*fn)(void);
  int (*applicable)(int);
  int order_preserving;
} Entry;
#define ENTRY(f, order, same) {#f, (void (*)(void))f, f##_applicable, order},
static const Entry kAllreduce[] = {BCC_ALLREDUCE_SCHEDULES(ENTRY)};
static const Entry kReduce[] = {BCC_REDUCE_SCHEDULES(ENTRY)};
static const Entry kBcast[] = {BCC_BCAST_SCHEDULES(ENTRY)};
static const Entry kAllgather[] = {BCC_ALLGATHER_SCHEDULES(ENTRY)};
static const Entry kGather[] = {BCC_GATHER_SCHEDULES(ENTRY)};
static const Entry kScatter[] = {BCC_SCATTER_SCHEDULES(ENTRY)};
static const Entry kRsb[] = {BCC_REDUCE_SCATTER_SCHEDULES(ENTRY)};
static const Entry kAlltoall[] = {BCC_ALLTOALL_SCHEDULES(ENTRY)};
static const Entry kScan[] = {BCC_SCAN_SCHEDULES(ENTRY)};
static const Entry kExscan[] = {BCC_EXSCAN_SCHEDULES(ENTRY)};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Agreement of all ranks on a flag (1 when every rank has it). */
static int all(int flag) {
  int out = 0;
  MPI_Allreduce(&flag, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return out;
}

static int error_class(int rc) {
  int c = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
  return c;
}
/* An argument error: class `want`, a "bine: " explanation from MPI_Error_string. */
static void expect_error(const char* what, int rc, int want) {
  ++cases;
  if (error_class(rc) != want) {
    FAIL("%s: error class %d (rc %d), expected %d", what, error_class(rc), rc, want);
    return;
  }
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  if (strncmp(text, "bine: ", 6) != 0) FAIL("%s: MPI_Error_string gives '%s', not our explanation", what, text);
  if (bcc_last_error()[0] == '\0') FAIL("%s: no bcc_last_error() text", what);
}

/* ---- reductions ---- */
enum { ALLREDUCE, REDUCE, RSB, SCAN, EXSCAN };
static int call_red(int coll, const Entry* e, const void* s, void* r, size_t n, MPI_Datatype t, MPI_Op op, int root,
                    MPI_Comm comm) {
  switch (coll) {
    case ALLREDUCE:
    case SCAN:
    case EXSCAN: return ((AllreduceFn)e->fn)(s, r, n, t, op, comm);
    case REDUCE: return ((ReduceFn)e->fn)(s, r, n, t, op, root, comm);
    default: return ((RsbFn)e->fn)(s, r, n, t, op, comm);
  }
}
static int lib_red(int coll, const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
  switch (coll) {
    case ALLREDUCE: return MPI_Allreduce(s, r, n, t, op, comm);
    case REDUCE: return MPI_Reduce(s, r, n, t, op, root, comm);
    case SCAN: return MPI_Scan(s, r, n, t, op, comm);
    case EXSCAN: return MPI_Exscan(s, r, n, t, op, comm);
    default: return MPI_Reduce_scatter_block(s, r, n, t, op, comm);
  }
}
/* The expected result of a predefined `op` on derived type t of `base` elements: the
 * library's collective on the type map's elements (packed), unpacked into `want`. */
static void base_oracle(int coll, const void* src, void* want, int n, MPI_Datatype t, MPI_Datatype base, MPI_Op op,
                        int root) {
  const int nsend = coll == RSB ? n * size : n;
  const int k = size_of(t) / size_of(base);
  int pos = 0;
  MPI_Pack(src, nsend, t, bufs[TMP1], BUF_BYTES, &pos, MPI_COMM_WORLD);
  lib_red(coll, bufs[TMP1], bufs[TMP2], n * k, base, op, root, MPI_COMM_WORLD);
  if (coll == REDUCE && rank != root) return;
  pos = 0;
  MPI_Unpack(bufs[TMP2], BUF_BYTES, &pos, want, n, t, MPI_COMM_WORLD);
}

/* One reduction case on every schedule of `coll`: datatype t (base: its predefined
 * element type when op is predefined and t derived, else MPI_DATATYPE_NULL: the library's
 * collective is the oracle), count n (per block for RSB), in place or not. */
static void red_case(int coll, const Entry* list, size_t nlist, MPI_Datatype t, MPI_Datatype base, MPI_Op op, int n,
                     int in_place, int root, const char* tname) {
  const int commutative_op = op != op_aff;
  const size_t nsend = (size_t)(coll == RSB ? n * size : n);
  const size_t bytes = nsend * (size_t)extent_of(t) + 64;
  for (size_t i = 0; i < nlist; ++i) {
    const Entry* e = &list[i];
    cur = e->name;
    if (e->applicable(size) != 1) continue;
    ++cases;
    fill(bufs[SEND], bytes, rank, t, n + root);
    memcpy(bufs[SEND_COPY], bufs[SEND], bytes);
    /* Off the root of reduce and on rank 0 of exscan the receive buffer is undefined. */
    const int significant = (coll != REDUCE || rank == root) && (coll != EXSCAN || rank != 0);
    unsigned char* got = bufs[GOT];
    unsigned char* want = bufs[WANT];
    const int ip = in_place && (coll != REDUCE || rank == root); /* MPI_IN_PLACE only at the root of reduce */
    if (ip) {
      memcpy(got, bufs[SEND], bytes);
      memcpy(want, bufs[SEND], bytes);
    } else {
      memset(got, 0xA5, bytes);
      memset(want, 0xA5, bytes);
    }
    bad_datatype = 0;
    const void* sb = ip ? MPI_IN_PLACE : bufs[SEND];
    const int rc = call_red(coll, e, sb, got, (size_t)n, t, op, root, MPI_COMM_WORLD);
    if (!all(rc == MPI_SUCCESS)) {
      if (!commutative_op && !e->order_preserving && all(error_class(rc) == MPI_ERR_OP)) {
        ++refusals;
        continue;
      }
      FAIL("%s count %d%s root %d: rc %d (%s)", tname, n, ip ? " in place" : "", root, rc, bcc_last_error());
      continue;
    }
    if (bad_datatype) FAIL("%s: the user operator was called with another datatype", tname);
    if (base != MPI_DATATYPE_NULL)
      base_oracle(coll, ip ? (const void*)want : bufs[SEND], want, n, t, base, op, root);
    else
      lib_red(coll, ip ? MPI_IN_PLACE : bufs[SEND], want, n, t, op, root, MPI_COMM_WORLD);
    if (significant && memcmp(got, want, bytes) != 0)
      FAIL("%s count %d%s root %d: result differs from the MPI library's", tname, n, ip ? " in place" : "", root);
    if (!ip && memcmp(bufs[SEND], bufs[SEND_COPY], bytes) != 0) FAIL("%s: the send buffer was written", tname);
  }
}

static void reductions(void) {
  const int counts[] = {0, 1, 5};
  const int roots[] = {0, size - 1, size / 2};
  for (int c = 0; c < 5; ++c) {
    const Entry* list = c == ALLREDUCE ? kAllreduce : c == REDUCE ? kReduce : c == SCAN ? kScan : c == EXSCAN ? kExscan : kRsb;
    const size_t nlist = c == ALLREDUCE ? COUNT(kAllreduce)
                         : c == REDUCE  ? COUNT(kReduce)
                         : c == SCAN    ? COUNT(kScan)
                         : c == EXSCAN  ? COUNT(kExscan)
                                        : COUNT(kRsb);
    for (int k = 0; k < 3; ++k)
      for (int ip = 0; ip < 2; ++ip)
        for (int ri = 0; ri < (c == REDUCE ? 3 : 1); ++ri) {
          const int n = counts[k], root = roots[ri];
          red_case(c, list, nlist, t_vec, MPI_INT, MPI_SUM, n, ip, root, "vector(3,2,4,int) SUM");
          red_case(c, list, nlist, t_idx, MPI_INT, MPI_MAX, n, ip, root, "indexed int MAX");
          red_case(c, list, nlist, t_res, MPI_INT, MPI_SUM, n, ip, root, "resized int (extent 12) SUM");
          red_case(c, list, nlist, t_int3, MPI_INT, MPI_BXOR, n, ip, root, "contiguous(3,int) BXOR");
          red_case(c, list, nlist, MPI_DOUBLE_INT, MPI_DATATYPE_NULL, MPI_MINLOC, n, ip, root, "DOUBLE_INT MINLOC");
          red_case(c, list, nlist, MPI_2INT, MPI_DATATYPE_NULL, MPI_MAXLOC, n, ip, root, "2INT MAXLOC");
          red_case(c, list, nlist, t_struct, MPI_DATATYPE_NULL, op_sum_struct, n, ip, root, "struct user op");
          red_case(c, list, nlist, t_pair, MPI_DATATYPE_NULL, op_aff, n, ip, root, "affine user op (non-commutative)");
        }
  }
}

/* ---- bcast ---- */
static void bcasts(void) {
  const Type types[] = {{t_vec, "vector"},
                        {t_idx, "indexed"},
                        {t_struct, "struct"},
                        {t_res, "resized"},
                        {t_int3, "contiguous(3,int)"},
                        {MPI_DOUBLE_INT, "DOUBLE_INT"},
                        {t_zero, "zero-size"}};
  const int counts[] = {0, 1, 5};
  const int roots[] = {0, size - 1, size / 2};
  for (size_t i = 0; i < COUNT(kBcast); ++i) {
    const Entry* e = &kBcast[i];
    cur = e->name;
    if (e->applicable(size) != 1) continue;
    for (size_t ti = 0; ti < COUNT(types); ++ti)
      for (int k = 0; k < 3; ++k)
        for (int ri = 0; ri < 3; ++ri) {
          const MPI_Datatype t = types[ti].type;
          const int n = t == t_zero ? 10 : counts[k], root = roots[ri];
          const size_t bytes = (size_t)n * (size_t)extent_of(t) + 64;
          ++cases;
          if (rank == root) {
            fill(bufs[GOT], bytes, rank, t, n);
          } else {
            memset(bufs[GOT], 0xA5, bytes);
          }
          memcpy(bufs[WANT], bufs[GOT], bytes);
          const int rc = ((BcastFn)e->fn)(bufs[GOT], (size_t)n, t, root, MPI_COMM_WORLD);
          if (!all(rc == MPI_SUCCESS)) {
            FAIL("%s count %d root %d: rc %d (%s)", types[ti].name, n, root, rc, bcc_last_error());
            continue;
          }
          MPI_Bcast(bufs[WANT], n, t, root, MPI_COMM_WORLD);
          if (memcmp(bufs[GOT], bufs[WANT], bytes) != 0)
            FAIL("%s count %d root %d: result differs from MPI_Bcast", types[ti].name, n, root);
        }
  }
}

/* ---- gather, scatter, allgather, alltoall ---- */
/* A send / receive type pair of equal signature: scount x stype == rcount x rtype. With
 * `mixed`, odd ranks use (alt, acount) in place of the non-root side's (stype, scount) for
 * gather, (rtype, rcount) for scatter. */
typedef struct {
  MPI_Datatype stype;
  int scount;
  MPI_Datatype rtype;
  int rcount;
  MPI_Datatype alt;
  int acount;
  const char* name;
} Pair;

enum { GATHER, SCATTER, ALLGATHER, ALLTOALL };

/* MPI_Alltoall as the standard defines it (MPI 3.1 Sec. 5.8): block i of the send buffer
 * goes to rank i with MPI_Send(sendbuf + i sendcount extent(sendtype), sendcount, sendtype)
 * and block i of the receive buffer comes from rank i with the matching MPI_Recv; with
 * MPI_IN_PLACE the data sent is taken from the receive buffer first. The oracle for
 * alltoall: Open MPI 4.1.4's MPI_Alltoall itself delivers wrong data at p = 16 when send and
 * receive types differ (coll/tuned algorithm 3, modified Bruck; algorithms 1, 2, 4 agree
 * with this definition). */
static void alltoall_by_definition(const void* sb, int sc, MPI_Datatype st, void* rb, int rcn, MPI_Datatype rt,
                                   size_t rbytes) {
  if (sb == MPI_IN_PLACE) {
    memcpy(bufs[TMP1], rb, rbytes);
    sb = bufs[TMP1], sc = rcn, st = rt;
  }
  MPI_Request rq[2 * 64];
  int n = 0;
  for (int i = 0; i < size; ++i) {
    MPI_Irecv((char*)rb + (MPI_Aint)i * rcn * extent_of(rt), rcn, rt, i, 99, MPI_COMM_WORLD, &rq[n++]);
    MPI_Isend((const char*)sb + (MPI_Aint)i * sc * extent_of(st), sc, st, i, 99, MPI_COMM_WORLD, &rq[n++]);
  }
  MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
}

static void block_case(int coll, const Entry* e, const Pair* pr, int scale, int in_place, int root) {
  const int odd = rank % 2 == 1 && pr->alt != MPI_DATATYPE_NULL;
  MPI_Datatype st = pr->stype, rt = pr->rtype;
  int sc = pr->scount * scale, rcn = pr->rcount * scale;
  if (odd && coll == GATHER && rank != root) st = pr->alt, sc = pr->acount * scale;
  if (odd && coll == SCATTER && rank != root) rt = pr->alt, rcn = pr->acount * scale;
  const int p = size;
  /* Blocks on the p-block side: the receive buffer (gather, allgather, alltoall) or the
   * send buffer (scatter, alltoall). */
  const size_t sbytes = (size_t)(coll == SCATTER || coll == ALLTOALL ? p : 1) * (size_t)sc * (size_t)extent_of(st) + 64;
  const size_t rbytes = (size_t)(coll == SCATTER ? 1 : p) * (size_t)rcn * (size_t)extent_of(rt) + 64;
  const int is_root = coll == ALLGATHER || coll == ALLTOALL || rank == root;
  const int ip = in_place && (coll == ALLGATHER || coll == ALLTOALL || rank == root);
  ++cases;
  fill(bufs[SEND], sbytes, rank, st, sc + root);
  memcpy(bufs[SEND_COPY], bufs[SEND], sbytes);
  if (ip && coll != SCATTER) {
    fill(bufs[GOT], rbytes, rank, rt, 3 + root);
  } else {
    memset(bufs[GOT], 0xA5, rbytes);
  }
  memcpy(bufs[WANT], bufs[GOT], rbytes);
  const void* sb = bufs[SEND];
  void* rb = bufs[GOT];
  void* wb = bufs[WANT];
  if (ip && coll != SCATTER) sb = MPI_IN_PLACE;
  if (ip && coll == SCATTER) rb = wb = MPI_IN_PLACE;
  int rc;
  switch (coll) {
    case GATHER: rc = ((RootBlocksFn)e->fn)(sb, (size_t)sc, st, rb, (size_t)rcn, rt, root, MPI_COMM_WORLD); break;
    case SCATTER: rc = ((RootBlocksFn)e->fn)(sb, (size_t)sc, st, rb, (size_t)rcn, rt, root, MPI_COMM_WORLD); break;
    default: rc = ((AllBlocksFn)e->fn)(sb, (size_t)sc, st, rb, (size_t)rcn, rt, MPI_COMM_WORLD); break;
  }
  if (!all(rc == MPI_SUCCESS)) {
    FAIL("%s x%d%s root %d: rc %d (%s)", pr->name, scale, ip ? " in place" : "", root, rc, bcc_last_error());
    return;
  }
  switch (coll) {
    case GATHER: MPI_Gather(sb, sc, st, wb, rcn, rt, root, MPI_COMM_WORLD); break;
    case SCATTER: MPI_Scatter(sb, sc, st, wb, rcn, rt, root, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(sb, sc, st, wb, rcn, rt, MPI_COMM_WORLD); break;
    default: alltoall_by_definition(sb, sc, st, wb, rcn, rt, rbytes); break;
  }
  const int check_recv = coll == GATHER ? is_root : !(ip && coll == SCATTER);
  if (check_recv && memcmp(bufs[GOT], bufs[WANT], rbytes) != 0)
    FAIL("%s x%d%s root %d: result differs from the MPI library's", pr->name, scale, ip ? " in place" : "", root);
  if (memcmp(bufs[SEND], bufs[SEND_COPY], sbytes) != 0) FAIL("%s: the send buffer was written", pr->name);
}

static void blocks(void) {
  /* vector(3,2,4,int) = 6 ints; indexed = 4 ints; struct = int + double. */
  const Pair pairs[] = {
      {t_vec, 1, MPI_INT, 6, MPI_DATATYPE_NULL, 0, "vector -> 6 int"},
      {MPI_INT, 4, t_idx, 1, MPI_DATATYPE_NULL, 0, "4 int -> indexed"},
      {t_res, 3, t_int3, 1, MPI_DATATYPE_NULL, 0, "3 resized int -> contiguous(3,int)"},
      {t_struct, 2, t_struct, 2, MPI_DATATYPE_NULL, 0, "struct -> struct"},
      {MPI_INT, 6, t_res, 6, t_vec, 1, "root and non-root types differ"},
      {t_zero, 4, t_zero, 7, MPI_DATATYPE_NULL, 0, "zero-size types"},
  };
  const int roots[] = {0, size - 1, size / 2};
  for (int coll = 0; coll < 4; ++coll) {
    const Entry* list = coll == GATHER      ? kGather
                        : coll == SCATTER   ? kScatter
                        : coll == ALLGATHER ? kAllgather
                                            : kAlltoall;
    const size_t nlist = coll == GATHER      ? COUNT(kGather)
                         : coll == SCATTER   ? COUNT(kScatter)
                         : coll == ALLGATHER ? COUNT(kAllgather)
                                             : COUNT(kAlltoall);
    for (size_t i = 0; i < nlist; ++i) {
      const Entry* e = &list[i];
      cur = e->name;
      if (e->applicable(size) != 1) continue;
      for (size_t pi = 0; pi < COUNT(pairs); ++pi) {
        const Pair* pr = &pairs[pi];
        /* Root and non-root types differ: gather (non-root send type) and scatter (non-root
         * receive type) only; the root side is (stype, scount) / (rtype, rcount). */
        if (pr->alt != MPI_DATATYPE_NULL && (coll == ALLGATHER || coll == ALLTOALL)) continue;
        Pair q = *pr;
        if (pr->alt != MPI_DATATYPE_NULL && coll == SCATTER) { /* root sends 6 ints a block */
          q.stype = MPI_INT, q.scount = 6, q.rtype = t_res, q.rcount = 6;
        }
        for (int scale = 0; scale <= 2; ++scale)
          for (int ip = 0; ip < 2; ++ip)
            for (int ri = 0; ri < (coll == GATHER || coll == SCATTER ? 3 : 1); ++ri)
              block_case(coll, e, &q, scale, ip, roots[ri]);
      }
    }
  }
}

/* ---- argument errors ---- */
static void errors(void) {
  int a[64], b[64];
  const Entry* e;
  char what[128];
  for (size_t i = 0; i < COUNT(kAllreduce); ++i) {
    e = &kAllreduce[i];
    cur = e->name;
    AllreduceFn f = (AllreduceFn)e->fn;
    fill((unsigned char*)a, sizeof a, rank, MPI_INT, 1);
    memset(b, 0xA5, sizeof b);
    int lib;
    lib = MPI_Allreduce(a, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    expect_error("allreduce: MPI_IN_PLACE as recvbuf", f(a, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                 error_class(lib));
    lib = MPI_Allreduce(b, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    expect_error("allreduce: sendbuf == recvbuf", f(b, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), error_class(lib));
    /* Overlapping, not equal: Open MPI does not check it; MPI forbids it (Sec. 2.3). */
    expect_error("allreduce: overlapping buffers", f(b, b + 2, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_error("allreduce: NULL recvbuf", f(a, NULL, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_error("allreduce: NULL sendbuf", f(NULL, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_error("allreduce: count SIZE_MAX", f(a, b, SIZE_MAX, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    expect_error("allreduce: count SIZE_MAX / 2", f(a, b, SIZE_MAX / 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                 MPI_ERR_COUNT);
    expect_error("allreduce: count SIZE_MAX / 8 of a 12-byte extent",
                 f(a, b, SIZE_MAX / 8, t_res, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    lib = MPI_Allreduce(a, b, 1, t_struct, MPI_SUM, MPI_COMM_WORLD);
    expect_error("allreduce: MPI_SUM on struct {int; double}", f(a, b, 1, t_struct, MPI_SUM, MPI_COMM_WORLD),
                 error_class(lib));
    for (int k = 0; k < 64; ++k)
      if ((unsigned)b[k] != 0xA5A5A5A5u) {
        FAIL("allreduce: an erroneous call wrote recvbuf");
        break;
      }
    ++cases;
    if (f(NULL, NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) FAIL("allreduce: NULL buffers, count 0");
  }
  for (size_t i = 0; i < COUNT(kBcast); ++i) {
    e = &kBcast[i];
    cur = e->name;
    BcastFn f = (BcastFn)e->fn;
    memset(b, 0xA5, sizeof b);
    expect_error("bcast: root p", f(b, 4, MPI_INT, size, MPI_COMM_WORLD),
                 error_class(MPI_Bcast(b, 4, MPI_INT, size, MPI_COMM_WORLD)));
    expect_error("bcast: root -1", f(b, 4, MPI_INT, -1, MPI_COMM_WORLD),
                 error_class(MPI_Bcast(b, 4, MPI_INT, -1, MPI_COMM_WORLD)));
    expect_error("bcast: MPI_IN_PLACE", f(MPI_IN_PLACE, 4, MPI_INT, 0, MPI_COMM_WORLD),
                 error_class(MPI_Bcast(MPI_IN_PLACE, 4, MPI_INT, 0, MPI_COMM_WORLD)));
    expect_error("bcast: NULL buffer", f(NULL, 4, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_error("bcast: count SIZE_MAX", f(b, SIZE_MAX, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    ++cases;
    if (f(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) FAIL("bcast: NULL buffer, count 0");
    ++cases;
    if (f(NULL, 10, t_zero, 0, MPI_COMM_WORLD) != MPI_SUCCESS) FAIL("bcast: NULL buffer, zero-size type");
  }
  for (size_t i = 0; i < COUNT(kReduce); ++i) {
    e = &kReduce[i];
    cur = e->name;
    ReduceFn f = (ReduceFn)e->fn;
    fill((unsigned char*)a, sizeof a, rank, MPI_INT, 1);
    memset(b, 0xA5, sizeof b);
    expect_error("reduce: root p", f(a, b, 4, MPI_INT, MPI_SUM, size, MPI_COMM_WORLD),
                 error_class(MPI_Reduce(a, b, 4, MPI_INT, MPI_SUM, size, MPI_COMM_WORLD)));
    expect_error("reduce: NULL sendbuf", f(NULL, b, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    /* Only the root sees these: on MPI_COMM_SELF. */
    expect_error("reduce: MPI_IN_PLACE as the root's recvbuf",
                 f(a, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF),
                 error_class(MPI_Reduce(a, MPI_IN_PLACE, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF)));
    expect_error("reduce: sendbuf == recvbuf at the root", f(b, b, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF),
                 error_class(MPI_Reduce(b, b, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF)));
    expect_error("reduce: NULL recvbuf at the root", f(a, NULL, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF), MPI_ERR_BUFFER);
    for (int k = 0; k < 64; ++k)
      if ((unsigned)b[k] != 0xA5A5A5A5u) {
        FAIL("reduce: an erroneous call wrote recvbuf");
        break;
      }
  }
  for (size_t i = 0; i < COUNT(kRsb); ++i) {
    e = &kRsb[i];
    cur = e->name;
    RsbFn f = (RsbFn)e->fn;
    expect_error("reduce_scatter: MPI_IN_PLACE as recvbuf", f(a, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                 error_class(MPI_Reduce_scatter_block(a, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)));
    expect_error("reduce_scatter: NULL recvbuf", f(a, NULL, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    expect_error("reduce_scatter: count SIZE_MAX / 2", f(a, b, SIZE_MAX / 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                 MPI_ERR_COUNT);
  }
  for (int coll = ALLGATHER; coll <= ALLTOALL; ++coll) {
    const Entry* list = coll == ALLGATHER ? kAllgather : kAlltoall;
    const size_t nlist = coll == ALLGATHER ? COUNT(kAllgather) : COUNT(kAlltoall);
    const char* cn = coll == ALLGATHER ? "allgather" : "alltoall";
    for (size_t i = 0; i < nlist; ++i) {
      e = &list[i];
      cur = e->name;
      AllBlocksFn f = (AllBlocksFn)e->fn;
      memset(b, 0xA5, sizeof b);
      const int lib = coll == ALLGATHER ? MPI_Allgather(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD)
                                        : MPI_Alltoall(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD);
      snprintf(what, sizeof what, "%s: MPI_IN_PLACE as recvbuf", cn);
      expect_error(what, f(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD), error_class(lib));
      snprintf(what, sizeof what, "%s: 1 int sent, 2 ints received per block", cn);
      expect_error(what, f(a, 1, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
      snprintf(what, sizeof what, "%s: NULL recvbuf", cn);
      expect_error(what, f(a, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
      snprintf(what, sizeof what, "%s: sendbuf == recvbuf", cn);
      expect_error(what, f(b, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
      snprintf(what, sizeof what, "%s: recvcount SIZE_MAX / 2", cn);
      expect_error(what, f(a, 1, MPI_INT, b, SIZE_MAX / 2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
      for (int k = 0; k < 64; ++k)
        if ((unsigned)b[k] != 0xA5A5A5A5u) {
          FAIL("%s: an erroneous call wrote recvbuf", cn);
          break;
        }
    }
  }
  for (int coll = GATHER; coll <= SCATTER; ++coll) {
    const Entry* list = coll == GATHER ? kGather : kScatter;
    const size_t nlist = coll == GATHER ? COUNT(kGather) : COUNT(kScatter);
    for (size_t i = 0; i < nlist; ++i) {
      e = &list[i];
      cur = e->name;
      RootBlocksFn f = (RootBlocksFn)e->fn;
      memset(b, 0xA5, sizeof b);
      if (coll == GATHER) {
        expect_error("gather: root p", f(a, 1, MPI_INT, b, 1, MPI_INT, size, MPI_COMM_WORLD),
                     error_class(MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, size, MPI_COMM_WORLD)));
        expect_error("gather: MPI_IN_PLACE as the root's recvbuf",
                     f(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_SELF),
                     error_class(MPI_Gather(a, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_SELF)));
        expect_error("gather: NULL recvbuf at the root", f(a, 1, MPI_INT, NULL, 1, MPI_INT, 0, MPI_COMM_SELF),
                     MPI_ERR_BUFFER);
        expect_error("gather: NULL sendbuf", f(NULL, 1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
      } else {
        expect_error("scatter: root -1", f(a, 1, MPI_INT, b, 1, MPI_INT, -1, MPI_COMM_WORLD),
                     error_class(MPI_Scatter(a, 1, MPI_INT, b, 1, MPI_INT, -1, MPI_COMM_WORLD)));
        expect_error("scatter: MPI_IN_PLACE as the root's sendbuf",
                     f(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_SELF),
                     error_class(MPI_Scatter(MPI_IN_PLACE, 1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_SELF)));
        expect_error("scatter: NULL sendbuf at the root", f(NULL, 1, MPI_INT, b, 1, MPI_INT, 0, MPI_COMM_SELF),
                     MPI_ERR_BUFFER);
        expect_error("scatter: NULL recvbuf", f(a, 1, MPI_INT, NULL, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
      }
      for (int k = 0; k < 64; ++k)
        if ((unsigned)b[k] != 0xA5A5A5A5u) {
          FAIL("gather/scatter: an erroneous call wrote a buffer");
          break;
        }
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const int idx_len[3] = {1, 2, 1}, idx_disp[3] = {0, 3, 7};
  const int sblen[2] = {1, 1};
  const MPI_Aint sdisp[2] = {0, 8};
  const MPI_Datatype stypes[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Datatype tmp;
  MPI_Type_vector(3, 2, 4, MPI_INT, &t_vec);
  MPI_Type_indexed(3, idx_len, idx_disp, MPI_INT, &t_idx);
  MPI_Type_create_struct(2, sblen, sdisp, stypes, &tmp);
  MPI_Type_create_resized(tmp, 0, 16, &t_struct);
  MPI_Type_free(&tmp);
  MPI_Type_create_resized(MPI_INT, 0, 12, &t_res);
  MPI_Type_contiguous(3, MPI_INT, &t_int3);
  MPI_Type_vector(2, 1, 2, MPI_UNSIGNED, &tmp);
  MPI_Type_create_resized(tmp, 0, 16, &t_pair);
  MPI_Type_free(&tmp);
  MPI_Type_contiguous(0, MPI_INT, &t_zero);
  MPI_Datatype* all_types[] = {&t_vec, &t_idx, &t_struct, &t_res, &t_int3, &t_pair, &t_zero};
  for (size_t i = 0; i < COUNT(all_types); ++i) MPI_Type_commit(all_types[i]);
  MPI_Op_create(op_struct_sum, 1, &op_sum_struct);
  MPI_Op_create(op_affine, 0, &op_aff);
  for (int i = 0; i < 6; ++i) bufs[i] = malloc(BUF_BYTES);

  reductions();
  bcasts();
  blocks();
  errors();

  int total_failures = 0, total_cases = 0;
  MPI_Reduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cases, &total_cases, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("conformance p=%d: %d rank-cases, %d refusals (non-commutative op, order not proved), %d failures\n", size,
           total_cases, refusals, total_failures);
  for (int i = 0; i < 6; ++i) free(bufs[i]);
  MPI_Op_free(&op_sum_struct);
  MPI_Op_free(&op_aff);
  for (size_t i = 0; i < COUNT(all_types); ++i) MPI_Type_free(all_types[i]);
  MPI_Finalize();
  return total_failures > 0 && rank == 0 ? 1 : 0;
}
